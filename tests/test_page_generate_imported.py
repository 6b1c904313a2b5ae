"""The Generate page and the Playground on an imported tiny GPT-2 folder (random weights, a byte-level
BPE trained here) put in the session's upload registry as a Checkpoints import would: the greedy
continuation equals ``transformers``' ``generate(do_sample=False)``, each step's probabilities its
softmax, the Playground's top-5 next tokens its top-5; cached and uncached decoding agree; a model whose
start token is ``</s>`` (as KoGPT-2's) or that has none does not crash."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from tests.app_helpers import array, figures, open_app, texts
from tests.hf_models import bpe_parts, hf_config, make_folder, reference_greedy
from tests.test_continuation import marked_text
from transformer.hf.importer import load_hf_folder
from transformer.lm.decode import generate
from transformer.lm.sampling import Sampling
from ui.readable_tokens import token_shown
from ui.session import MEMO_KEY, upload_key

transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

KEY = upload_key("tiny-gpt2")
PROMPT = "This movie was"
STEPS = 6
TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    """(our imported model, transformers' GPT2LMHeadModel read back eager, its tokenizer)."""
    torch.set_num_threads(1)
    folder, reference, tok = make_folder("gpt2", tmp_path_factory.mktemp("hf") / "tiny-gpt2")
    return load_hf_folder(folder), reference, tok


def open_page(page: str, uploads: dict, chosen: str, **state) -> AppTest:
    return open_app(page, uploads=uploads, chosen=chosen, state=state)


def run(at):
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def captions(at) -> list[str]:
    """The captions as read (markdown escapes dropped)."""
    return [c.replace("\\", "") for c in texts(at.caption)]


def page_generation(at):
    """The GenerationView the page drew, from this session's store of the cached service."""
    memo = at.session_state[MEMO_KEY]
    found = [memo.get(k) for k in memo if k[0] == KEY and k[2] == "lm-generation"]
    assert len(found) == 1
    return found[0]


def test_generate_page_continues_as_transformers_greedy_does(gpt2):
    ours, reference, tok = gpt2
    at = open_page("generate", {KEY: ours}, KEY, gen_steps=STEPS)
    assert at.radio(key="gen_model").value == KEY  # the model picked in the sidebar
    assert any("Hugging Face" in c and "transformers" in c for c in captions(at))
    box = at.checkbox(key="gen_prepend_start")  # the TransformerLens convention is offered, off by default
    assert "<|endoftext|>" in box.label and box.value is False
    prompt = tok(PROMPT)["input_ids"]  # exactly what its tokenizer gives: GPT-2's adds no start token
    expected, probs = reference_greedy(reference, prompt, STEPS)
    assert len(expected) == len(prompt) + STEPS  # no end-of-text token cut the reference short
    view = page_generation(at)
    assert view.ids == expected
    written = tok.decode(expected[len(prompt) :], skip_special_tokens=True).strip()
    assert any((marked_text(h.value) or "").strip() == written for h in at.get("html"))  # the new tokens, marked
    for step in range(1, STEPS + 1):
        at.slider(key="gen_step").set_value(step)
        run(at)
        bars = array(figures(at)["generate-next"]["data"][0]["x"])
        top = np.sort(probs[step - 1])[::-1][: len(bars)]
        np.testing.assert_allclose(bars, top, atol=TOLERANCE)
        np.testing.assert_allclose(view.steps[step - 1].top_probs, probs[step - 1][view.steps[step - 1].top_ids],
                                   atol=TOLERANCE)  # fmt: skip
        rows = array(figures(at)["generate-rows"]["data"][0]["z"])
        assert rows.shape == (4 * 2, len(prompt) + step - 1)  # 2 layers x 4 heads over the prefix
        np.testing.assert_allclose(rows.sum(-1), 1.0, atol=1e-4)


def test_cached_and_uncached_decoding_agree_on_the_imported_model(gpt2):
    ours, _, tok = gpt2
    prompt = [0, *tok(PROMPT)["input_ids"]]
    settings = Sampling(False, 0.9, 20, 0.9, 3)
    cached = generate(ours.model, prompt, 20, settings, use_cache=True)
    plain = generate(ours.model, prompt, 20, settings, use_cache=False)
    assert cached.ids == plain.ids and len(cached.steps) == 20
    for a, b in zip(cached.steps, plain.steps):
        np.testing.assert_allclose(a.top_probs, b.top_probs, atol=TOLERANCE)
        np.testing.assert_allclose(a.attention, b.attention, atol=TOLERANCE)


def test_sampling_on_the_imported_model_repeats_with_its_seed(gpt2):
    ours = gpt2[0]
    at = open_page("generate", {KEY: ours}, KEY, gen_mode="sample", gen_seed=5, gen_top_k=30, gen_top_p=0.9)
    first = page_generation(at).ids
    assert len(figures(at)["generate-next"]["data"]) == 2  # the model's and what was drawn from
    again = open_page("generate", {KEY: ours}, KEY, gen_mode="sample", gen_seed=5, gen_top_k=30, gen_top_p=0.9)
    assert page_generation(again).ids == first


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_playground_lists_transformers_top_five_next_tokens(gpt2, lang):
    ours, reference, tok = gpt2
    at = open_page("playground", {KEY: ours}, KEY, text=f"{PROMPT}\nthe actor is")
    if lang == "ko":
        at.query_params["lang"] = "ko"
        run(at)
    assert not at.error
    assert len(at.dataframe) == 2
    for frame, line in zip(at.dataframe, (PROMPT, "the actor is")):
        ids = tok(line)["input_ids"]  # what its tokenizer gives, nothing added
        with torch.no_grad():
            logits = reference(torch.tensor([ids])).logits[0, -1].double()
        probs = torch.softmax(logits, -1)
        top = torch.argsort(probs, descending=True, stable=True)[:5]
        shown = frame.value
        assert list(shown["token"]) == [token_shown(ours, int(i)) for i in top]  # spelled: ui.readable_tokens
        np.testing.assert_allclose(shown["probability"].to_numpy(), probs[top].numpy(), atol=TOLERANCE)
    intro = "다음에 올 가능성" if lang == "ko" else "most likely next tokens"
    assert any(intro in c for c in texts(at.caption))


def other_start_folder(folder, eos: int | None):
    """A GPT-2 folder whose tokenizer has KoGPT-2's specials (<s>, </s>, <unk>, <pad>; no <|endoftext|>)
    and whose config names ``eos`` as its end token."""
    from transformers import GPT2LMHeadModel, GPT2Tokenizer

    vocab, merges = bpe_parts(["<s>", "</s>", "<unk>", "<pad>"])
    tok = GPT2Tokenizer(vocab=vocab, merges=merges, bos_token="</s>", eos_token="</s>", unk_token="<unk>",
                        pad_token="<pad>")  # fmt: skip
    tok.save_pretrained(folder)
    config = hf_config("gpt2", len(tok))
    config.bos_token_id = config.eos_token_id = eos
    torch.manual_seed(1)
    GPT2LMHeadModel(config).save_pretrained(folder)
    return load_hf_folder(folder), tok


def test_a_model_starting_with_its_own_end_token_or_none_does_not_crash(tmp_path):
    kogpt2_like, tok = other_start_folder(tmp_path / "ko-like", eos=1)
    at = open_page("generate", {KEY: kogpt2_like}, KEY, gen_steps=3)
    assert "</s>" in at.checkbox(key="gen_prepend_start").label  # offered, off by default
    view = page_generation(at)
    assert view.ids[: view.prompt_length] == tok(PROMPT)["input_ids"]  # what its tokenizer gives, nothing added
    no_start, tok = other_start_folder(tmp_path / "no-start", eos=40)  # an ordinary piece: not a start token
    at = open_page("generate", {KEY: no_start}, KEY, gen_steps=3)
    assert any("no start token" in c for c in captions(at))
    view = page_generation(at)
    assert view.ids[: view.prompt_length] == tok(PROMPT)["input_ids"]  # the text alone
    at.text_area(key="gen_prompt").set_value("")
    run(at)
    assert any("nothing to continue" in m for m in texts(at.info))
