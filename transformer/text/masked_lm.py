"""A masked language model trained here, as a bundled model the Fill-in-the-blank page opens.

Two ways in, both writing the same bundle (``config.kind`` "masked-lm": the encoder and its
fill-in-the-blank head, the tokenizer and vocabulary of the encoder it came from):

- ``--state``: the masked-LM pre-training state ``transformer.text.train`` saves after every epoch
  (``pretrain_state.pt``: the encoder and the head it learned) — the head is kept, nothing is trained.
- ``--epochs N``: the encoder of a bundled classifier (``--encoder``) learns to fill blanks again for N
  epochs on its dataset's training split, with a new head (the head of its pre-training was not kept).
  The state is saved after every epoch; ``--resume`` goes on after a cut-off.

Every run ends by checking the bundle against the weights it came from (logits within 1e-5) and by
scoring the fixed blanks of ``bench/data/fill_blanks.json`` (written before these models were trained).

    python -m transformer.text.masked_lm --encoder assets/models/nsmc-sentiment --dataset nsmc \\
        --epochs 3 --out assets/models/nsmc-mlm
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shlex
import sys
import time
from pathlib import Path

import torch

from ..analysis.fill_mask import fill_mask
from ..bundle import load_bundle, save_bundle
from ..core.config import ModelConfig
from ..core.loaded import LoadedModel
from ..core.masked_lm import KIND, MaskedLanguageModel
from ..core.model import SequenceClassifier
from ..core.tokenizer import CLS, MASK, PAD, UNK
from .pretrain import MaskedLMHead, pretrain_epoch
from .train import bucket_batches, load_pretrain_state, lr_factor, relative_location, save_pretrain_state

BLANKS_FILE = Path(__file__).resolve().parents[2] / "bench" / "data" / "fill_blanks.json"
STATE_FILE = "mlm_state.pt"
SPECIALS = (UNK, PAD, CLS, MASK)  # the vocabulary's special tokens come first


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m transformer.text.masked_lm", description=__doc__.split("\n\n")[0])
    p.add_argument("--encoder", required=True, help="bundled model whose encoder, vocabulary and tokenizer are used")
    p.add_argument("--state", default=None, help="pretrain_state.pt of transformer.text.train (encoder + head)")
    p.add_argument("--dataset", default=None, choices=["imdb+sst2", "nsmc"], help="the training texts of --epochs")
    p.add_argument("--epochs", type=int, default=0, help="masked-LM epochs to train here (0: none)")
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--warmup", type=float, default=0.05)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--train-len", type=int, default=128)
    p.add_argument("--rate", type=float, default=0.15, help="share of tokens hidden")
    p.add_argument("--seed", type=int, default=13, help="the train/validation split (as transformer.text.train)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--resume", action="store_true", help="go on after the last epoch saved in --work")
    p.add_argument("--work", default=None, help="folder for the per-epoch state (default: --out)")
    p.add_argument("--lang", required=True, choices=["en", "ko"], help="which fixed blanks to score")
    p.add_argument("--describe", default="", help="one line on what this model is, for metrics.json")
    p.add_argument("--limit", type=int, default=0, help="train on the first N texts only (a quick check; 0: all)")
    p.add_argument("--out", required=True, help="the bundled-model folder to write")
    return p.parse_args(argv)


def training_texts(dataset: str, seed: int) -> tuple[list[str], dict]:
    """The training split's texts (validation carved out as transformer.text.train carves it) and where
    they came from."""
    from ..datasets.imdb import default_imdb_path, load_imdb, train_val_split
    from .corpora import default_nsmc_dir, default_sst2_path, load_nsmc, load_sst2

    if dataset == "nsmc":
        train, val = train_val_split(load_nsmc(default_nsmc_dir(), "train"), 0.1, seed)
        return [ex.text for ex in train], {"dataset": "nsmc", "train": len(train), "validation_left_out": len(val)}
    imdb_train, imdb_val = train_val_split(load_imdb(default_imdb_path(), "train"), 0.1, seed)
    sst_train, sst_val = train_val_split(load_sst2(default_sst2_path()), 0.1, seed)
    texts = [ex.text for ex in imdb_train] + [ex.text for ex in sst_train]
    return texts, {
        "dataset": "imdb+sst2",
        "train": len(texts),
        "validation_left_out": len(imdb_val) + len(sst_val),
    }


def as_masked_lm(classifier: SequenceClassifier, head: MaskedLMHead) -> tuple[MaskedLanguageModel, ModelConfig]:
    """The encoder of ``classifier`` with ``head`` as one :class:`MaskedLanguageModel` (its config's kind
    "masked-lm", no class head); the head's decoder is the token embedding, as in training."""
    config = classifier.config.replace(kind=KIND, has_head=False)
    model = MaskedLanguageModel(config, activation="gelu", width=config.d_model, tied=True)
    model.encoder.load_state_dict(classifier.encoder.state_dict())
    model.mlm_head.dense.load_state_dict(head.transform[0].state_dict())
    model.mlm_head.norm.load_state_dict(head.transform[2].state_dict())
    with torch.no_grad():
        model.mlm_head.decoder.bias.copy_(head.bias)
    return model.eval(), config


@torch.no_grad()
def largest_difference(model: MaskedLanguageModel, classifier: SequenceClassifier, head: MaskedLMHead) -> float:
    """Largest |logit difference| between the bundle's model and the encoder + head it came from, on
    two fixed id sequences (what a reload must reproduce)."""
    classifier.eval(), head.eval()
    ids = torch.arange(4, 4 + 24).remainder(classifier.config.vocab_size).view(2, 12)
    ours = model.token_logits(model(ids).encoder.hidden)
    theirs = head(classifier.encoder(ids).hidden)
    return float((ours - theirs).abs().max())


def score_blanks(loaded: LoadedModel, lang: str, path: Path = BLANKS_FILE) -> dict:
    """Top-1 and top-5 on the fixed blanks of ``lang``: a blank is right when the expected word's first
    piece (the whole word when it is one piece) is among the model's guesses."""
    items = json.loads(path.read_text(encoding="utf-8"))[lang]
    encoder = loaded.text_encoder()
    rows, top1, top5 = [], 0, 0
    for text, word in items:
        expected = encoder.encode(word).tokens
        guesses = [g.token for g in fill_mask(loaded, text, top_k=5).blanks[0].guesses]
        hit1, hit5 = guesses[:1] == expected[:1], expected[:1] and expected[0] in guesses
        top1, top5 = top1 + bool(hit1), top5 + bool(hit5)
        rows.append({"text": text, "expected": word, "pieces": expected, "top5": guesses})
    return {
        "items": len(items),
        "top1": top1,
        "top5": top5,
        "single_piece_words": sum(len(r["pieces"]) == 1 for r in rows),
        "rows": rows,
    }


def train_here(args, loaded: LoadedModel, head: MaskedLMHead, rng: random.Random) -> tuple[list, dict]:
    """``args.epochs`` masked-LM epochs on the dataset's training texts; returns (history, data)."""
    classifier = loaded.model
    texts, data = training_texts(args.dataset, args.seed)
    texts = texts[: args.limit] if args.limit else texts
    seqs = [e.ids for e in loaded.text_encoder().encode_batch(texts, args.train_len)]
    seqs = [s for s in seqs if s]
    params = list(classifier.encoder.parameters()) + [
        p for n, p in head.named_parameters() if not n.startswith("embedding.")
    ]
    optimizer = torch.optim.AdamW(params, lr=args.lr, weight_decay=args.weight_decay)
    total = math.ceil(len(seqs) / args.batch_size) * args.epochs
    warmup = max(1, int(args.warmup * total))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_factor(s, total, warmup))
    state_path = Path(args.work or args.out) / STATE_FILE
    history: list = []
    if args.resume and state_path.exists():
        history, _ = load_pretrain_state(state_path, classifier, head, optimizer, scheduler, rng)
        print(f"resumed after epoch {len(history)}", file=sys.stderr)
    mask_id = loaded.vocab.token_to_id(MASK)
    first_word = 1 + max(loaded.vocab.stoi[t] for t in SPECIALS if t in loaded.vocab.stoi)  # random words after them
    for epoch in range(len(history) + 1, args.epochs + 1):
        t0 = time.perf_counter()
        batches = bucket_batches([len(s) for s in seqs], args.batch_size, rng)
        loss = pretrain_epoch(
            classifier.encoder, head, batches, seqs, optimizer, scheduler, mask_id, first_word, args.rate,
            torch.device("cpu"), epoch,
        )  # fmt: skip
        history.append({"epoch": epoch, "mlm_loss": round(loss, 4), "seconds": round(time.perf_counter() - t0, 1)})
        print(f"masked-LM epoch {epoch}: loss {loss:.4f} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
        save_pretrain_state(state_path, classifier, head, optimizer, scheduler, rng, history, {})
    return history, data


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    started = time.perf_counter()
    loaded = load_bundle(args.encoder)
    if loaded.config.kind != "classifier" or MASK not in loaded.vocab:
        raise SystemExit(f"--encoder must be a bundled classifier whose vocabulary holds {MASK}.")
    classifier = loaded.model
    head = MaskedLMHead(classifier.encoder.embedding.tokens)
    history, data, origin = [], None, {}
    if args.state:
        state = torch.load(args.state, map_location="cpu", weights_only=True)
        if list(state.get("vocabulary", loaded.vocab.itos)) != list(loaded.vocab.itos):
            raise SystemExit("--state was trained on another vocabulary than --encoder's.")
        classifier.load_state_dict(state["model"])
        head.load_state_dict(state["head"], strict=False)
        origin = {"pretraining_state": relative_location(Path(args.state)), "pretraining_history": state["history"]}
    if args.epochs:
        if not args.dataset:
            raise SystemExit("--epochs needs --dataset.")
        classifier.train()
        history, data = train_here(args, loaded, head, random.Random(args.seed))
    model, config = as_masked_lm(classifier, head)
    difference = largest_difference(model, classifier, head)
    if difference > 1e-5:
        raise SystemExit(f"the bundle's logits differ from its weights' by {difference:.2e}")
    bundle = LoadedModel(model, config, loaded.vocab, splitter=loaded.splitter)
    metrics = {
        "what": args.describe,
        "initialised_from": relative_location(Path(args.encoder)),
        **origin,
        "data": data,
        "masked_lm_history": history,
        "training_seconds": round(time.perf_counter() - started, 1),
        "device": f"cpu ({torch.get_num_threads()} threads)",
        "torch": torch.__version__,
        "parity_largest_logit_difference": difference,
        "fixed_blanks": score_blanks(bundle, args.lang),
        "command": "python -m transformer.text.masked_lm " + shlex.join(sys.argv[1:] if argv is None else argv),
    }
    save_bundle(args.out, model, config, loaded.vocab, metrics, splitter=loaded.splitter)
    blanks = metrics["fixed_blanks"]
    print(
        f"saved {args.out}: fixed blanks top-1 {blanks['top1']}/{blanks['items']}, top-5 {blanks['top5']}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
