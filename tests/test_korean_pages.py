"""Every page in Korean: no English sentence left in its text (tokens, code, numbers and the user's own text aside)."""

from __future__ import annotations

import json
import re

import pytest
from streamlit.testing.v1 import AppTest

from .app_helpers import ROOT, open_app

PAGES = sorted(path.stem for path in (ROOT / "pages").glob("*.py") if not path.stem.startswith("_"))
# Words that make a run of English words a sentence rather than a term ("attention rollout").
STOPWORDS = set(
    "the a an is are was were be been of to in on at for with by from this that these those it its and or "
    "but not no you your we our can will do does did has have had which what when where how why if than "
    "then there here as into each every one only also may must should".split()
)
WORD = r"[A-Za-z][A-Za-z'’\-]*"
RUN = re.compile(rf"{WORD}(?:[ ,;:]+{WORD}){{2,}}")  # three or more English words in a row
STRIP = [
    re.compile(r"`[^`]*`"),  # code
    re.compile(r"https?://\S+"),  # addresses
    re.compile(r"<[^<>\s]{1,20}>"),  # special tokens such as <pad>
    re.compile(r"\([^()가-힣]*\)"),  # an English term in parentheses beside its Korean
    re.compile(r"\*\*[^*가-힣]*\*\*"),  # bold data such as the predicted label
]
TEXT_ELEMENTS = ("markdown", "caption", "title", "header", "subheader", "info", "warning", "error", "success")


def user_texts() -> list[str]:
    """Text that is the user's data, not the app's: the example sentences and the sentence box default."""
    from ui.text import DEFAULT_TEXT

    examples = json.loads((ROOT / "assets" / "examples.json").read_text(encoding="utf-8")).values()
    texts = [DEFAULT_TEXT, *(e["text"] if isinstance(e, dict) else e for e in examples)]
    return [t.lower() for t in texts]


def english_sentences(text: str, data: list[str]) -> list[str]:
    """Runs of three or more English words holding a function word, in ``text``, minus the user's data."""
    for pattern in STRIP:
        text = pattern.sub(" ", text)
    found = []
    for match in RUN.finditer(text):
        run = match.group(0)
        words = {w.lower().strip("'’-") for w in re.findall(WORD, run)}
        if not words & STOPWORDS:
            continue
        if any(run.lower() in sample for sample in data):
            continue
        found.append(run)
    return found


def visible_texts(at: AppTest) -> list[str]:
    """What the page shows as text: markdown, captions, titles, messages and widget labels."""
    out = []
    for kind in TEXT_ELEMENTS:
        out += [str(el.value) for el in at.get(kind)]
    for el in at.get("page_link"):
        out.append(el.proto.label)
    for node in _widgets(at):
        label = getattr(node, "label", None)
        if isinstance(label, str):
            out.append(label)
        out += list(getattr(node.proto, "captions", []))  # a radio's option captions
    return out


def _widgets(at: AppTest):
    kinds = ("button", "text_area", "text_input", "selectbox", "radio", "slider", "toggle", "checkbox")
    for kind in kinds:
        yield from at.get(kind)


def test_the_detector_finds_english_and_spares_terms_tokens_and_data():
    data = ["the movie was great"]
    assert english_sentences("Type a sentence in the box above.", data) == ["Type a sentence in the box above"]
    assert english_sentences("위치 인코딩 (positional encoding of the input)을 봅니다", data) == []
    assert english_sentences("어텐션 롤아웃 (attention rollout)과 `x = the sum of`", data) == []
    assert english_sentences("문장: the movie was great", data) == []
    assert english_sentences("Layer 2, head 3", data) == []
    assert english_sentences("모델이 본 토큰: <pad> <unk> 12,000개", data) == []


@pytest.mark.parametrize("page", PAGES)
def test_page_in_korean_shows_no_english_sentence(page):
    at = open_app(page, lang="ko")
    data = user_texts()
    left = sorted({run for text in visible_texts(at) for run in english_sentences(text, data)})
    assert not left, f"English left on the Korean {page} page: {left}"


HANGUL_SHARE = 0.85  # of the letters in a page's own prose (model names, code and data aside)


def hangul_share(texts: list[str]) -> float:
    """The share of Hangul among the letters of ``texts`` once code, special tokens and English terms
    in parentheses are taken out (as :func:`english_sentences` does)."""
    joined = " ".join(texts)
    for pattern in STRIP:
        joined = pattern.sub(" ", joined)
    letters = [ch for ch in joined if ch.isalpha()]
    return sum("\uac00" <= ch <= "\ud7a3" for ch in letters) / max(1, len(letters))


def test_fill_in_the_blank_in_korean_with_a_masked_model(tmp_path):
    """The page as a student sees it with a masked language model open (the plain run above only
    reaches its 'no model' message): its prose, figures and labels in Korean."""
    pytest.importorskip("transformers")
    from transformer.hf import load_hf_folder
    from ui.session import upload_key

    from .app_helpers import figures
    from .hf_models import make_folder

    folder, _, _ = make_folder("bert-mlm", tmp_path / "bert-mlm")
    at = open_app("fill_mask", uploads={upload_key("tiny-bert-mlm"): load_hf_folder(folder)}, lang="ko")
    data = ("**모델이 읽는 토큰:**", "빈칸마다 첫 번째 후보를 넣으면")  # the model's tokens and words
    prose = [str(el.value) for kind in TEXT_ELEMENTS for el in at.main.get(kind)]
    prose = [text for text in prose if not text.startswith(data)]
    prose += [node.label for node in _widgets(at) if node in list(at.main.get(node.type))]
    prose += [spec["layout"]["title"]["text"] for spec in figures(at).values() if spec["layout"].get("title")]
    assert len(prose) >= 12 and not at.exception
    left = sorted({run for text in prose for run in english_sentences(text, user_texts())})
    assert not left, f"English left on the Korean fill_mask page: {left}"
    assert hangul_share(prose) >= HANGUL_SHARE, hangul_share(prose)
