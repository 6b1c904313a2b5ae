"""GGUF files written here (``tests/gguf_files.py``: llama without biases, qwen2 with q/k/v biases, tied
and untied output, F32/F16/Q8_0/Q4_0/Q4_1 weights, byte-level and SentencePiece vocabularies) read by
our loader and by transformers' GGUF loader (eager, float32): the same tokens, every layer's and head's
attention and the logits within 1e-4, the same greedy continuation; every GGML type gguf implements
dequantised exactly as ``gguf.quants.dequantize``; the header exactly as ``gguf.GGUFReader`` reads it."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, GGUFReader, GGUFWriter
from gguf.quants import dequantize

from tests.gguf_files import CHAT_TEMPLATE, Case, write_case
from tests.hf_models import fuzzed_texts
from transformer.hf.chat import ChatTemplateError, chat_ids, chat_text, render_chat
from transformer.hf.gguf_file import can_dequantize, read_gguf, read_tensors
from transformer.lm.cache import forward_cached
from transformer.lm.decode import generate
from transformer.lm.sampling import Sampling
from transformer.loader import load_model

transformers = pytest.importorskip("transformers")
pytest.importorskip("accelerate")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning", "ignore::FutureWarning")
Q = GGMLQuantizationType
TOLERANCE = 1e-4
CASES = [
    Case("llama", "gpt2", Q.F32, tied=False),
    Case("llama", "llama", Q.F16, tied=True),
    Case("llama", "llama", Q.Q4_0, tied=False, merges=False),
    Case("qwen2", "gpt2", Q.Q8_0, tied=True, pre="qwen2"),
    Case("qwen2", "gpt2", Q.Q4_1, tied=False, pre="qwen2"),
    Case("llama", "llama", Q.Q8_0, tied=False, name="Mistral 7B Instruct v0.3"),  # llama.cpp writes Mistral as llama
]
TEXTS = ["the movie was great , 정말 재미 있다 😀 and the plot !", "Hello world", "영화 최고", "I ❤️ 🐱🐶", ""]


@pytest.fixture(scope="module", params=CASES, ids=lambda c: c.id)
def pair(request, tmp_path_factory):
    """(case, ours, transformers' model, transformers' tokenizer, the model the file was written from)."""
    torch.set_num_threads(1)
    case = request.param
    folder = tmp_path_factory.mktemp("gguf")
    written = write_case(case, folder / "tiny.gguf")
    ours = load_model(folder / "tiny.gguf")
    options = dict(gguf_file="tiny.gguf", attn_implementation="eager", dtype=torch.float32)
    reference = transformers.AutoModelForCausalLM.from_pretrained(folder, **options).eval()
    auto = transformers.AutoTokenizer.from_pretrained(folder, gguf_file="tiny.gguf")
    return case, ours, reference, auto, written


def test_config_is_the_files(pair):
    case, ours, reference, _, _ = pair
    config = ours.config
    assert (config.num_layers, config.d_model, config.num_heads, config.kv_heads) == (2, 64, 4, 2)
    assert (config.positional, config.pe_base, config.norm_style, config.gated_ffn) == ("rotary", 5000.0, "rms", True)
    assert config.qkv_bias == (case.arch == "qwen2") and config.tie_output_embedding == case.tied
    assert (ours.model.output.weight is ours.model.embedding.tokens.weight) == case.tied
    assert sum(p.numel() for p in ours.model.parameters()) == sum(p.numel() for p in reference.parameters())
    assert ours.format == "gguf" and ours.family == (
        "Mistral" if case.name == "mistral" else case.arch.title().replace("Qwen2", "Qwen2")
    )
    assert reference.config.model_type == ("mistral" if case.name == "mistral" else case.arch)


def test_types_per_tensor_are_described(pair):
    case, ours, *_ = pair
    weights = 7 * 2 + 1 + (0 if case.tied else 1)  # seven projections a layer, the embedding, the output
    vectors = 5 + (6 if case.arch == "qwen2" else 0)  # norms, and qwen2's q/k/v biases: always F32
    expected = {case.qtype.name: weights, "F32": vectors} if case.qtype != Q.F32 else {"F32": weights + vectors}
    assert ours.tensor_types == expected
    assert f"{weights} {case.qtype.name} (" in ours.type_summary or case.qtype == Q.F32
    assert "token_embd.weight" in ours.type_summary and ours.type_summary in ours.notes[0]


def test_tokens_equal_the_reference_on_english_korean_mixed_and_emoji(pair):
    _, ours, _, auto, _ = pair
    texts = TEXTS + fuzzed_texts(40, seed=3) + ["<|im_start|>user\nhi<|im_end|>", "  leading", "a\n\nb", "café naïve"]
    for text in texts:
        assert ours.lm_tokenizer.encode(text).ids == auto(text)["input_ids"], repr(text)
        assert ours.text_encoder().encode(text).ids == auto(text)["input_ids"], repr(text)


def test_start_token_only_where_the_file_says_add_bos(pair):
    case, ours, _, auto, _ = pair
    first = ours.lm_tokenizer.encode("the movie").ids[0]
    assert ours.add_bos == (case.vocab == "llama")  # unset: a SentencePiece vocabulary adds one, as llama.cpp
    assert (first == ours.config.bos_id) == ours.add_bos


def test_every_layer_and_heads_attention_and_the_logits_equal_transformers(pair):
    _, ours, reference, auto, _ = pair
    ids = torch.tensor([auto(TEXTS[0])["input_ids"]])
    with torch.no_grad():
        theirs = reference(ids, output_attentions=True)
        mine = ours.model(ids, need_weights=True)
    assert torch.allclose(mine.logits, theirs.logits, atol=TOLERANCE)
    assert len(mine.attention) == len(theirs.attentions) == 2
    for layer, (a, b) in enumerate(zip(mine.attention, theirs.attentions)):
        assert a.weights.shape == b.shape == (1, 4, ids.shape[1], ids.shape[1]), layer
        assert torch.allclose(a.weights, b, atol=TOLERANCE), layer


def test_greedy_continuation_equals_generate(pair):
    _, ours, reference, auto, _ = pair
    prompt = auto("this movie was")["input_ids"]
    with torch.no_grad():
        expected = reference.generate(
            torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.long), do_sample=False,
            max_new_tokens=20, min_new_tokens=20, pad_token_id=0,
        )[0].tolist()  # fmt: skip
    got = generate(ours.model, prompt, 20, Sampling(greedy=True))
    assert got.ids == expected and len(expected) == len(prompt) + 20


def test_cached_decoding_equals_the_full_pass(pair):
    _, ours, _, auto, _ = pair
    ids = torch.tensor([auto("the film was boring but the actor was good , 영화 최고")["input_ids"]])
    with torch.no_grad():
        full = ours.model(ids)
    out = forward_cached(ours.model, ids[:, :3])
    pieces = [out.logits]
    for t in range(3, ids.shape[1]):
        out = forward_cached(ours.model, ids[:, t : t + 1], out.cache)
        pieces.append(out.logits)
    assert torch.allclose(torch.cat(pieces, 1), full.logits, atol=TOLERANCE)


def test_f32_file_computes_what_the_written_model_computes(pair):
    """The query/key rows permuted by the writer as llama.cpp permutes them are put back exactly."""
    case, ours, _, auto, written = pair
    if case.qtype != Q.F32:
        pytest.skip("quantised weights differ from the written ones by design")
    ids = torch.tensor([auto(TEXTS[0])["input_ids"]])
    with torch.no_grad():
        assert torch.allclose(ours.model(ids).logits, written(ids).logits, atol=TOLERANCE)


def test_chat_template_renders_as_transformers_apply_chat_template(pair):
    _, ours, _, auto, _ = pair
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2+2? 한국어"}]
    assert ours.chat_template == CHAT_TEMPLATE
    expected = auto.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    assert chat_text(ours, messages) == expected
    ids = auto.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    assert chat_ids(ours, messages) == list(ids["input_ids"] if hasattr(ids, "keys") else ids)


def test_chat_template_runs_sandboxed():
    with pytest.raises(ChatTemplateError, match="failed"):  # no Python internals reachable from the file's template
        render_chat("{{ messages.__class__.__mro__[1].__subclasses__() }}", [{"role": "user", "content": "x"}])
    with pytest.raises(ChatTemplateError, match="refused"):
        render_chat("{{ raise_exception('roles must alternate') }}", [{"role": "user", "content": "x"}])
    with pytest.raises(ChatTemplateError, match="more than"):
        render_chat("{% for i in range(99999) %}{{ 'xxxxxxxxxx' }}{% endfor %}", [])
    with pytest.raises(ChatTemplateError, match="no chat template"):
        render_chat("", [])
    with pytest.raises(ChatTemplateError, match="A message is"):
        render_chat(CHAT_TEMPLATE, [{"role": "hacker", "content": "x"}])


QUANTISABLE = (Q.F16, Q.BF16, Q.Q8_0, Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1)


@pytest.mark.parametrize("qtype", [t for t in Q if can_dequantize(t)], ids=lambda t: t.name)
def test_every_type_gguf_implements_dequantises_as_gguf_does(tmp_path, qtype):
    """Random blocks (K-quants and IQ types included) or quantised values, read back equal to
    ``gguf.quants.dequantize`` bit for bit (NaN where it gives NaN)."""
    block, block_bytes = GGML_QUANT_SIZES[qtype]
    rows, width = 3, 2 * 256
    rng = np.random.default_rng(0)
    writer = GGUFWriter(str(tmp_path / "t.gguf"), "llama")
    if qtype == Q.F32:
        writer.add_tensor("w", rng.standard_normal((rows, width)).astype(np.float32))
    elif qtype == Q.F16:
        writer.add_tensor("w", rng.standard_normal((rows, width)).astype(np.float16))
    else:
        raw = rng.integers(0, 256, (rows, width // block * block_bytes), dtype=np.uint8)
        writer.add_tensor("w", raw, raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    ours = read_tensors(read_gguf(tmp_path / "t.gguf"))["w"]
    theirs = GGUFReader(tmp_path / "t.gguf").tensors[0]
    expected = dequantize(theirs.data, theirs.tensor_type).reshape(rows, width)
    assert ours.dtype == np.float32 and ours.shape == (rows, width)
    assert np.array_equal(ours, expected, equal_nan=True)


def test_the_header_reads_as_gguf_reader_reads_it(tmp_path):
    write_case(Case("qwen2", "gpt2", Q.Q4_1, pre="qwen2"), tmp_path / "m.gguf")
    ours = read_gguf(tmp_path / "m.gguf")
    reader = GGUFReader(tmp_path / "m.gguf")
    for key, field in reader.fields.items():
        if not key.startswith("GGUF."):
            expected = field.contents()
            assert (
                ours.metadata[key] == pytest.approx(expected)
                if isinstance(expected, float)
                else ours.metadata[key] == expected
            ), key
    assert [(t.name, t.type, t.shape, t.nbytes) for t in ours.tensors] == [
        (t.name, t.tensor_type, tuple(int(n) for n in reversed(t.shape)), int(t.n_bytes)) for t in reader.tensors
    ]
    assert (
        read_tensors(ours)["blk.0.attn_q.weight"].tobytes()
        == dequantize(
            reader.tensors[[t.name for t in reader.tensors].index("blk.0.attn_q.weight")].data, Q.Q4_1
        ).tobytes()
    )


def test_a_folder_holding_one_gguf_is_a_language_model_the_server_can_offer(tmp_path, monkeypatch):
    from ui import models

    folder = tmp_path / "my-llama"
    folder.mkdir()
    write_case(Case("llama", "gpt2", Q.Q8_0), folder / "model.gguf")
    assert models.bundle_kind(folder) == "language-model"
    monkeypatch.setenv(models.SERVER_MODELS_ENV, str(folder))
    assert models.server_models() == {"server: my-llama": folder}
    loaded = load_model(folder)
    assert loaded.name == "my-llama" and loaded.format == "gguf" and loaded.config.kind == "language-model"
    (folder / "second.gguf").write_bytes((folder / "model.gguf").read_bytes())  # two files: which one is meant?
    with pytest.raises(ValueError, match="holds 2 .gguf files"):
        load_model(folder)
