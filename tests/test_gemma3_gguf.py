"""The ``gemma3`` family against transformers' GGUF loader (eager attention, float32) on a tiny Gemma 3 GGUF
written here the way llama.cpp's converter writes one: norms stored as 1 + w, the tensor types of the
published 270M file (a Q8_0 token table, Q5_0 and Q8_0 projections, Q4_K and Q6_K blocks), wider heads than
d_model / heads, one key/value head, five sliding-window layers and a global one with another rotary base,
and a Gemma-style SentencePiece vocabulary without merges. Same tokens on Korean, English and mixed text,
every head's attention and the logits within 1e-4, the same greedy continuation, cached = full pass."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gguf import GGMLQuantizationType as Q
from gguf import GGUFWriter
from gguf.quants import quantize

from tests.gguf_files import BYTES
from tests.hf_models import fuzzed_texts
from transformer.core.packed import BlockInt8Table, TiedBlockOutput
from transformer.lm.cache import forward_cached
from transformer.lm.decode import generate
from transformer.lm.sampling import Sampling
from transformer.loader import load_model

transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning", "ignore::FutureWarning")

SIZES = dict(hidden_size=256, intermediate_size=512, num_hidden_layers=6, num_attention_heads=2, num_key_value_heads=1)
HEAD_DIM = 256  # transformers' query_pre_attn_scalar default: the scale is 1/sqrt(head width) on both sides
WINDOW, GLOBAL_BASE = 5, 300.0  # short window and a global base unlike the local 10,000: both show
TOLERANCE = 1e-4
TEXTS = [
    "대한민국의 수도는",
    "The capital of France is",
    "영화 정말 재미 있다 and the plot !",
    "Hello 세계 2024 — café",
]
GGUF_NAMES = {
    "input_layernorm": "attn_norm", "post_attention_layernorm": "post_attention_norm",
    "pre_feedforward_layernorm": "ffn_norm", "post_feedforward_layernorm": "post_ffw_norm",
    "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm", "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
    "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down",
}  # fmt: skip
TYPES = {"attn_q": Q.Q5_0, "attn_k": Q.Q5_0, "attn_v": Q.Q8_0, "ffn_gate": Q.Q5_0, "ffn_up": Q.Q5_0}


def gemma_vocab() -> tuple[list[str], list[int]]:
    """Tokens in merge order (a BPE trained with spaces as ▁, none added first), control tokens first."""
    from tokenizers import Tokenizer, models, normalizers, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.normalizer = normalizers.Replace(" ", "▁")
    specials = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>", *BYTES]
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=specials, show_progress=False)
    tok.train_from_iterator(fuzzed_texts(300, seed=1) + TEXTS, trainer)
    tokens = [t for t, _ in sorted(tok.get_vocab().items(), key=lambda kv: kv[1])]
    types = [3 if t in specials[:5] else 6 if t in BYTES else 1 for t in tokens]
    return tokens, types


def k_blocks(rows: int, width: int, qtype: Q, rng: np.random.Generator) -> np.ndarray:
    """Random Q4_K / Q6_K blocks (gguf cannot quantise to them) with small finite scales: uint8 (rows, bytes)."""
    size = {Q.Q4_K: 144, Q.Q6_K: 210}[qtype]
    blocks = rng.integers(0, 256, size=(rows, width // 256, size), dtype=np.uint8)
    if qtype == Q.Q4_K:  # d, dmin first
        blocks[..., :4] = np.array([4e-4, 2e-4], dtype=np.float16).view(np.uint8)
    else:  # d last
        blocks[..., -2:] = np.array([2e-5], dtype=np.float16).view(np.uint8)
    return blocks.reshape(rows, -1)


def write_gemma3(path) -> None:
    tokens, types = gemma_vocab()
    config = transformers.Gemma3TextConfig(**SIZES, head_dim=HEAD_DIM, vocab_size=len(tokens))
    torch.manual_seed(0)
    model = transformers.Gemma3ForCausalLM(config)
    rng = np.random.default_rng(0)
    writer = GGUFWriter(str(path), "gemma3")
    writer.add_name("tiny gemma")
    for key, value in (("context_length", 64), ("embedding_length", 256), ("block_count", 6),
                       ("feed_forward_length", 512), ("attention.head_count", 2), ("attention.head_count_kv", 1),
                       ("attention.key_length", HEAD_DIM), ("attention.value_length", HEAD_DIM),
                       ("attention.sliding_window", WINDOW)):  # fmt: skip
        writer.add_uint32(f"gemma3.{key}", value)
    writer.add_float32("gemma3.attention.layer_norm_rms_epsilon", 1e-6)
    writer.add_float32("gemma3.rope.freq_base", GLOBAL_BASE)
    writer.add_tokenizer_model("llama")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_scores([-1000.0 if k == 3 else 0.0 for k in types])
    writer.add_token_types(types)
    for role, index in (("bos", 2), ("eos", 1), ("unknown", 3), ("padding", 0)):
        writer.add_uint32(f"tokenizer.ggml.{role}_token_id", index)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)
    for name, tensor in model.state_dict().items():
        if name == "lm_head.weight":
            continue
        values = tensor.detach().numpy().astype(np.float32)
        if name.endswith("norm.weight"):
            writer.add_tensor(_gguf(name), 1 + 0.2 * rng.standard_normal(values.shape).astype(np.float32))
            continue
        values = 0.08 * rng.standard_normal(values.shape).astype(np.float32)
        role = _gguf(name).split(".")[-2]
        if name == "model.embed_tokens.weight":
            writer.add_tensor(_gguf(name), quantize(values, Q.Q8_0), raw_dtype=Q.Q8_0)
        elif role in TYPES:
            writer.add_tensor(_gguf(name), quantize(values, TYPES[role]), raw_dtype=TYPES[role])
        else:  # attn_output: Q4_K, ffn_down: Q6_K, as in the published file
            kind = Q.Q4_K if role == "attn_output" else Q.Q6_K
            writer.add_tensor(_gguf(name), k_blocks(*values.shape, kind, rng), raw_dtype=kind)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _gguf(hf: str) -> str:
    if hf == "model.embed_tokens.weight":
        return "token_embd.weight"
    if hf == "model.norm.weight":
        return "output_norm.weight"
    _, _, index, rest = hf.split(".", 3)
    stem, suffix = rest.rsplit(".", 1)
    return f"blk.{index}.{GGUF_NAMES[stem]}.{suffix}"


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    torch.set_num_threads(1)
    folder = tmp_path_factory.mktemp("gemma3")
    write_gemma3(folder / "tiny.gguf")
    ours = load_model(folder / "tiny.gguf")
    options = dict(gguf_file="tiny.gguf", attn_implementation="eager", dtype=torch.float32)
    reference = transformers.AutoModelForCausalLM.from_pretrained(folder, **options).eval()
    return ours, reference, transformers.AutoTokenizer.from_pretrained(folder, gguf_file="tiny.gguf")


def test_config_is_gemma3s(pair):
    ours, reference, _ = pair
    c = ours.config
    assert ours.family == "Gemma 3" and reference.config.model_type == "gemma3_text"
    assert (c.num_layers, c.d_model, c.num_heads, c.kv_heads, c.head_dim) == (6, 256, 2, 1, 256)
    assert (c.local_window, c.local_layers) == (WINDOW, (0, 1, 2, 3, 4))  # every sixth layer global
    assert (c.pe_base, c.local_pe_base, c.activation, c.scale_embedding) == (GLOBAL_BASE, 10000.0, "gelu_tanh", True)
    assert c.qk_norm and c.sublayer_post_norm and c.packed_embedding and c.tie_output_embedding
    assert [layer.self_attn.rotary.inv_freq[1].item() for layer in ours.model.layers[4:]] == pytest.approx(
        [10000.0 ** (-2 / 256), GLOBAL_BASE ** (-2 / 256)]
    )
    assert isinstance(ours.model.embedding.tokens, BlockInt8Table) and isinstance(ours.model.output, TiedBlockOutput)
    assert ours.tensor_types == {"F32": 37, "Q5_0": 24, "Q8_0": 7, "Q4_K": 6, "Q6_K": 6}


def test_the_packed_table_holds_the_files_values_exactly(pair):
    ours, reference, _ = pair
    table = reference.model.embed_tokens.weight
    assert torch.equal(ours.model.embedding.tokens.rows(0, table.shape[0]), table)
    assert torch.equal(ours.model.output.weight[7], table[7]) and torch.equal(ours.model.output.weight[3:9], table[3:9])


def test_tokens_equal_the_reference_on_korean_english_and_mixed(pair):
    ours, _, auto = pair
    for text in TEXTS + fuzzed_texts(30, seed=5) + ["  two  spaces\n", "<bos>x", "", "😀 ☃"]:
        assert ours.lm_tokenizer.encode(text).ids == auto(text)["input_ids"], repr(text)
    ids = ours.lm_tokenizer.encode("대한민국의 수도는").ids
    assert ids[0] == 2 and 3 not in ids  # the start token, no unknown token


def test_every_heads_attention_and_the_logits_equal_transformers(pair):
    ours, reference, auto = pair
    for text in TEXTS:
        ids = torch.tensor([auto(text)["input_ids"]])
        with torch.no_grad():
            theirs = reference(ids, output_attentions=True)
            mine = ours.model(ids, need_weights=True)
        assert len(mine.attention) == len(theirs.attentions) == 6
        for layer, (a, b) in enumerate(zip(mine.attention, theirs.attentions)):
            assert a.weights.shape == b.shape == (1, 2, ids.shape[1], ids.shape[1]), layer
            assert (a.weights - b).abs().max() < TOLERANCE, (text, layer)
        assert (mine.logits - theirs.logits).abs().max() < TOLERANCE * max(1.0, theirs.logits.abs().max().item())
        assert mine.logits[0, -1].argmax() == theirs.logits[0, -1].argmax()
        if ids.shape[1] > WINDOW:  # a local layer's query sees its last WINDOW keys only
            assert mine.attention[0].weights[0, :, -1, :-WINDOW].abs().max() == 0


def test_greedy_continuation_equals_generate(pair):
    ours, reference, auto = pair
    prompt = auto(TEXTS[0])["input_ids"]
    with torch.no_grad():
        expected = reference.generate(
            torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.long), do_sample=False,
            max_new_tokens=12, min_new_tokens=12, pad_token_id=0,
        )[0].tolist()  # fmt: skip
    assert generate(ours.model, prompt, 12, Sampling(greedy=True)).ids == expected


def test_cached_decoding_equals_the_full_pass(pair):
    ours, _, auto = pair
    ids = torch.tensor([auto("the film was boring but the actor was good , 영화 최고")["input_ids"]])
    with torch.no_grad():
        full = ours.model(ids).logits
    out = forward_cached(ours.model, ids[:, :3])
    pieces = [out.logits]
    for t in range(3, ids.shape[1]):
        out = forward_cached(ours.model, ids[:, t : t + 1], out.cache)
        pieces.append(out.logits)
    assert (torch.cat(pieces, 1) - full).abs().max() < TOLERANCE


def test_the_lens_and_the_contributions_read_gemma_as_it_computes(pair):
    """Sandwich norms: each sublayer's parts go through its post-norm held at the forward's scale, so the
    parts add up to the logit; the lens's last reading is the model's own next token."""
    from transformer.residual.contributions import contributions
    from transformer.residual.lens import logit_lens

    ours, _, auto = pair
    ids = torch.tensor([auto(TEXTS[2])["input_ids"]])
    with torch.no_grad():
        logits = ours.model(ids).logits[0, -1]
    lens = logit_lens(ours.model, ids)
    assert lens.layers == 6 and lens.answer[-1] == int(logits.argmax()) and lens.answer_rank[-1, -1] == 0
    parts = contributions(ours.model, ids)
    assert parts.token == int(logits.argmax()) and parts.logit == pytest.approx(float(logits.max()), abs=1e-4)
    assert parts.total == pytest.approx(parts.logit, abs=1e-3) and parts.grid().shape == (6, 2)
    assert ours.model.output.weight.double()[5].dtype == torch.float64
