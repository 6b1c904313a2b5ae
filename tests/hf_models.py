"""Tiny Hugging Face model folders made by the tests: random weights from a config written here,
saved with ``save_pretrained`` beside a tokenizer built here (WordPiece or byte-level BPE)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import torch

WORDS_EN = "the movie was great bad not good actor plot really a an is it this that film story boring".split()
WORDS_KO = "영화 정말 재미 있다 없다 배우 연기 좋아요 별로 최고 이야기 는 가 를 도".split()
SYMBOLS = list(".,!?'\"()-:;") + ["...", "2021", "42", "café", "naïve", "😀", "  ", "\t"]
SIZES = {"hidden": 32, "heads": 4, "layers": 2, "ff": 64, "positions": 64}


def fuzzed_texts(count: int = 30, seed: int = 0) -> list[str]:
    """English, Korean and mixed strings with punctuation, digits, accents, emoji and odd spacing."""
    rng = random.Random(seed)
    pools = (WORDS_EN, WORDS_KO, WORDS_EN + WORDS_KO + SYMBOLS)
    texts = []
    for i in range(count):
        pool = pools[i % 3]
        words = [rng.choice(pool) for _ in range(rng.randint(1, 12))]
        if rng.random() < 0.3:
            words = [w.capitalize() for w in words]
        texts.append(rng.choice([" ", " ", "", "  "]).join(words) or "a")
    return texts


def wordpiece_vocab() -> list[str]:
    chars = sorted({c for w in WORDS_EN + WORDS_KO for c in w.lower()} | set("0123456789.,!?'\"()-:;é"))
    words = sorted({w for w in WORDS_EN + WORDS_KO} - set(chars))
    return ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *chars, *("##" + c for c in chars), *words]


def bert_tokenizer(folder: Path, lower: bool = True):
    from transformers import BertTokenizer

    vocab = {t: i for i, t in enumerate(wordpiece_vocab())}
    tok = BertTokenizer(vocab=vocab, do_lower_case=lower)
    tok.save_pretrained(folder)
    return tok


def bpe_parts(specials: list[str]) -> tuple[dict[str, int], list[tuple[str, str]]]:
    from tokenizers import ByteLevelBPETokenizer

    trainer = ByteLevelBPETokenizer()
    corpus = fuzzed_texts(200, seed=1)
    trainer.train_from_iterator(corpus, vocab_size=300, min_frequency=2, special_tokens=specials, show_progress=False)
    merges = json.loads(trainer.to_str())["model"]["merges"]
    return trainer.get_vocab(), [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in merges]


def roberta_tokenizer(folder: Path):
    from transformers import RobertaTokenizer

    vocab, merges = bpe_parts(["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    tok = RobertaTokenizer(vocab=vocab, merges=merges)
    tok.save_pretrained(folder)
    return tok


def gpt2_tokenizer(folder: Path):
    from transformers import GPT2Tokenizer

    vocab, merges = bpe_parts(["<|endoftext|>"])
    tok = GPT2Tokenizer(vocab=vocab, merges=merges)
    tok.save_pretrained(folder)
    return tok


ARCHITECTURES = {
    "bert-cls": ("bert", "BertForSequenceClassification"),
    "bert-mlm": ("bert", "BertForMaskedLM"),
    "bert-bare": ("bert", "BertModel"),
    "roberta-cls": ("roberta", "RobertaForSequenceClassification"),
    "roberta-mlm": ("roberta", "RobertaForMaskedLM"),
    "electra-cls": ("electra", "ElectraForSequenceClassification"),
    "electra-mlm": ("electra", "ElectraForMaskedLM"),
    "distilbert-cls": ("distilbert", "DistilBertForSequenceClassification"),
    "distilbert-mlm": ("distilbert", "DistilBertForMaskedLM"),
    "gpt2": ("gpt2", "GPT2LMHeadModel"),
}


def hf_config(family: str, vocab_size: int, **extra):
    import transformers as T

    s = SIZES
    labels = {"id2label": {0: "NEG", 1: "NEUTRAL", 2: "POS"}, "label2id": {"NEG": 0, "NEUTRAL": 1, "POS": 2}}
    if family == "gpt2":
        return T.GPT2Config(
            vocab_size=vocab_size,
            n_embd=s["hidden"],
            n_head=s["heads"],
            n_layer=s["layers"],
            n_positions=s["positions"],
            bos_token_id=0,
            eos_token_id=0,
            **extra,
        )
    if family == "distilbert":
        return T.DistilBertConfig(
            vocab_size=vocab_size,
            dim=s["hidden"],
            n_heads=s["heads"],
            n_layers=s["layers"],
            hidden_dim=s["ff"],
            max_position_embeddings=s["positions"],
            **labels,
            **extra,
        )
    cls = {"bert": T.BertConfig, "roberta": T.RobertaConfig, "electra": T.ElectraConfig}[family]
    if family == "electra":
        extra.setdefault("embedding_size", 16)
    if family == "roberta":
        extra.setdefault("pad_token_id", 1)
    return cls(
        vocab_size=vocab_size,
        hidden_size=s["hidden"],
        num_attention_heads=s["heads"],
        num_hidden_layers=s["layers"],
        intermediate_size=s["ff"],
        max_position_embeddings=s["positions"] + (2 if family == "roberta" else 0),
        **labels,
        **extra,
    )


def make_folder(arch: str, folder: Path, seed: int = 0, **config_extra):
    """(folder, reference model in eval mode with eager attention, reference tokenizer)."""
    import transformers as T

    family, class_name = ARCHITECTURES[arch]
    folder.mkdir(parents=True, exist_ok=True)
    make_tok = {"roberta": roberta_tokenizer, "gpt2": gpt2_tokenizer}.get(family, bert_tokenizer)
    tok = make_tok(folder)
    config = hf_config(family, len(tok), **config_extra)
    torch.manual_seed(seed)
    model = getattr(T, class_name)(config)
    _randomise(model)
    model.save_pretrained(folder)
    reference = getattr(T, class_name).from_pretrained(folder, attn_implementation="eager").eval()
    return folder, reference, tok


def reference_greedy(reference, ids: list[int], steps: int):
    """(prompt + generated ids, each step's softmax (steps, V)) from ``transformers``' greedy generate."""
    with torch.no_grad():
        out = reference.generate(
            torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long), do_sample=False,
            max_new_tokens=steps, output_logits=True, return_dict_in_generate=True, pad_token_id=0,
        )  # fmt: skip
    return out.sequences[0].tolist(), torch.softmax(torch.stack(out.logits)[:, 0].double(), -1).numpy()


def _randomise(model) -> None:
    """Larger random weights than the default init (biases and norms too), so every part matters."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.normal_(0.0, 0.3 if p.dim() > 1 else 0.2)
            if "LayerNorm.weight" in name or "ln_" in name or "layer_norm.weight" in name:
                p.add_(1.0)


def tiny_marian_config(vocab_size: int, pad: int, eos: int = 0, **changes):
    """A tiny MarianConfig (d 32, 2 + 2 layers, 4 heads, swish, scaled embeddings) as the Marian tests build it."""
    import transformers

    values = dict(
        vocab_size=vocab_size, d_model=32, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
        activation_function="swish", scale_embedding=True, max_position_embeddings=64,
        pad_token_id=pad, decoder_start_token_id=pad, eos_token_id=eos, forced_eos_token_id=None,
    )  # fmt: skip
    return transformers.MarianConfig(**(values | changes))
