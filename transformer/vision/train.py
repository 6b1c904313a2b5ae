"""Train the bundled vision models.

    python -m transformer.vision.train --task digits --out assets/models/vit-digits
    python -m transformer.vision.train --task shapes --out assets/models/vit-shapes

1 thread on CPU; the best epoch on validation is kept and scored once on the held-out test set.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import math
import shlex
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

from . import digit_strokes, digit_styles, digits, shapes
from .bundle import load_vision_bundle, save_vision_bundle
from .config import VisionConfig
from .metrics import iou_per_class, same_object_share
from .model import VisionTransformer


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", choices=("digits", "shapes"), required=True)
    p.add_argument("--out", required=True, help="bundled-model folder to write")
    p.add_argument("--epochs", type=int, default=60)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--weight-decay", type=float, default=0.05)
    p.add_argument("--d-model", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--d-ff", type=int, default=128)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--patch-size", type=int, default=None, help="default: 8 for digits, 4 for shapes")
    p.add_argument("--shift", type=float, default=3.0, help="digits: largest random shift, in pixels of 32")
    p.add_argument("--degrees", type=float, default=12.0, help="digits: largest random rotation")
    p.add_argument("--zoom", type=float, default=0.1, help="digits: random scale 1 ± zoom")
    p.add_argument(
        "--style-copies",
        type=int,
        default=0,
        help="digits: styled copies of each training digit (transformer.vision.digit_styles: thick and thin "
        "strokes, small and off-centre, dark ink, photographed), framed as uploads are",
    )
    p.add_argument(
        "--font-renders",
        type=int,
        default=0,
        help="digits: styled renders of each digit per training font face (digit_styles.font_faces(); the "
        "Liberation fonts are kept out)",
    )
    p.add_argument(
        "--stroke-renders",
        type=int,
        default=0,
        help="digits: styled renders of each written form of each digit (transformer.vision.digit_strokes)",
    )
    p.add_argument(
        "--hand",
        type=float,
        default=0.0,
        help="digits: share of the styled digits redrawn as by another hand first (slant, turn, width, elastic "
        "bend: digit_styles.another_hand); the styled validation digits get the same share",
    )
    p.add_argument(
        "--style-batch", type=int, default=None, help="digits: styled images added to each batch (default: batch size)"
    )
    p.add_argument("--seg-head", choices=("pixels", "upsample", "pixel_mlp"), default="pixel_mlp")
    p.add_argument("--seg-hidden", type=int, default=64, help="shapes: width of the pixel MLP (pixel_mlp head)")
    p.add_argument("--train-scenes", type=int, default=12000, help="shapes: scenes in the training pool")
    p.add_argument(
        "--scenes",
        choices=("default", "wide"),
        default="default",
        help="shapes: training and validation scenes as first drawn (1-3 objects, noise 0.05) or over the wide "
        "range (transformer.vision.shapes.WIDE: 1-6 objects, sizes down to ~2 px, noise 0-0.2)",
    )
    p.add_argument(
        "--noise-max",
        type=float,
        default=None,
        help="shapes, wide scenes: draw the training scenes' pixel noise from 0 to this (default: the wide range's "
        "0.2), so that σ 0.2 is inside the training range rather than at its edge; validation stays as drawn",
    )
    p.add_argument(
        "--init-from",
        default=None,
        help="a bundled vision model of the same task to go on training (its sizes are kept, the size options ignored)",
    )
    p.add_argument(
        "--small-share",
        type=float,
        default=0.0,
        help="shapes, wide scenes: this share of the training scenes drawn with every object at the small-objects "
        "condition's sizes (about 2-7 px across), the rest over the wide range",
    )
    p.add_argument(
        "--condition-scenes",
        type=int,
        default=500,
        help="shapes: scenes per measured condition, drawn apart for validation and for test",
    )
    p.add_argument(
        "--background-weight",
        type=float,
        default=1.0,
        help="shapes: loss weight of background pixels (shape pixels weigh 1); background covers ~90 %% of "
        "the pixels, so a weight below 1 spends more of each step on the shapes",
    )
    p.add_argument("--max-minutes", type=float, default=9.0, help="CPU time of this process (1 thread) to train for")
    p.add_argument("--max-wall-minutes", type=float, default=60.0, help="wall-clock time to train for at most")
    p.add_argument(
        "--time-schedule",
        action="store_true",
        help="let the learning rate follow the time budgets as well as the steps: on a CPU shared with other "
        "jobs the speed is unknown in advance, and the rate still reaches its low end when time is up",
    )
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def make_config(args: argparse.Namespace) -> VisionConfig:
    common = dict(
        d_model=args.d_model, num_heads=args.heads, num_layers=args.layers, d_ff=args.d_ff, dropout=args.dropout
    )
    if args.task == "digits":
        return VisionConfig(kind="vision-classifier", channels=1, patch_size=args.patch_size or 8, **common)
    return VisionConfig(
        kind="vision-segmenter",
        channels=3,
        patch_size=args.patch_size or 4,
        label_names=shapes.LABELS,
        seg_head=args.seg_head,
        seg_hidden=args.seg_hidden,
        **common,
    )


def start_model(args: argparse.Namespace) -> tuple[VisionConfig, VisionTransformer]:
    """A new model from the size options, or with ``--init-from`` the bundled model to go on training."""
    if not getattr(args, "init_from", None):
        config = make_config(args)
        return config, VisionTransformer(config)
    loaded = load_vision_bundle(args.init_from)
    task = "classification" if args.task == "digits" else "segmentation"
    if loaded.config.task != task:
        raise SystemExit(f"--init-from {args.init_from}: a {loaded.config.task} model, not {task}.")
    return loaded.config, loaded.model.train()


def load_data(args: argparse.Namespace) -> dict[str, tuple[np.ndarray, ...]]:
    """Per split: (images, targets[, objects])."""
    if args.task == "digits":
        s = digits.load_digits_splits(args.seed)
        return {"train": s.train, "val": s.val, "test": s.test}
    sizes = {"train": args.train_scenes, "val": 500, "test": 1000}
    seeds = {"train": args.seed, "val": 10_000 + args.seed, "test": 20_000 + args.seed}
    drawn = {"train": shapes.WIDE, "val": shapes.WIDE} if getattr(args, "scenes", "default") == "wide" else {}
    if drawn and getattr(args, "noise_max", None) is not None:
        drawn["train"] = dataclasses.replace(shapes.WIDE, noise=(0.0, args.noise_max))
    small = round(getattr(args, "small_share", 0.0) * args.train_scenes) if drawn else 0
    sizes["train"] -= small  # the same first scenes as without small ones: each scene draws from the rng in turn
    data = {k: shapes.scene_batch(np.random.default_rng(seeds[k]), n, drawn.get(k)) for k, n in sizes.items()}
    if small:  # the last `small` training scenes hold only small objects
        tiny = dataclasses.replace(drawn["train"], size=shapes.CONDITIONS[shapes.SMALL_OBJECTS].size)
        extra = shapes.scene_batch(np.random.default_rng(5_000 + args.seed), small, tiny)
        data["train"] = tuple(np.concatenate([a, b]) for a, b in zip(data["train"], extra))
    return data


CONDITION_SEEDS = {"test": 30_000, "validation": 50_000}  # scenes drawn apart for each use


def condition_scores(model: VisionTransformer, n: int, seed: int, split: str = "test") -> dict:
    """Mean IoU over the shapes and per class on ``n`` fresh scenes of each of shapes.CONDITIONS;
    ``split`` "validation" draws other scenes (for choosing between runs), "test" the reported ones."""
    out = {}
    for k, (name, conditions) in enumerate(shapes.CONDITIONS.items()):
        rng = np.random.default_rng(CONDITION_SEEDS[split] + 1_000 * k + seed)
        scenes = shapes.scene_batch(rng, n, conditions)
        measured = score(model, scenes)
        out[name] = {
            "scenes": n,
            "mean_iou_shapes": measured["mean_iou_shapes"],
            "iou_per_class": measured["iou_per_class"],
        }
    return out


def style_pool(
    args: argparse.Namespace, split: tuple[np.ndarray, ...], seed: int, copies: int, renders: int, strokes: int = 0
):
    """Styled digits for training or validation (digit_styles), as tensors (N, 1, 32, 32) and (N,):
    ``copies`` of each digit of ``split``, ``renders`` of each digit per training font face and
    ``strokes`` of each written form of each digit (digit_strokes); None when none is asked for."""
    if args.task != "digits" or copies + renders + strokes == 0:
        return None
    rng, mix = np.random.default_rng(seed), style_mix(args)
    parts = [digit_styles.styled_digits(split[0], split[1], copies, rng, mix)] if copies else []
    if renders:
        parts.append(digit_styles.font_digits(digit_styles.font_faces(), renders, rng, mix))
    if strokes:
        parts.append(digit_strokes.stroke_digits(strokes, rng, mix))
    return tuple(torch.from_numpy(np.concatenate(k)) for k in zip(*parts))


def style_mix(args: argparse.Namespace) -> digit_styles.StyleMix:
    """The styles' mix: the default one, with ``--hand`` as its share of digits by another hand."""
    return digit_styles.StyleMix(hand=getattr(args, "hand", 0.0))


def train_batch(args, images: torch.Tensor, targets: torch.Tensor, gen: torch.Generator, pool=None):
    """Augmented copies: digits are warped a little (with ``--style-batch`` styled digits from
    ``pool`` added); shape scenes are mirrored left-right."""
    if args.task == "digits":
        if pool is not None:
            pick = torch.randint(len(pool[0]), (args.style_batch or args.batch_size,), generator=gen)
            images, targets = torch.cat([images, pool[0][pick]]), torch.cat([targets, pool[1][pick]])
        return digits.augment(images, gen, args.shift, args.degrees, args.zoom), targets
    flip = torch.rand(len(images), generator=gen) < 0.5
    images = torch.where(flip.view(-1, 1, 1, 1), images.flip(-1), images)
    targets = torch.where(flip.view(-1, 1, 1), targets.flip(-1), targets)
    return images, targets


@torch.inference_mode()
def predict(model: VisionTransformer, images: np.ndarray, batch: int = 256) -> tuple[np.ndarray, np.ndarray | None]:
    """Predicted classes (N,) or masks (N, H, W), and the last layer's head-averaged attention (N, T, T)."""
    model.eval()
    preds, attn = [], []
    for i in range(0, len(images), batch):
        out = model(torch.from_numpy(images[i : i + batch]), need_weights=True)
        preds.append(out.logits.argmax(1).numpy())
        attn.append(out.weights[-1].weights.mean(1).numpy())
    return np.concatenate(preds), np.concatenate(attn)


def score(model: VisionTransformer, split: tuple[np.ndarray, ...], with_attention: bool = False) -> dict:
    """accuracy (digits) or mean IoU over the shape classes (shapes), with details."""
    pred, attn = predict(model, split[0])
    config = model.config
    if config.task == "classification":
        acc = float((pred == split[1]).mean())
        per = {name: float((pred[split[1] == k] == k).mean()) for k, name in enumerate(config.label_names)}
        return {"main": acc, "accuracy": acc, "accuracy_per_class": per}
    iou = iou_per_class(pred, split[1], config.num_classes)
    out = {"main": float(np.nanmean(iou[1:])), "mean_iou_shapes": float(np.nanmean(iou[1:]))}
    out["iou_per_class"] = {name: float(v) for name, v in zip(config.label_names, iou)}
    out["pixel_accuracy"] = float((pred == split[1]).mean())
    if with_attention:
        share, size = same_object_share(attn, split[2], config.patch_size, int(config.class_token))
        out["last_layer_attention_to_same_object"] = share
        out["object_share_of_image"] = size
    return out


def loss_weights(config: VisionConfig, background_weight: float) -> torch.Tensor | None:
    """(K,) cross-entropy class weights: the background (class 0) at ``background_weight``, the
    shapes at 1; None (plain cross-entropy) for a classifier or a weight of 1."""
    if config.task != "segmentation" or background_weight == 1.0:
        return None
    weights = torch.ones(config.num_classes)
    weights[0] = background_weight
    return weights


def lr_at(progress: float, peak: float, warm: float = 0.05) -> float:
    """Linear warm-up over the first 5 % of training, then cosine decay to 0; progress in [0, 1]."""
    if progress < warm:
        return peak * max(progress, 1e-3) / warm
    return peak * 0.5 * (1 + math.cos(math.pi * min(1.0, (progress - warm) / (1 - warm))))


def run(args: argparse.Namespace) -> dict:
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    start, cpu_start = time.time(), time.process_time()
    config, model = start_model(args)
    data = load_data(args)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    images, targets = (torch.from_numpy(a) for a in data["train"][:2])
    gen = torch.Generator().manual_seed(args.seed)
    class_weights = loss_weights(config, args.background_weight)
    steps_per_epoch = math.ceil(len(images) / args.batch_size)
    total, step, best, history = args.epochs * steps_per_epoch, 0, (-1.0, None, 0), []
    pool = style_pool(
        args,
        data["train"],
        args.seed,
        getattr(args, "style_copies", 0),
        getattr(args, "font_renders", 0),
        getattr(args, "stroke_renders", 0),
    )
    val_styled = style_pool(args, data["val"], 10_000 + args.seed, 2 if pool is not None else 0, 0)

    def used() -> float:
        """The larger share of either budget spent: CPU time of this process, or wall time."""
        cpu = (time.process_time() - cpu_start) / (args.max_minutes * 60)
        return max(cpu, (time.time() - start) / (args.max_wall_minutes * 60))

    for epoch in range(args.epochs):
        if used() >= 1:
            break
        model.train()
        order = torch.randperm(len(images), generator=gen)
        bar = tqdm(range(steps_per_epoch), desc=f"epoch {epoch + 1}/{args.epochs}", leave=False)
        for b in bar:
            spent = used()
            if args.time_schedule and spent >= 1:
                break
            progress = max(step / total, spent if args.time_schedule else 0.0)
            idx = order[b * args.batch_size : (b + 1) * args.batch_size]
            x, y = train_batch(args, images[idx], targets[idx], gen, pool)
            for group in opt.param_groups:
                group["lr"] = lr_at(progress, args.lr)
            loss = F.cross_entropy(model(x).logits, y, weight=class_weights)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            step += 1
            bar.set_postfix(loss=f"{loss.item():.3f}")
        val = score(model, data["val"])["main"]
        cpu = round(time.process_time() - cpu_start, 1)
        entry = {"epoch": epoch + 1, "val": val, "seconds": round(time.time() - start, 1), "cpu_seconds": cpu}
        chosen_by = val
        if val_styled is not None:  # keep the epoch best on plain and styled validation digits alike
            entry["val_styled"] = score(model, tuple(t.numpy() for t in val_styled))["main"]
            chosen_by = (val + entry["val_styled"]) / 2
        history.append(entry)
        tqdm.write(
            f"epoch {epoch + 1}: validation {val:.4f} {entry.get('val_styled', '')} ({time.time() - start:.0f} s)"
        )
        if chosen_by > best[0]:
            best = (chosen_by, copy.deepcopy(model.state_dict()), epoch + 1)
    model.load_state_dict(best[1])
    model.eval()
    seconds = (time.time() - start, time.process_time() - cpu_start)
    metrics = build_metrics(args, model, data, best, history, seconds)
    save_vision_bundle(args.out, model, metrics)
    return metrics


def build_metrics(args, model, data, best, history, seconds) -> dict:
    test = score(model, data["test"], with_attention=True)
    test.pop("main")
    extra = {}
    if args.task == "shapes":
        extra["scenes"] = getattr(args, "scenes", "default")
        n = getattr(args, "condition_scenes", 500)
        extra["validation_by_condition"] = condition_scores(model, n, args.seed, "validation")
        extra["test_by_condition"] = condition_scores(model, n, args.seed)
    return {
        "data": "scikit-learn load_digits, upsampled 8×8 → 32×32"
        if args.task == "digits"
        else "generated shape scenes (transformer.vision.shapes), 32×32 RGB, exact masks",
        "splits": {k: int(len(v[0])) for k, v in data.items()},
        "split_seed": args.seed,
        "best_epoch": best[2],
        "epochs_run": len(history),
        "validation": history[best[2] - 1]["val"],
        **style_metrics(args, history[best[2] - 1]),
        "test": test,
        **extra,
        "history": history,
        "parameters": sum(p.numel() for p in model.parameters()),
        "training_seconds": round(seconds[0], 1),
        "training_cpu_seconds": round(seconds[1], 1),
        "device": "cpu, 1 thread, on a 2-core machine shared with other jobs (hence wall time > CPU time)",
        "torch": torch.__version__,
        "command": "python -m transformer.vision.train " + shlex.join(sys.argv[1:]),
        "initialised_from": getattr(args, "init_from", None),
    }


def style_metrics(args, best_entry: dict) -> dict:
    """What the digit training added beyond the dataset (digit_styles), for metrics.json; {} when nothing."""
    copies, renders = getattr(args, "style_copies", 0), getattr(args, "font_renders", 0)
    strokes = getattr(args, "stroke_renders", 0)
    if args.task != "digits" or copies + renders + strokes == 0:
        return {}
    return {
        "validation_styled": best_entry.get("val_styled"),
        "styles": {
            "copies_per_training_digit": copies,
            "renders_per_font_digit": renders,
            "renders_per_written_form": strokes,
            "written_forms": len(digit_strokes.forms()) if strokes else 0,
            "styled_per_batch": args.style_batch or args.batch_size,
            "training_fonts": [face.name for face in digit_styles.font_faces()] if renders else [],
            "held_out_fonts": [face.name for face in digit_styles.font_faces(held_out=True)],
            "mix": vars(style_mix(args)),
            "best_epoch_chosen_by": "mean of plain and styled validation accuracy",
        },
    }


def main(argv: list[str] | None = None) -> None:
    metrics = run(parse_args(argv))
    print({k: metrics[k] for k in ("validation", "test", "training_seconds")})


if __name__ == "__main__":
    main()
