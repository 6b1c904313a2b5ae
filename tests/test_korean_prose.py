"""Korean pages written as Korean (issue 39): one term per concept (the glossary), particles that
fit the number or word before them, no English left in the Classifier's and Playground's prose."""

from __future__ import annotations

import json

import pytest

from ui.i18n import LOCALES_DIR, catalogue, translate
from ui.korean_particles import resolve
from ui.models import MODELS_DIR

from .app_helpers import open_app, texts

GLOSSARY = json.loads((LOCALES_DIR / "glossary" / "ko.json").read_text(encoding="utf-8"))


def test_the_glossary_names_one_term_per_concept_and_the_catalogues_use_it():
    korean = catalogue("ko")
    every = "\n".join(korean.values())
    for concept, entry in GLOSSARY.items():
        assert entry["term"] in every, concept  # the chosen term is the one in use
        used = {key: wrong for key, text in korean.items() for wrong in entry["not"] if wrong in text}
        assert not used, f"{concept}: write {entry['term']}, not {used}"


def test_the_look_ahead_mask_has_one_name():
    every = "\n".join(catalogue("ko").values())
    assert "룩어헤드 마스크" in every and "미리 보기" not in every and "미리보기" not in every


@pytest.mark.parametrize(
    "text, written",
    [
        ("0.021(이)었습니다", "0.021이었습니다"),  # 일: a final consonant
        ("0.009(이)었습니다", "0.009였습니다"),  # 구: none
        ("0.008이(가) 됩니다", "0.008이 됩니다"),
        ("0.005이(가) 됩니다", "0.005가 됩니다"),
        ("1.13(으)로", "1.13으로"),
        ("1.14(으)로", "1.14로"),  # 사: no final
        ("1.17(으)로", "1.17로"),  # 칠: ㄹ takes 로
        ("10,000(으)로", "10,000으로"),  # 만
        ("20을(를)", "20을"),  # 이십
        ("**0.53**을(를)", "**0.53**을"),
        ("모델은(는) 학생을(를) 봅니다", "모델은 학생을 봅니다"),
        ("영화은(는) 사과을(를)", "영화는 사과를"),
        ("pytorch_model.bin을(를)", "pytorch_model.bin을"),  # 빈
        ("`[MASK]`(으)로", "`[MASK]`로"),  # an abbreviation, letter by letter: ... 케이
        ("`<unk>`(으)로", "`<unk>`으로"),  # brackets and code marks skipped back over
        ("임베딩 (아는 단어 없음)(으)로", "임베딩 (아는 단어 없음)으로"),
        ("model이(가)", "model이"),  # 모델: ㄹ
        ("✈(으)로", "✈로"),  # read no one knows how: the form without a final, never the marker
    ],
)
def test_particles_after_numbers_and_words(text, written):
    assert resolve(text) == written


def test_korean_texts_resolve_their_particles_and_english_ones_are_untouched():
    fields = {"t": "1.14", "before": "0.021", "after": "0.009", "fitted": "검증 데이터"}
    korean = translate("classifier.calibration_text", "ko", **fields)
    assert "0.021이었습니다" in korean and "1.14로" in korean and "0.009가 됩니다" in korean
    assert "(이)" not in korean and "(으)" not in korean
    assert "was 0.021" in translate("classifier.calibration_text", "en", **fields)


def test_the_classifier_page_in_korean_has_no_english_calibration_text_or_row_labels():
    at = open_app("classifier", lang="ko", text="영화가 정말 좋았다")
    calibration = next(c for c in texts(at.caption) if "온도" in c)
    assert "검증 데이터(학습 데이터에서 떼어 낸 리뷰 15,000개, 시드 13)에서" in calibration
    assert "carved" not in calibration and "(이)" not in calibration and "(으)" not in calibration
    metrics = json.loads((MODELS_DIR / "nsmc-sentiment" / "metrics.json").read_text(encoding="utf-8"))["calibration"]
    before = f"{metrics['test_ece_before']:.3f}"
    assert resolve(f"{before}(이)었습니다") in calibration
    specs = "\n".join(el.proto.spec for el in at.get("plotly_chart"))
    assert "첫째" in specs and "둘째" in specs and "1st" not in specs and "2nd" not in specs
    assert "“not”" not in "\n".join(texts(at.caption))


def test_the_playground_table_shows_a_dash_not_none_for_a_missing_probability():
    at = open_app("playground", lang="ko", text="12345\n영화가 정말 좋았다")
    assert at.dataframe[0].proto.placeholder == "—"
    assert at.dataframe[0].value["probability"].isna().tolist() == [True, False]


MARKER_VALUES = ("0.021", "7", "<unk>", "[UNK]", "`[MASK]`", "model.bin", "ÿ", "✈", "(괄호)", "레이어 3", "")


def test_no_particle_marker_reaches_the_screen_whatever_the_value():
    """Every Korean text with a two-form particle after a field, formatted with numbers, Latin, code,
    brackets, symbols and Hangul: the marker is always resolved (issue 50, item 5)."""
    import re
    import string

    marker = re.compile(r"\(이\)|\(으\)로|이\(가\)|을\(를\)|은\(는\)|과\(와\)")
    checked = 0
    for key, text in catalogue("ko").items():
        if not marker.search(text):
            continue
        names = {name for _, name, spec, _ in string.Formatter().parse(text) if name}
        for value in MARKER_VALUES:
            fields = {
                name: (1 if any(c in text for c in (f"{{{name}:,}}", f"{{{name}:.")) else value) for name in names
            }
            try:
                written = translate(key, "ko", **fields)
            except (ValueError, TypeError):  # a field formatted as a number: the number case above
                written = translate(key, "ko", **dict.fromkeys(names, 1))
            assert not marker.search(written), (key, value, written)
            checked += 1
    assert checked > 50
