"""Llama, Mistral and Qwen2 folders: tiny random models built here from a config (grouped-query attention,
a rotary base of their own, untied or tied output), saved with ``save_pretrained`` beside a tokenizer built
here with the ``tokenizers`` library, read by our loader. Every layer's and head's attention and the logits
equal transformers' eager ones within 1e-5, greedy continuations equal ``generate(do_sample=False)``, cached
decoding equals the full pass, and the ids equal ``AutoTokenizer``'s on fuzzed English, Korean and emoji."""

from __future__ import annotations

import json

import pytest
import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

from tests.hf_models import bpe_parts, fuzzed_texts
from transformer.checkpoints.errors import CheckpointError
from transformer.core.multihead import kv_head_of
from transformer.lm.cache import forward_cached
from transformer.lm.decode import generate
from transformer.lm.sampling import Sampling
from transformer.loader import load_model
from transformer.residual.contributions import contributions

transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")
TOLERANCE = 1e-5
SIZES = dict(
    hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=64
)
BYTES = [f"<0x{i:02X}>" for i in range(256)]


def sentencepiece_style(folder, start_token: bool = True, add_bos: bool = True) -> None:
    """A Llama 2 / TinyLlama / Mistral style tokenizer.json (BPE over ``▁``-joined text, byte fallback for
    what it lacks) and a tokenizer_config.json naming LlamaTokenizer."""
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<unk>", "<s>", "</s>", *BYTES], show_progress=False)
    tok.train_from_iterator([t.lower() for t in fuzzed_texts(200, seed=1)], trainer)
    if start_token:
        tok.post_processor = processors.TemplateProcessing(
            single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 1)]
        )
    tok.save(str(folder / "tokenizer.json"))
    settings = {"tokenizer_class": "LlamaTokenizer", "add_bos_token": add_bos, "add_eos_token": False, "legacy": False,
                "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}  # fmt: skip
    (folder / "tokenizer_config.json").write_text(json.dumps(settings))


def byte_level(folder, tokenizer_class: str, bos: str | None) -> None:
    """A Qwen2 / Llama 3 / SmolLM style byte-level BPE: Qwen2Tokenizer, GPT2Tokenizer (SmolLM: its file
    splits digits, which transformers' GPT2Tokenizer class does not), or the file as it is
    (PreTrainedTokenizerFast) with a post-processor that puts ``bos`` first."""
    vocab, merges = bpe_parts(["<|endoftext|>", "<|begin_of_text|>"])
    tok = Tokenizer(models.BPE(vocab, merges, continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    if tokenizer_class == "GPT2Tokenizer":
        digits = pre_tokenizers.Digits(individual_digits=True)
        tok.pre_tokenizer = pre_tokenizers.Sequence([digits, pre_tokenizers.ByteLevel(add_prefix_space=False)])
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(["<|endoftext|>", "<|begin_of_text|>"])
    if bos:
        tok.post_processor = processors.TemplateProcessing(single=f"{bos} $A", special_tokens=[(bos, vocab[bos])])
    tok.save(str(folder / "tokenizer.json"))
    settings = {"tokenizer_class": tokenizer_class, "eos_token": "<|endoftext|>", "bos_token": bos}
    (folder / "tokenizer_config.json").write_text(json.dumps(settings))


FAMILIES = {
    # kind: (config class, model class, tokenizer, config extras)
    "llama": ("LlamaConfig", "LlamaForCausalLM", "spm", dict(rope_theta=500.0, tie_word_embeddings=False)),
    "mistral": ("MistralConfig", "MistralForCausalLM", "spm", dict(rope_theta=2000.0, sliding_window=None)),
    # a sliding window shorter than the test texts: every layer local, equal to transformers' Mistral
    "mistral_window": ("MistralConfig", "MistralForCausalLM", "spm", dict(rope_theta=2000.0, sliding_window=4)),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", "qwen2", dict(rope_theta=1e6, tie_word_embeddings=True)),
    "llama3": ("LlamaConfig", "LlamaForCausalLM", "llama3", dict(rope_theta=5e5, num_key_value_heads=1)),
    "smollm": ("LlamaConfig", "LlamaForCausalLM", "smollm", dict(rope_theta=1e4, tie_word_embeddings=True)),
}
TOKENIZER_CLASSES = {"qwen2": ("Qwen2Tokenizer", None), "smollm": ("GPT2Tokenizer", None),
                     "llama3": ("PreTrainedTokenizerFast", "<|begin_of_text|>")}  # fmt: skip


def make_folder(kind: str, folder):
    """(folder, transformers' model read back with eager attention, AutoTokenizer) for a FAMILIES row."""
    config_name, model_name, tokenizer, extras = FAMILIES[kind]
    folder.mkdir(parents=True)
    if tokenizer == "spm":
        sentencepiece_style(folder)
    else:
        byte_level(folder, *TOKENIZER_CLASSES[tokenizer])
    auto = transformers.AutoTokenizer.from_pretrained(folder)
    values = {"num_key_value_heads": 2, **SIZES, **extras, "vocab_size": len(auto)}
    values["bos_token_id"] = auto.bos_token_id if auto.bos_token_id is not None else auto.eos_token_id
    values["eos_token_id"] = auto.eos_token_id
    torch.manual_seed(0)
    model = getattr(transformers, model_name)(getattr(transformers, config_name)(**values))
    with torch.no_grad():  # weights large enough that heads and next tokens are far from ties
        for name, p in model.named_parameters():
            p.copy_(1 + 0.1 * torch.randn_like(p) if "norm" in name else 0.25 * torch.randn_like(p))
    model.save_pretrained(folder)
    reference = getattr(transformers, model_name).from_pretrained(folder, attn_implementation="eager").eval()
    return folder, reference, auto


@pytest.fixture(scope="module", params=list(FAMILIES))
def family(request, tmp_path_factory):
    torch.set_num_threads(1)
    folder, reference, auto = make_folder(request.param, tmp_path_factory.mktemp("hf") / request.param)
    return request.param, load_model(folder, "cpu"), reference, auto


def test_config_says_rotary_rms_swiglu_and_grouped_heads(family):
    kind, ours, reference, _ = family
    config = ours.config
    theta = FAMILIES[kind][3]["rope_theta"]
    assert (config.positional, config.pe_base, config.norm_style, config.gated_ffn) == ("rotary", theta, "rms", True)
    assert config.kv_heads == reference.config.num_key_value_heads
    assert config.qkv_bias == (kind == "qwen2") and config.tie_output_embedding == (kind in ("qwen2", "smollm"))
    assert kv_head_of(config.num_heads, config.num_kv_heads)[:2] == (0, 0)
    model = ours.model
    tied = model.output.weight is model.embedding.tokens.weight
    assert tied == config.tie_output_embedding  # built on the meta device, then given the file's tensors
    assert sum(p.numel() for p in model.parameters()) == sum(p.numel() for p in reference.parameters())
    assert all(p.dtype == torch.float32 and p.device.type == "cpu" for p in model.parameters())
    assert all(b.device.type == "cpu" for b in model.buffers())  # rotary frequencies computed, not left on meta
    window = FAMILIES[kind][3].get("sliding_window")
    assert (config.local_window, config.local_layers) == ((window, (0, 1)) if window else (0, ()))
    assert config.max_len == reference.config.max_position_embeddings  # a window no longer limits the input


def test_every_layers_and_heads_attention_and_the_logits_equal_transformers(family):
    _, ours, reference, auto = family
    ids = auto("the movie was great , 정말 재미 있다 😀 and the plot !")["input_ids"]
    batch = torch.tensor([ids])
    with torch.no_grad():
        theirs = reference(batch, output_attentions=True)
        mine = ours.model(batch, need_weights=True)
    assert torch.allclose(mine.logits, theirs.logits, atol=TOLERANCE)
    assert len(mine.attention) == len(theirs.attentions) == 2
    for layer, (a, b) in enumerate(zip(mine.attention, theirs.attentions)):
        assert a.weights.shape == b.shape == (1, 4, len(ids), len(ids)), layer
        assert torch.allclose(a.weights, b, atol=TOLERANCE), layer


def test_greedy_continuation_equals_generate(family):
    _, ours, reference, auto = family
    prompt = auto("this movie was")["input_ids"]
    with torch.no_grad():
        expected = reference.generate(
            torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.long), do_sample=False,
            max_new_tokens=12, pad_token_id=0,
        )[0].tolist()  # fmt: skip
    got = generate(ours.model, prompt, 12, Sampling(greedy=True), stop_at=ours.config.eos_id)
    assert got.ids == expected and len(expected) > len(prompt) + 3


def test_cached_decoding_equals_the_full_pass(family):
    _, ours, _, auto = family
    ids = torch.tensor([auto("the film was boring but the actor was good , 영화 최고")["input_ids"]])
    with torch.no_grad():
        full = ours.model(ids, need_weights=True)
    out = forward_cached(ours.model, ids[:, :4], need_weights=True)
    pieces = [out.logits]
    for t in range(4, ids.shape[1]):
        out = forward_cached(ours.model, ids[:, t : t + 1], out.cache, need_weights=True)
        pieces.append(out.logits)
    assert torch.allclose(torch.cat(pieces, 1), full.logits, atol=TOLERANCE)
    for layer in range(2):
        assert torch.allclose(out.attention[layer][:, :, 0], full.attention[layer].weights[:, :, -1], atol=TOLERANCE)


def test_token_ids_equal_auto_tokenizers_on_fuzzed_text(family):
    _, ours, _, auto = family
    texts = fuzzed_texts(60, seed=7) + ["", " ", "  leading spaces", "Hello\nworld", "😀👍🏽 이모지", "ÅNGSTRÖM café"]
    texts += [
        "a<s>b",
        "the </s> end",
        "<|endoftext|>movie",
        "x<|begin_of_text|>y",
        "<s>hi</s>",
        "숫자 2021-03-03",
        "Ｆｕｌｌ　ｗｉｄｔｈ",
        "e\u0301 composed",
    ]
    for text in texts:
        assert ours.lm_tokenizer.encode(text).ids == auto(text)["input_ids"], repr(text)
    assert ours.lm_tokenizer.decode(auto("the movie")["input_ids"], skip_special_tokens=True) == auto.decode(
        auto("the movie")["input_ids"], skip_special_tokens=True
    )


def test_start_token_is_added_only_where_the_tokenizer_adds_it(family):
    kind, ours, _, auto = family
    first = ours.lm_tokenizer.encode("the movie").ids[0]
    starts = {"llama": "<s>", "mistral": "<s>", "llama3": "<|begin_of_text|>"}
    assert (auto.convert_ids_to_tokens(first) == starts[kind]) if kind in starts else first != auto.eos_token_id


@pytest.mark.parametrize(("start_token", "add_bos"), [(False, True), (True, False)])
def test_start_token_comes_from_tokenizer_json_not_the_config_flags(tmp_path, start_token, add_bos):
    """transformers 5 ignores add_bos_token where a tokenizer.json is present: its post-processor decides."""
    folder = tmp_path / "bos"
    folder.mkdir()
    sentencepiece_style(folder, start_token, add_bos)
    auto = transformers.AutoTokenizer.from_pretrained(folder)
    config = transformers.LlamaConfig(**SIZES, num_key_value_heads=2, vocab_size=len(auto))
    transformers.LlamaForCausalLM(config).save_pretrained(folder)
    ours = load_model(folder, "cpu")
    for text in fuzzed_texts(10, seed=3):
        assert ours.lm_tokenizer.encode(text).ids == auto(text)["input_ids"]
    assert (ours.lm_tokenizer.encode("movie").ids[0] == 1) == start_token  # <s> is id 1


def test_scaled_rotary_positions_are_refused_with_a_message(tmp_path):
    folder = tmp_path / "llama31"
    folder.mkdir()
    sentencepiece_style(folder)
    scaling = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 32, "rope_theta": 500000.0}  # fmt: skip
    config = transformers.LlamaConfig(**SIZES, vocab_size=300, rope_parameters=scaling)
    transformers.LlamaForCausalLM(config).save_pretrained(folder)
    with pytest.raises(CheckpointError, match="llama3"):
        load_model(folder, "cpu")


def test_direct_logit_contributions_add_up_to_the_logit(family):
    """The residual-stream tools hold RMSNorm at its forward scale: every head's, feed-forward's and the
    embedding's share of the top token's logit add up to the model's logit."""
    _, ours, _, auto = family
    ids = torch.tensor([auto("the movie was great and")["input_ids"]])
    parts = contributions(ours.model, ids)
    with torch.no_grad():
        logit = float(ours.model(ids).logits[0, -1, parts.token])
    assert parts.values.sum() == pytest.approx(logit, abs=1e-4)
    assert list(parts.kinds).count("head") == 2 * 4  # a share per query head


def test_a_half_precision_folder_loads_as_float32(tmp_path):
    folder = tmp_path / "half"
    folder.mkdir()
    sentencepiece_style(folder)
    auto = transformers.AutoTokenizer.from_pretrained(folder)
    config = transformers.LlamaConfig(**SIZES, num_key_value_heads=2, vocab_size=len(auto), tie_word_embeddings=True)
    torch.manual_seed(1)
    transformers.LlamaForCausalLM(config).to(torch.bfloat16).save_pretrained(folder)
    ours = load_model(folder, "cpu")
    reference = transformers.LlamaForCausalLM.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager")
    assert all(p.dtype == torch.float32 for p in ours.model.parameters())
    ids = torch.tensor([auto("the movie was great")["input_ids"]])
    with torch.no_grad():
        assert torch.allclose(ours.model(ids).logits, reference(ids).logits, atol=TOLERANCE)
