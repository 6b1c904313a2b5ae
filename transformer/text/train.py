"""Train the encoder classifier on IMDB: ``python -m transformer.text.train --help``.

Recipe: basic_english tokens, a vocabulary from the training split, batches bucketed by
length, AdamW with linear warm-up and decay, the best epoch by validation accuracy, then
one evaluation on the full test split. Results go to metrics.json beside the weights.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import random
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from tqdm import tqdm

from ..analysis.analyze import pad_ids
from ..bundle import load_bundle, save_bundle
from ..core.config import ModelConfig
from ..core.devices import resolve_device
from ..core.model import SequenceClassifier
from ..core.pieces import PieceSplitter, train_wordpiece
from ..core.tokenizer import TextEncoder, Vocab, basic_english
from ..datasets.imdb import default_imdb_path, load_imdb, train_val_split
from .contrast import HELD_OUT, contrast_sentences
from .corpora import default_nsmc_dir, default_sst2_path, load_nsmc, load_sst2
from .evaluate import evaluate_ids
from .morphemes import SPLITTERS
from .pretrain import MASK, MaskedLMHead, pretrain_epoch

LABELS = ("negative", "positive")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m transformer.text.train",
        description="Train the Attention Lab sentiment classifier on IMDB and save it as a bundled model.",
    )
    p.add_argument(
        "--data",
        default=None,
        help="aclImdb/ folder or aclImdb_v1.tar.gz (default: $ATTENTION_LAB_IMDB or ../shared/data/aclImdb.tar.gz); "
        "for nsmc the folder of the NSMC-style files (default: ../shared/data/nsmc)",
    )
    p.add_argument("--out", default="assets/models/imdb-sentiment", help="output bundled-model folder")
    p.add_argument("--dataset", default="imdb", choices=["imdb", "imdb+sst2", "nsmc"], help="what to train on")
    p.add_argument("--sst2", default=None, help="stsa.binary.train (default: ../shared/data/sst2/stsa.binary.train)")
    p.add_argument(
        "--init-from", default=None, help="a bundled classifier to go on training (its vocabulary and sizes are kept)"
    )
    p.add_argument("--sst2-repeat", type=int, default=1, help="times SST-2's training sentences appear per epoch")
    p.add_argument(
        "--contrast",
        type=int,
        default=0,
        help="English only: add this many short template sentences about negation and contrast to the training "
        "split (transformer.text.contrast; never to validation or test)",
    )
    p.add_argument(
        "--tokenizer",
        default="basic_english",
        choices=["basic_english", "wordpiece", "syllables", "mecab", "kiwi"],
        help="basic_english words; WordPiece pieces learned on the train split (saved as tokenizer.json); "
        "syllables, or morphemes from mecab-ko / kiwipiepy (comparison runs: metrics only)",
    )
    p.add_argument("--d-model", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--d-ff", type=int, default=128)
    p.add_argument("--max-len", type=int, default=512, help="longest input the model accepts")
    p.add_argument("--train-len", type=int, default=400, help="truncation length used in training")
    p.add_argument("--eval-lens", default="128,256,400,512", help="truncation lengths compared on validation")
    p.add_argument("--vocab-size", type=int, default=30000)
    p.add_argument("--min-freq", type=int, default=2)
    p.add_argument("--pooling", default="mean_max", choices=["mean", "max", "mean_max", "first", "cls"])
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--attention-dropout", type=float, default=0.0, help="dropout on the attention weights")
    p.add_argument("--no-scale-embedding", action="store_true", help="do not multiply embeddings by sqrt(d_model)")
    p.add_argument("--embedding-std", type=float, default=0.0, help="initial std of token embeddings (0: the default)")
    p.add_argument("--label-smoothing", type=float, default=0.0)
    p.add_argument(
        "--ema", type=float, default=0.0, help="decay of an average of the weights that is evaluated and saved (0: off)"
    )
    p.add_argument(
        "--consistency", type=float, default=0.0, help="R-Drop weight: KL between two dropout passes (0: off)"
    )
    p.add_argument("--word-dropout", type=float, default=0.0, help="chance that a training token becomes <unk>")
    p.add_argument(
        "--keep-weight",
        type=float,
        default=0.0,
        help="with --init-from: weight of a KL term that keeps the model's answers on the first dataset's training "
        "examples (IMDB's reviews in imdb+sst2) close to those of the model it started from (learning without "
        "forgetting); the added short sentences are learned freely (0: off)",
    )
    p.add_argument(
        "--adversarial",
        type=float,
        default=0.0,
        help="adversarial training on the token embeddings (Miyato et al., 2017): each review's embeddings are also "
        "pushed by this L2 norm in the direction that raises its loss, and the loss there is added (0: off)",
    )
    p.add_argument(
        "--ngram-teacher",
        type=float,
        default=0.0,
        help="weight of distillation from an out-of-fold TF-IDF 1–2-gram + logistic-regression teacher "
        "(transformer/text/ngram_teacher.py): the loss is (1 − W) × cross-entropy with the label + W × "
        "cross-entropy with the teacher's probabilities (0: off)",
    )
    p.add_argument(
        "--mlm-epochs",
        type=int,
        default=0,
        help="masked-language-model pre-training epochs on the train texts (0: off)",
    )
    p.add_argument(
        "--pretrained-out",
        default=None,
        help="also save the encoder right after masked-LM pre-training (an untrained head) to this folder, "
        "so that fine-tuning can be tried again from it with --init-from",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="go on with a masked-LM pre-training that was cut off: its state is saved after every epoch as "
        "pretrain_state.pt in the --out folder, and the epochs it finished are not run again",
    )
    p.add_argument("--mlm-rate", type=float, default=0.15, help="share of tokens hidden in pre-training")
    p.add_argument("--mlm-lr", type=float, default=0.0, help="peak learning rate of pre-training (0: --lr)")
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--warmup", type=float, default=0.1, help="fraction of steps spent warming up")
    p.add_argument("--val-fraction", type=float, default=0.1)
    p.add_argument(
        "--val-block",
        type=int,
        default=1,
        help="IMDB: carve validation as runs of this many consecutive review ids (ids run film by film, so "
        "runs share fewer films with training, as test shares none); 1: single reviews",
    )
    p.add_argument(
        "--seed", type=int, default=13, help="the train/validation split (and, unless --train-seed, training)"
    )
    p.add_argument(
        "--train-seed",
        type=int,
        default=None,
        help="initialisation, batch order, masking and dropout only; the split stays --seed's (default: --seed)",
    )
    p.add_argument("--device", default="auto", help="auto | cpu | cuda | mps")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: PyTorch's default)")
    p.add_argument("--limit", type=int, default=0, help="use only this many reviews per split (quick runs, tests)")
    return p.parse_args(argv)


def set_seed(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def bucket_batches(lengths: list[int], batch_size: int, rng: random.Random) -> list[list[int]]:
    """Indices grouped into batches of similar length (little padding), in shuffled batch order."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], rng.random()))
    batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    rng.shuffle(batches)
    return batches


def lr_factor(step: int, total: int, warmup: int) -> float:
    """Linear warm-up to 1, then linear decay to 0."""
    if step < warmup:
        return (step + 1) / warmup
    return max(0.0, (total - step) / max(1, total - warmup))


def encode_all(encoder: TextEncoder, texts: list[str], max_len: int, add_cls: bool) -> list[list[int]]:
    return [e.ids if e.ids else [encoder.vocab.unk_id] for e in encoder.encode_batch(texts, max_len, add_cls)]


@torch.no_grad()
def init_embeddings(model: SequenceClassifier, std: float) -> None:
    table = model.encoder.embedding.tokens.weight
    table.normal_(0.0, std)
    table[model.config.pad_id].zero_()


def drop_words(ids: torch.Tensor, pad_id: int, unk_id: int, p: float) -> torch.Tensor:
    """Replace each real token by <unk> with probability p: the model must not lean on single rare words."""
    if p <= 0:
        return ids
    hit = (torch.rand(ids.shape, device=ids.device) < p) & (ids != pad_id)
    return ids.masked_fill(hit, unk_id)


@dataclass
class Optimisation:
    """What one training step needs besides the model and the batch."""

    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    device: torch.device
    amp_dtype: torch.dtype | None
    unk_id: int
    word_dropout: float
    label_smoothing: float
    ema: ExponentialAverage | None
    consistency: float = 0.0
    teacher: nn.Module | None = None  # the model training started from (--keep-weight), frozen
    keep_weight: float = 0.0
    soft_targets: torch.Tensor | None = None  # (N, K) the n-gram teacher's probability per training example
    ngram_weight: float = 0.0  # --ngram-teacher
    adversarial: float = 0.0  # --adversarial: the L2 norm of each example's push on its token embeddings


class ExponentialAverage:
    """An exponential moving average of a model's weights (evaluated in its place: smoother, better on new data)."""

    def __init__(self, model: nn.Module, decay: float) -> None:
        self.decay = decay
        self.model = copy.deepcopy(model).eval()
        for p in self.model.parameters():
            p.requires_grad_(False)

    @torch.no_grad()
    def update(self, model: nn.Module) -> None:
        for avg, live in zip(self.model.parameters(), model.parameters()):
            avg.lerp_(live, 1.0 - self.decay)


def batch_loss(
    model,
    inputs: torch.Tensor,
    target: torch.Tensor,
    opt: Optimisation,
    kept: torch.Tensor | None = None,
    soft: torch.Tensor | None = None,
) -> torch.Tensor:
    """Cross-entropy; with ``opt.consistency`` > 0, R-Drop (Liang et al., 2021): two passes under different
    dropout, their mean cross-entropy plus that weight times the symmetric KL divergence between them.
    kept (B,) bool, with ``opt.teacher``: rows whose answers are kept near the teacher's (:func:`keep_loss`).
    soft (B, K), with ``opt.ngram_weight`` > 0: the n-gram teacher's probabilities, mixed into the target."""
    if opt.adversarial > 0:
        return adversarial_loss(model, inputs, target, opt)
    passes = 2 if opt.consistency > 0 else 1
    with torch.autocast(opt.device.type, dtype=opt.amp_dtype, enabled=opt.amp_dtype is not None):
        logits = model(inputs.repeat(passes, 1)).logits.float()  # (passes * B, K)
    loss = F.cross_entropy(logits, target.repeat(passes), label_smoothing=opt.label_smoothing)
    if soft is not None and opt.ngram_weight > 0:
        taught = F.cross_entropy(logits, soft.repeat(passes, 1))
        loss = (1.0 - opt.ngram_weight) * loss + opt.ngram_weight * taught
    if opt.teacher is not None and kept is not None and bool(kept.any()):
        loss = loss + opt.keep_weight * keep_loss(logits[: len(inputs)], opt.teacher, inputs, kept)
    if passes == 1:
        return loss
    a, b = F.log_softmax(logits, -1).chunk(2)
    kl = F.kl_div(a, b, log_target=True, reduction="batchmean") + F.kl_div(b, a, log_target=True, reduction="batchmean")
    return loss + opt.consistency * kl / 2


def adversarial_loss(model, inputs: torch.Tensor, target: torch.Tensor, opt: Optimisation) -> torch.Tensor:
    """Cross-entropy on the batch plus cross-entropy with each example's token embeddings (B, T, D) moved by
    r = ε g / ‖g‖ (g: the gradient of the loss with respect to that example's embeddings, the norm over all of
    its T × D numbers): the step of size ε that raises its loss most, to first order (Miyato et al., 2017;
    Goodfellow et al., 2015). inputs (B, T) ids; ε is ``opt.adversarial``."""
    with torch.autocast(opt.device.type, dtype=opt.amp_dtype, enabled=opt.amp_dtype is not None):
        embedded = model.encoder.embedding.token_embeddings(inputs)
        clean = F.cross_entropy(model(inputs, token_embeddings=embedded).logits.float(), target)
        (gradient,) = torch.autograd.grad(clean, embedded, retain_graph=True)
        norm = gradient.flatten(1).norm(dim=1).clamp_min(1e-12)[:, None, None]
        push = (opt.adversarial * gradient / norm).detach()
        pushed = F.cross_entropy(model(inputs, token_embeddings=embedded + push).logits.float(), target)
    return clean + pushed


def keep_loss(logits: torch.Tensor, teacher: nn.Module, inputs: torch.Tensor, kept: torch.Tensor) -> torch.Tensor:
    """KL(teacher ‖ model) over the rows in ``kept``, summed and divided by the batch size B (so a batch with
    fewer such rows pulls less), as in learning without forgetting (Li & Hoiem, 2016) at temperature 1.
    logits (B, K) the model's; inputs (B, T) ids; kept (B,) bool."""
    with torch.no_grad():
        target = F.log_softmax(teacher(inputs[kept]).logits.float(), -1)
    log_p = F.log_softmax(logits[kept], -1)
    return F.kl_div(log_p, target, log_target=True, reduction="sum") / len(inputs)


def train_epoch(model, batches, seqs, labels, opt: Optimisation, epoch: int, kept_below: int = 0) -> float:
    """One pass over ``batches`` (lists of example indices); returns the mean loss. Examples with an index
    below ``kept_below`` are the ones :func:`keep_loss` applies to (with ``opt.teacher``)."""
    model.train()
    total_loss, total_tokens, start = 0.0, 0, time.perf_counter()
    bar = tqdm(batches, desc=f"epoch {epoch}", unit="batch", leave=False, mininterval=10.0)
    for batch in bar:
        ids = pad_ids([seqs[i] for i in batch], model.config.pad_id).to(opt.device)
        target = torch.tensor([labels[i] for i in batch], device=opt.device)
        inputs = drop_words(ids, model.config.pad_id, opt.unk_id, opt.word_dropout)
        kept = torch.tensor([i < kept_below for i in batch], device=opt.device) if opt.teacher is not None else None
        soft = opt.soft_targets[batch].to(opt.device) if opt.soft_targets is not None else None
        loss = batch_loss(model, inputs, target, opt, kept, soft)
        opt.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.optimizer.step()
        opt.scheduler.step()
        if opt.ema is not None:
            opt.ema.update(model)
        total_loss += loss.item() * len(batch)
        total_tokens += int((ids != model.config.pad_id).sum())
        rate = total_tokens / (time.perf_counter() - start)
        bar.set_postfix(loss=f"{loss.item():.3f}", tok_s=f"{rate:,.0f}", refresh=False)
    return total_loss / sum(len(b) for b in batches)


def pretrain(
    model: SequenceClassifier, vocab: Vocab, seqs, args, rng, device, n_specials: int, splitter=None
) -> list[dict]:
    """Masked-LM pre-training of ``model.encoder`` on ``seqs`` for ``args.mlm_epochs`` epochs (no labels); the
    state saved after every epoch holds the vocabulary (and ``splitter``'s tokenizer) that ``--resume`` reuses."""
    if args.mlm_epochs <= 0:
        return []
    head = MaskedLMHead(model.encoder.embedding.tokens).to(device)
    params = list(model.encoder.parameters()) + [
        p for n, p in head.named_parameters() if not n.startswith("embedding.")
    ]
    optimizer = torch.optim.AdamW(params, lr=args.mlm_lr or args.lr, weight_decay=args.weight_decay)
    total = math.ceil(len(seqs) / args.batch_size) * args.mlm_epochs
    warmup = max(1, int(args.warmup * total))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_factor(s, total, warmup))
    state_path = Path(args.out) / PRETRAIN_STATE
    history, first = [], 1
    if args.resume and state_path.exists():
        history, first = load_pretrain_state(state_path, model, head, optimizer, scheduler, rng)
        print(f"resumed masked-LM pre-training after epoch {first - 1}", file=sys.stderr)
    for epoch in range(first, args.mlm_epochs + 1):
        t0 = time.perf_counter()
        batches = bucket_batches([len(s) for s in seqs], args.batch_size, rng)
        loss = pretrain_epoch(
            model.encoder,
            head,
            batches,
            seqs,
            optimizer,
            scheduler,
            vocab.token_to_id(MASK),
            2 + n_specials,
            args.mlm_rate,
            device,
            epoch,
        )
        history.append({"epoch": epoch, "mlm_loss": round(loss, 4), "seconds": round(time.perf_counter() - t0, 1)})
        print(
            f"pre-training epoch {epoch}: masked-LM loss {loss:.4f} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr
        )
        tokenization = {"vocabulary": list(vocab.itos), "tokenizer_json": splitter.to_json() if splitter else ""}
        save_pretrain_state(state_path, model, head, optimizer, scheduler, rng, history, tokenization)
    return history


PRETRAIN_STATE = "pretrain_state.pt"


def save_pretrain_state(
    path: Path, model, head, optimizer, scheduler, rng: random.Random, history, tokenization: dict
) -> None:
    """Everything a cut-off pre-training needs to go on exactly (weights, optimiser, schedule, random state,
    and the vocabulary the weights' rows belong to: ``tokenization`` = {vocabulary, tokenizer_json})."""
    path.parent.mkdir(parents=True, exist_ok=True)
    version, internal, gauss = rng.getstate()
    state = {
        "model": model.state_dict(),
        "head": {k: v for k, v in head.state_dict().items() if not k.startswith("embedding.")},
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "python_rng": [version, list(internal), gauss],
        "torch_rng": torch.get_rng_state(),
        "history": history,
        **tokenization,
    }
    torch.save(state, path.with_suffix(".tmp"))
    path.with_suffix(".tmp").replace(path)  # a cut during the write leaves the previous state whole


def load_pretrain_state(path: Path, model, head, optimizer, scheduler, rng: random.Random) -> tuple[list, int]:
    """Restores what :func:`save_pretrain_state` wrote (tensors and plain values only: weights_only);
    returns (history so far, the next epoch)."""
    state = torch.load(path, map_location="cpu", weights_only=True)
    model.load_state_dict(state["model"])
    head.load_state_dict(state["head"], strict=False)
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    version, internal, gauss = state["python_rng"]
    rng.setstate((version, tuple(internal), gauss))
    torch.set_rng_state(state["torch_rng"])
    return list(state["history"]), len(state["history"]) + 1


def relative_location(path: Path) -> str:
    """``path`` relative to the working folder (e.g. '../shared/data/aclImdb.tar.gz'), else its name."""
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return path.name


@dataclass
class Corpus:
    """The examples of one training run and where they came from (for metrics.json)."""

    train: list
    val: list
    test: list
    description: dict
    first_dataset: int = 0  # train[:first_dataset] come from the first dataset (IMDB, NSMC), the rest were added


def load_corpus(args: argparse.Namespace) -> Corpus:
    """Train / validation / test examples of ``args.dataset``; validation is carved from train, stratified.

    ``imdb+sst2`` adds SST-2's short sentences to IMDB (their own validation share carved the same way);
    its test split stays IMDB's (SST-2's test sentences are not here)."""
    if args.dataset == "nsmc":
        folder = Path(args.data) if args.data else default_nsmc_dir()
        train_all, test = load_nsmc(folder, "train"), load_nsmc(folder, "test")
        name, where = "NSMC-style Korean movie reviews (Naver sentiment movie corpus rules)", folder
    else:
        where = Path(args.data) if args.data else default_imdb_path()
        train_all, test = load_imdb(where, "train"), load_imdb(where, "test")
        name = "IMDB Large Movie Review Dataset v1.0 (Maas et al., ACL 2011)"
    if args.limit:
        train_all = random.Random(args.seed).sample(train_all, min(args.limit, len(train_all)))
        test = random.Random(args.seed + 1).sample(test, min(args.limit, len(test)))
    block = args.val_block if args.dataset != "nsmc" else 1
    train, val = train_val_split(train_all, args.val_fraction, args.seed, block)
    first_dataset = len(train)
    description = {
        "dataset": name,
        "path": relative_location(where),  # never an absolute path of this machine
        "train": len(train),
        "validation": len(val),
        "test": len(test),
        "validation_carved_from": "train",
        "val_fraction": args.val_fraction,
        "seed": args.seed,
        **({"val_block": block} if block > 1 else {}),
    }
    if args.dataset == "imdb+sst2":
        sst_path = Path(args.sst2) if args.sst2 else default_sst2_path()
        sst = load_sst2(sst_path)
        if args.limit:
            sst = random.Random(args.seed).sample(sst, min(args.limit, len(sst)))
        sst_train, sst_val = train_val_split(sst, args.val_fraction, args.seed)
        train, val = train + sst_train * args.sst2_repeat, val + sst_val
        description["short_sentences"] = {
            "dataset": "SST-2 binary training sentences (Socher et al., EMNLP 2013)",
            "path": relative_location(sst_path),
            "train": len(sst_train),
            "validation": len(sst_val),
            "repeated_in_training": args.sst2_repeat,
        }
    if args.contrast and args.dataset != "nsmc":
        train = train + contrast_sentences(args.contrast, args.seed)
        description["contrast_sentences"] = {
            "what": "short sentences written from templates: plain, negated ('not a good film', 'i did not enjoy it') "
            "and contrast ('<clause> but <clause>', labelled by the second clause); transformer/text/contrast.py",
            "train": args.contrast,
            "words_never_used": list(HELD_OUT),
        }
    return Corpus(train, val, test, description, first_dataset)


def build_tokenization(args: argparse.Namespace, texts: list[str], specials: list[str]):
    """The vocabulary, the text encoder and (for subword pieces) the splitter saved with the model,
    learned on the training ``texts`` only."""
    if args.tokenizer == "wordpiece":
        splitter = PieceSplitter(train_wordpiece(texts, args.vocab_size, args.min_freq, tuple(specials)))
        vocab = Vocab(splitter.vocabulary)
        return vocab, TextEncoder(vocab, split=splitter.split), splitter
    split = word_splitter(args)
    vocab = Vocab.build((split(t) for t in texts), min_freq=args.min_freq, max_size=args.vocab_size, specials=specials)
    return vocab, TextEncoder(vocab, split=split), None


def word_splitter(args: argparse.Namespace):
    """Text -> words for the word-level tokenizers (basic_english, or a Korean morpheme splitter)."""
    return basic_english if args.tokenizer == "basic_english" else SPLITTERS[args.tokenizer]()


def saved_tokenization(args: argparse.Namespace):
    """With ``--resume`` and a saved pre-training state: the vocabulary (and WordPiece splitter) that state was
    trained with, instead of learning them again (``tokenizers``' WordPiece trainer may order pieces of equal
    count differently from run to run, which would give the saved embedding rows to other pieces); else None."""
    state_path = Path(args.out) / PRETRAIN_STATE
    if not (args.resume and args.mlm_epochs > 0 and state_path.exists()):
        return None
    state = torch.load(state_path, map_location="cpu", weights_only=True)
    tokens, tokenizer_json = state.get("vocabulary"), state.get("tokenizer_json")
    if tokens is None:
        raise SystemExit(
            f"{state_path} was saved without its vocabulary (by an older version): the vocabulary learned again "
            "may order its pieces differently. Start the pre-training again without --resume."
        )
    vocab = Vocab(tokens)
    if tokenizer_json:
        splitter = PieceSplitter.from_json(tokenizer_json)
        return vocab, TextEncoder(vocab, split=splitter.split), splitter
    return vocab, TextEncoder(vocab, split=word_splitter(args)), None


def model_config(args: argparse.Namespace, vocab: Vocab, add_cls: bool) -> ModelConfig:
    return ModelConfig(
        vocab_size=len(vocab),
        d_model=args.d_model,
        num_heads=args.heads,
        num_layers=args.layers,
        d_ff=args.d_ff,
        max_len=args.max_len,
        dropout=args.dropout,
        attention_dropout=args.attention_dropout,
        scale_embedding=not args.no_scale_embedding,
        pad_id=vocab.pad_id,
        pooling=args.pooling,
        add_cls_token=add_cls,
        label_names=LABELS,
        default_max_tokens=args.train_len,
        tokenizer="wordpiece" if args.tokenizer == "wordpiece" else "basic_english",
    )


def start_model(args: argparse.Namespace, texts: list[str], specials: list[str]):
    """(model, config, vocab, encoder, splitter): a new model with a vocabulary learned on ``texts``, or, with
    ``--init-from``, a bundled model to go on training (its own vocabulary, tokenizer and architecture)."""
    if args.init_from:
        if args.mlm_epochs > 0:
            raise SystemExit("--init-from continues a trained classifier: leave out --mlm-epochs.")
        loaded = load_bundle(args.init_from)
        config = loaded.config.replace(default_max_tokens=args.train_len, temperature=1.0)
        model = loaded.model.train()
        model.config = config
        return model, config, loaded.vocab, loaded.text_encoder(), loaded.splitter
    saved = saved_tokenization(args)
    vocab, encoder, splitter = saved if saved else build_tokenization(args, texts, specials)
    config = model_config(args, vocab, args.pooling == "cls")
    model = SequenceClassifier(config)
    if args.embedding_std > 0:
        # small embeddings let the positional encoding shape attention early in training
        init_embeddings(model, args.embedding_std)
    return model, config, vocab, encoder, splitter


def make_optimisation(model, args: argparse.Namespace, n_batches: int, device, unk_id: int) -> Optimisation:
    """Optimiser, schedule and the step's options; with ``--keep-weight``, a frozen copy of ``model`` as it is now
    (the model ``--init-from`` loaded) to keep answers near."""
    combined = [name for name, on in (("--consistency", args.consistency), ("--keep-weight", args.keep_weight),
                ("--ngram-teacher", args.ngram_teacher), ("--label-smoothing", args.label_smoothing)) if on]  # fmt: skip
    if args.adversarial > 0 and combined:
        raise SystemExit(f"--adversarial is a loss of its own: leave out {', '.join(combined)}.")
    total_steps = n_batches * args.epochs
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    warmup = max(1, int(args.warmup * total_steps))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_factor(s, total_steps, warmup))
    ema = ExponentialAverage(model, args.ema) if args.ema > 0 else None
    amp = torch.bfloat16 if device.type == "cuda" else None
    teacher = None
    if args.keep_weight > 0:
        if not args.init_from:
            raise SystemExit("--keep-weight keeps the answers of the model it starts from: give --init-from.")
        teacher = copy.deepcopy(model).eval().requires_grad_(False)
    return Optimisation(
        optimizer, scheduler, device, amp, unk_id, args.word_dropout, args.label_smoothing, ema, args.consistency,
        teacher=teacher, keep_weight=args.keep_weight, adversarial=args.adversarial,
    )  # fmt: skip


def attach_ngram_teacher(opt: Optimisation, args: argparse.Namespace, corpus: Corpus) -> dict | None:
    """With ``--ngram-teacher``: the out-of-fold teacher's probabilities for every training example on ``opt``;
    returns what metrics.json records of it (its weight and how often it is right on the training examples)."""
    if args.ngram_teacher <= 0:
        return None
    if not args.ngram_teacher < 1:
        raise SystemExit("--ngram-teacher is a weight in (0, 1): the label keeps the rest.")
    from .ngram_teacher import FOLDS, out_of_fold_probabilities

    t0 = time.perf_counter()
    labels = [ex.label for ex in corpus.train]
    probs = out_of_fold_probabilities([ex.text for ex in corpus.train], labels, seed=args.seed)
    opt.soft_targets = torch.from_numpy(probs)
    opt.ngram_weight = args.ngram_teacher
    right = float((probs.argmax(1) == np.asarray(labels)).mean())
    print(f"n-gram teacher: out-of-fold accuracy on the training examples {right:.4f}", file=sys.stderr)
    return {
        "what": "TF-IDF word 1-2-grams + logistic regression (C 4), out of fold (transformer/text/ngram_teacher.py)",
        "weight": args.ngram_teacher,
        "folds": FOLDS,
        "out_of_fold_accuracy_on_training_examples": round(right, 4),
        "seconds": round(time.perf_counter() - t0, 1),
    }


def fit(
    model, args, train_seqs, train_labels, val_seqs, val_labels, opt: Optimisation, rng, kept_below: int = 0
) -> tuple[list, float]:
    """Train for ``args.epochs``; keep the weights of the best validation epoch in ``model``.
    Returns (history, best validation accuracy). ``kept_below``: see :func:`train_epoch`."""
    scored = model if opt.ema is None else opt.ema.model  # the weights that are evaluated and saved
    history, best_acc, best_state = [], -1.0, None
    for epoch in range(1, args.epochs + 1):
        t0 = time.perf_counter()
        batches = bucket_batches([len(s) for s in train_seqs], args.batch_size, rng)
        loss = train_epoch(model, batches, train_seqs, train_labels, opt, epoch, kept_below)
        accuracy = evaluate_ids(scored, val_seqs, val_labels, opt.device)["accuracy"]
        seconds = time.perf_counter() - t0
        history.append(
            {
                "epoch": epoch,
                "train_loss": round(loss, 4),
                "val_accuracy": round(accuracy, 4),
                "seconds": round(seconds, 1),
            }
        )
        print(f"epoch {epoch}: loss {loss:.4f}, validation accuracy {accuracy:.4f} ({seconds:.0f} s)", file=sys.stderr)
        if accuracy > best_acc:
            best_acc = accuracy
            best_state = {k: v.detach().clone() for k, v in scored.state_dict().items()}
    model.load_state_dict(best_state)
    return history, best_acc


def choose_truncation(model, args, encoder: TextEncoder, val_texts, val_labels, add_cls: bool, device) -> dict:
    """Validation accuracy at each of ``args.eval_lens`` (capped at ``max_len``)."""
    lens = sorted({min(int(x), model.config.max_len) for x in args.eval_lens.split(",")})  # the model's own limit
    return {
        n: evaluate_ids(model, encode_all(encoder, val_texts, n, add_cls), val_labels, device)["accuracy"] for n in lens
    }


def command_line(argv: list[str] | None) -> str:
    """The command that was run, for metrics.json (``argv``: main's own, else the process's)."""
    return "python -m transformer.text.train " + shlex.join(sys.argv[1:] if argv is None else argv)


def save_pretrained(args, argv, model, config, vocab, splitter, history: list[dict], seconds: float) -> None:
    """The encoder as pre-training left it, with the classifier's untrained head, as a bundle whose metrics
    say how it was made (``--init-from`` it to fine-tune again without pre-training again)."""
    metrics = {
        "what": "masked-LM pre-training only; the classification head is untrained",
        "pretraining_history": history,
        "training_seconds": round(seconds, 1),
        "command": command_line(argv),
    }
    save_bundle(args.pretrained_out, copy.deepcopy(model).cpu().eval(), config, vocab, metrics, splitter=splitter)
    print(f"saved the pre-trained encoder to {args.pretrained_out}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    train_seed = args.seed if args.train_seed is None else args.train_seed
    set_seed(train_seed)
    device = resolve_device(args.device)
    started = time.perf_counter()
    corpus = load_corpus(args)
    print(f"data: {corpus.description}", file=sys.stderr)

    specials = (["<cls>"] if args.pooling == "cls" else []) + ([MASK] if args.mlm_epochs > 0 else [])
    model, config, vocab, encoder, splitter = start_model(args, [ex.text for ex in corpus.train], specials)
    add_cls = config.add_cls_token
    model = model.to(device)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"vocabulary {len(vocab)} tokens; model {n_params:,} parameters on {device}", file=sys.stderr)

    train_seqs = encode_all(encoder, [ex.text for ex in corpus.train], args.train_len, add_cls)
    train_labels = [ex.label for ex in corpus.train]
    val_texts, val_labels = [ex.text for ex in corpus.val], [ex.label for ex in corpus.val]
    val_seqs = encode_all(encoder, val_texts, args.train_len, add_cls)

    rng = random.Random(train_seed)
    pretrain_history = pretrain(model, vocab, train_seqs, args, rng, device, len(specials), splitter)
    if args.pretrained_out and pretrain_history:
        save_pretrained(args, argv, model, config, vocab, splitter, pretrain_history, time.perf_counter() - started)
    opt = make_optimisation(model, args, math.ceil(len(train_seqs) / args.batch_size), device, vocab.unk_id)
    teacher_report = attach_ngram_teacher(opt, args, corpus)
    history, best_acc = fit(model, args, train_seqs, train_labels, val_seqs, val_labels, opt, rng, corpus.first_dataset)
    train_seconds = time.perf_counter() - started

    val_by_len = choose_truncation(model, args, encoder, val_texts, val_labels, add_cls, device)
    chosen = max(val_by_len, key=lambda n: (val_by_len[n], n))  # ties: keep more of the text
    config = config.replace(default_max_tokens=chosen)
    model.config = config
    print(f"validation accuracy by truncation length: {val_by_len}; chosen {chosen}", file=sys.stderr)

    comparison_only = args.tokenizer not in ("basic_english", "wordpiece")
    test_metrics = {"accuracy": None, "per_class": None}  # a comparison run is judged on validation only
    if not comparison_only:
        test_seqs = encode_all(encoder, [ex.text for ex in corpus.test], chosen, add_cls)
        test_metrics = evaluate_ids(model, test_seqs, [ex.label for ex in corpus.test], device)
        print(f"test accuracy {test_metrics['accuracy']:.4f} on {len(corpus.test)} reviews", file=sys.stderr)
    lengths = [len(s) for s in encode_all(encoder, val_texts, None, add_cls)]
    metrics = {
        "data": corpus.description,
        "metrics": {
            "test_accuracy": test_metrics["accuracy"],
            "test_accuracy_per_class": test_metrics["per_class"],
            "best_validation_accuracy": best_acc,
            "validation_accuracy_by_truncation": {str(k): v for k, v in val_by_len.items()},
            "truncation_length": chosen,
        },
        "tokenizer": {
            "kind": config.tokenizer if args.init_from else args.tokenizer,  # a model gone on from keeps its own
            "vocabulary_size": len(vocab),
            "tokens_per_validation_text": round(sum(lengths) / max(1, len(lengths)), 2),
        },
        "history": history,
        "pretraining_history": pretrain_history,
        "initialised_from": relative_location(Path(args.init_from)) if args.init_from else None,
        "ngram_teacher": teacher_report,
        "parameters": n_params,
        "vocabulary_size": len(vocab),
        "training_seconds": round(train_seconds, 1),
        "device": str(device) if device.type != "cpu" else f"cpu ({torch.get_num_threads()} threads)",
        "torch": torch.__version__,
        "command": command_line(argv),
    }
    if comparison_only:
        print(f"{args.tokenizer} tokens are for comparison only: not saved as a bundle", file=sys.stderr)
        Path(args.out).mkdir(parents=True, exist_ok=True)
        vocab.save(Path(args.out) / "vocab.txt")  # what the tokens view marks as known for this cut
        (Path(args.out) / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
        return 0
    save_bundle(args.out, model.cpu(), config, vocab, metrics, splitter=splitter)
    print(f"saved {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
