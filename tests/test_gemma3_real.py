"""Gemma 3 270M (the published Q4_K_M GGUF, joined from its packages) against transformers' GGUF loader (eager,
float32): the same tokens on Korean, English and mixed text, every layer's and head's attention and the logits
within 1e-4, the same next token and greedy continuation; the Korean example's answer. Skipped when the
packages are not installed. Each model is loaded once for the module (transformers' takes ~50 s of one CPU)."""

from __future__ import annotations

import pytest
import torch

from transformer.hf.gguf_package import package_problem, packaged_file
from transformer.lm.decode import generate
from transformer.lm.sampling import Sampling
from transformer.loader import load_model
from ui.models import MODELS_DIR

FOLDER = MODELS_DIR / "gemma-3-270m"
FILE = "gemma-3-270m-q4_k_m.gguf"
TOLERANCE = 1e-4
TEXTS = ["대한민국의 수도는", "The capital of France is", "서울은 한국의 수도이고 Paris is the capital of France."]
pytestmark = [
    pytest.mark.skipif(package_problem(str(FOLDER)) is not None, reason="the Gemma 3 packages are not installed"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning", "ignore::FutureWarning"),
]


@pytest.fixture(scope="module")
def pair():
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    torch.set_num_threads(1)
    ours = load_model(FOLDER)
    options = dict(gguf_file=FILE, attn_implementation="eager", dtype=torch.float32)
    where = packaged_file(FOLDER).parent
    reference = transformers.AutoModelForCausalLM.from_pretrained(where, **options).eval()
    return ours, reference, transformers.AutoTokenizer.from_pretrained(where, gguf_file=FILE)


def test_the_file_reads_as_gemma_3_270m(pair):
    ours, reference, _ = pair
    c = ours.config
    assert ours.name == "gemma-3-270m" and ours.family == "Gemma 3" and ours.format == "gguf"
    assert (c.num_layers, c.d_model, c.num_heads, c.kv_heads, c.head_dim, c.d_ff) == (18, 640, 4, 1, 256, 2048)
    assert (c.local_window, c.local_layers) == (512, tuple(i for i in range(18) if i not in (5, 11, 17)))
    assert (c.pe_base, c.local_pe_base, c.vocab_size, c.packed_embedding) == (1e6, 1e4, 262144, True)
    assert ours.tensor_types == {"F32": 109, "Q5_0": 81, "Q4_K": 27, "Q8_0": 10, "Q6_K": 9}
    assert ours.chat_template == "" and ours.add_bos
    assert torch.equal(ours.model.embedding.tokens.rows(1000, 1010), reference.model.embed_tokens.weight[1000:1010])


def test_tokens_attention_logits_and_next_token_equal_transformers(pair):
    ours, reference, auto = pair
    for text in TEXTS:
        ids = auto(text)["input_ids"]
        assert ours.lm_tokenizer.encode(text).ids == ids, text
        with torch.no_grad():
            theirs = reference(torch.tensor([ids]), output_attentions=True)
            mine = ours.model(torch.tensor([ids]), need_weights=True)
        assert len(mine.attention) == len(theirs.attentions) == 18
        for layer, (a, b) in enumerate(zip(mine.attention, theirs.attentions)):
            assert (a.weights - b).abs().max() < TOLERANCE, (text, layer)
        assert (mine.logits - theirs.logits).abs().max() < TOLERANCE * theirs.logits.abs().max()
        assert int(mine.logits[0, -1].argmax()) == int(theirs.logits[0, -1].argmax())


def test_korean_capital_and_greedy_continuation(pair):
    ours, reference, auto = pair
    pieces = [ours.lm_tokenizer.id_to_token(i) for i in ours.lm_tokenizer.encode("대한민국의 수도는").ids]
    assert pieces == ["<bos>", "대한", "민", "국의", "▁수도", "는"]  # real pieces, no unknown token
    prompt = auto("대한민국의 수도는 바로")["input_ids"]
    with torch.no_grad():
        expected = reference.generate(
            torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.long), do_sample=False,
            max_new_tokens=6, min_new_tokens=6, pad_token_id=0,
        )[0].tolist()  # fmt: skip
    got = generate(ours.model, prompt, 6, Sampling(greedy=True)).ids
    assert got == expected and ours.lm_tokenizer.decode(got[len(prompt) :]).startswith(" 서울")
