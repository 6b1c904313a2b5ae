"""SmolLM2-135M-Instruct (4-bit GGUF, bundled in assets/models/smollm2-135m-instruct) against transformers'
GGUF loader on the published file in ../shared/models (skipped when absent): the same tokens on English,
Korean, mixed and emoji text, every layer's and head's attention and the logits within 1e-4, greedy
continuations equal to ``generate()``, the chat template as ``apply_chat_template``. Each model is loaded
once for the module (transformers' takes ~20 s on one thread); the texts are short."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import torch

from transformer.hf.chat import chat_ids, end_of_turn_id
from transformer.lm.decode import generate
from transformer.lm.sampling import Sampling
from transformer.loader import load_model

ROOT = Path(__file__).resolve().parent.parent
BUNDLED = ROOT / "assets" / "models" / "smollm2-135m-instruct"
FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SHARED = ROOT.parent / "shared" / "models" / "SmolLM2-135M-Instruct-GGUF"
SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
TOLERANCE = 1e-4
TEXTS = [
    "The capital of France is",
    "안녕하세요, 세계!",
    "Hello 세계 2024 — café",
    "I ❤️ 🐱🐶 emoji 👍🏽",
    "  two  spaces\n",
]
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning", "ignore::FutureWarning")


def test_the_bundled_file_is_the_published_one_byte_for_byte():
    digest = hashlib.sha256()
    with open(BUNDLED / FILE, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    assert digest.hexdigest() == SHA256
    assert (BUNDLED / "LICENSE").read_text(encoding="utf-8").count("Apache License") >= 1


@pytest.fixture(scope="module")
def ours():
    torch.set_num_threads(1)
    return load_model(BUNDLED)


@pytest.fixture(scope="module")
def reference():
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    if not (SHARED / FILE).is_file():
        pytest.skip("../shared/models/SmolLM2-135M-Instruct-GGUF is not here")
    torch.set_num_threads(1)
    options = dict(gguf_file=FILE, attn_implementation="eager", dtype=torch.float32)
    model = transformers.AutoModelForCausalLM.from_pretrained(SHARED, **options).eval()
    return model, transformers.AutoTokenizer.from_pretrained(SHARED, gguf_file=FILE)


def test_the_bundled_folder_says_what_it_is(ours):
    assert ours.name == "smollm2-135m-instruct" and ours.format == "gguf" and ours.family == "Llama"
    config = ours.config
    assert (config.num_layers, config.num_heads, config.kv_heads, config.d_model, config.d_ff) == (30, 9, 3, 576, 1536)
    assert (config.pe_base, config.vocab_size, config.tie_output_embedding) == (100000.0, 49152, True)
    assert ours.tensor_types == {"Q4_1": 210, "F32": 61, "Q8_0": 1}
    assert "1 Q8_0 (token_embd.weight)" in ours.type_summary and ours.type_summary in ours.notes[0]
    assert ours.add_bos is False and "<|im_start|>" in ours.chat_template
    assert ours.metrics["origin"]["sha256"] == SHA256 and ours.metrics["origin"]["licence"] == "Apache-2.0"


def test_capital_of_france_is_paris(ours):
    prompt = ours.lm_tokenizer.encode("The capital of France is").ids
    assert prompt == [504, 3575, 282, 4649, 314]  # no start token: the file says add_bos_token false
    got = generate(ours.model, prompt, 2, Sampling(greedy=True))
    assert ours.lm_tokenizer.decode(got.ids[len(prompt) :]) == " Paris."


def test_chat_answers_through_the_files_template(ours):
    ids = chat_ids(ours, [{"role": "user", "content": "What is the capital of Korea?"}])
    got = generate(ours.model, ids, 16, Sampling(greedy=True), stop_at=end_of_turn_id(ours))
    assert ours.lm_tokenizer.decode(got.ids[len(ids) :], skip_special_tokens=True) == "The capital of Korea is Seoul."
    assert got.ids[-1] == ours.lm_tokenizer.token_to_id("<|im_end|>") == end_of_turn_id(ours)


def test_tokens_equal_the_reference(ours, reference):
    _, auto = reference
    for text in TEXTS + ["<|im_start|>user\nhi<|im_end|>\n"]:
        assert ours.lm_tokenizer.encode(text).ids == auto(text)["input_ids"], repr(text)
    messages = [{"role": "user", "content": "What is the capital of Korea?"}]
    expected = auto.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    assert chat_ids(ours, messages) == list(expected["input_ids"] if hasattr(expected, "keys") else expected)


@pytest.mark.parametrize("text", [TEXTS[0], TEXTS[2]])
def test_every_layer_and_heads_attention_and_the_logits_equal_transformers(ours, reference, text):
    model, auto = reference
    ids = torch.tensor([auto(text)["input_ids"]])
    with torch.no_grad():
        theirs = model(ids, output_attentions=True)
        mine = ours.model(ids, need_weights=True)
    assert torch.allclose(mine.logits, theirs.logits, atol=TOLERANCE)
    assert len(mine.attention) == len(theirs.attentions) == 30
    for layer, (a, b) in enumerate(zip(mine.attention, theirs.attentions)):
        assert a.weights.shape == b.shape == (1, 9, ids.shape[1], ids.shape[1]), layer
        assert torch.allclose(a.weights, b, atol=TOLERANCE), layer


def test_greedy_20_tokens_equal_generate(ours, reference):
    model, auto = reference
    prompt = auto("Once upon a time, there was a little girl who")["input_ids"]
    with torch.no_grad():
        expected = model.generate(
            torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.long), do_sample=False,
            max_new_tokens=20, min_new_tokens=20, pad_token_id=2,
        )[0].tolist()  # fmt: skip
    got = generate(ours.model, prompt, 20, Sampling(greedy=True))
    assert got.ids == expected
