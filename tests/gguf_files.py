"""Tiny GGUF files written by the tests with ``gguf.GGUFWriter``, the way llama.cpp's converter writes
them: a random transformers Llama or Qwen2 model (its weights in the given GGML type, quantised with
``gguf.quants.quantize``; norms in F32), the query/key rows of ``llama`` files permuted as the
converter permutes them, and a vocabulary in the file's metadata (byte-level ``gpt2`` or
SentencePiece-style ``llama``, with or without merges)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from gguf import GGMLQuantizationType, GGUFWriter
from gguf.quants import quantize

from tests.hf_models import bpe_parts, fuzzed_texts

SIZES = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)
CONTEXT = 64
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + "
    "'\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
BYTES = [f"<0x{i:02X}>" for i in range(256)]
NAMES = {  # Hugging Face's names -> llama.cpp's (inside model.layers.N / blk.N)
    "input_layernorm": "attn_norm",
    "post_attention_layernorm": "ffn_norm",
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}


@dataclass(frozen=True)
class Case:
    """One tiny file: architecture, vocabulary kind, weight type, tied output, merges in the file."""

    arch: str = "llama"
    vocab: str = "gpt2"  # "gpt2" (byte-level) or "llama" (SentencePiece-style)
    qtype: GGMLQuantizationType = GGMLQuantizationType.F32
    tied: bool = False
    merges: bool = True  # a "llama" vocabulary without merges has them rebuilt from its scores
    pre: str = "smollm"
    name: str = "tiny"  # general.name
    add_bos: bool | None = None
    extra_tokens: int = 0  # tokens listed past the embedding's rows (another model's vocabulary)
    template: str = CHAT_TEMPLATE  # tokenizer.chat_template
    unused: str = ""  # the name of one more tensor (1-d, F32) that no model uses

    @property
    def id(self) -> str:
        merges = "" if self.merges else "-scores"
        return f"{self.arch}-{self.vocab}{merges}-{self.qtype.name}-{'tied' if self.tied else 'untied'}-{self.name.split()[0]}"


def byte_level_vocab() -> tuple[list[str], list[str], list[int]]:
    """(tokens, merges, token types) of a byte-level BPE trained here, control tokens first."""
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    vocab, merges = bpe_parts(specials)
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    types = [3 if t in specials else 1 for t in tokens]
    return tokens, [f"{a} {b}" for a, b in merges], types


def sentencepiece_vocab() -> tuple[list[str], list[str], list[int], list[float]]:
    """(tokens, merges, types, scores) of a SentencePiece-style BPE (``▁`` for spaces, byte tokens)."""
    from tokenizers import Tokenizer, models, normalizers, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    specials = ["<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>", *BYTES]
    trainer = trainers.BpeTrainer(vocab_size=500, special_tokens=specials, show_progress=False)
    tok.train_from_iterator([t.lower() for t in fuzzed_texts(200, seed=1)], trainer)
    import json

    model = json.loads(tok.to_str())["model"]
    tokens = [t for t, _ in sorted(model["vocab"].items(), key=lambda kv: kv[1])]
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    types = [2 if t == "<unk>" else 3 if t in specials[1:5] else 6 if t in BYTES else 1 for t in tokens]
    scores = [0.0 if types[i] != 1 else -float(i) for i in range(len(tokens))]
    return tokens, merges, types, scores


def reference_model(case: Case, vocab_size: int, bos: int, eos: int, seed: int = 0):
    """A random transformers model of the case's architecture, weights far from ties."""
    import transformers

    config_class, model_class = (
        ("Qwen2Config", "Qwen2ForCausalLM") if case.arch == "qwen2" else ("LlamaConfig", "LlamaForCausalLM")
    )
    config = getattr(transformers, config_class)(
        **SIZES, vocab_size=vocab_size, max_position_embeddings=CONTEXT, tie_word_embeddings=case.tied,
        rms_norm_eps=1e-5, rope_theta=5000.0, bos_token_id=bos, eos_token_id=eos,
    )  # fmt: skip
    torch.manual_seed(seed)
    model = getattr(transformers, model_class)(config)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(1 + 0.1 * torch.randn_like(p) if "norm" in name else 0.25 * torch.randn_like(p))
    return model.eval()


def llama_cpp_permute(w: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's ``LlamaModel.permute``: each head's rows from (2, pairs) to (pairs, 2)."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def gguf_name(hf: str) -> str:
    if hf == "model.embed_tokens.weight":
        return "token_embd.weight"
    if hf == "model.norm.weight":
        return "output_norm.weight"
    if hf == "lm_head.weight":
        return "output.weight"
    _, _, index, rest = hf.split(".", 3)
    stem, suffix = rest.rsplit(".", 1)
    return f"blk.{index}.{NAMES[stem]}.{suffix}"


def write_case(case: Case, path: Path, seed: int = 0):
    """Write ``case`` to ``path``; returns the transformers model whose weights were written (before quantising)."""
    if case.vocab == "gpt2":
        tokens, merges, types = byte_level_vocab()
        scores = None
        bos, eos = tokens.index("<|im_start|>"), tokens.index("<|im_end|>")
    else:
        tokens, merges, types, scores = sentencepiece_vocab()
        bos, eos = 1, 2
    model = reference_model(case, len(tokens), bos, eos, seed)
    writer = GGUFWriter(str(path), case.arch)
    writer.add_name(case.name)
    writer.add_context_length(CONTEXT)
    writer.add_embedding_length(SIZES["hidden_size"])
    writer.add_block_count(SIZES["num_hidden_layers"])
    writer.add_feed_forward_length(SIZES["intermediate_size"])
    writer.add_head_count(SIZES["num_attention_heads"])
    writer.add_head_count_kv(SIZES["num_key_value_heads"])
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_freq_base(5000.0)
    writer.add_rope_dimension_count(SIZES["hidden_size"] // SIZES["num_attention_heads"])
    writer.add_vocab_size(len(tokens))
    if case.extra_tokens:
        tokens = tokens + [f"extra{i}" for i in range(case.extra_tokens)]
        types = types + [1] * case.extra_tokens
        scores = None if scores is None else scores + [0.0] * case.extra_tokens
    writer.add_tokenizer_model(case.vocab)
    if case.vocab == "gpt2":
        writer.add_tokenizer_pre(case.pre)
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    if scores is not None:
        writer.add_token_scores(scores)
    if case.merges:
        writer.add_token_merges(merges)
    writer.add_bos_token_id(bos)
    writer.add_eos_token_id(eos)
    if case.add_bos is not None:
        writer.add_add_bos_token(case.add_bos)
    writer.add_chat_template(case.template)
    for name, tensor in model.state_dict().items():
        if case.tied and name == "lm_head.weight":
            continue
        _add(writer, case, gguf_name(name), tensor.detach().numpy().astype(np.float32))
    if case.unused:
        writer.add_tensor(case.unused, np.ones(SIZES["hidden_size"], dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return model


def _add(writer: GGUFWriter, case: Case, name: str, values: np.ndarray) -> None:
    if case.arch == "llama" and (".attn_q." in name or ".attn_k." in name):
        heads = SIZES["num_attention_heads"] if ".attn_q." in name else SIZES["num_key_value_heads"]
        values = llama_cpp_permute(values, heads)
    if values.ndim == 1 or case.qtype == GGMLQuantizationType.F32:
        writer.add_tensor(name, values)
    elif case.qtype == GGMLQuantizationType.F16:
        writer.add_tensor(name, values.astype(np.float16))
    else:
        writer.add_tensor(name, quantize(values, case.qtype), raw_dtype=case.qtype)
