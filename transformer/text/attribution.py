"""Why did the classifier say that? Per-token attributions and switching attention heads off.

Three per-token scores for one sentence (:func:`attribute`):

* attention rollout to the pooled position: how much the vector the classifier reads draws on
  each token once every layer's attention is chained (a map of information flow, unsigned);
* gradient × input: d(class logit)/d(token embedding) · token embedding, summed over D;
* integrated gradients: gradient × (input − baseline) averaged along the straight path from the
  baseline, which makes the scores add up to logit(input) − logit(baseline) (completeness).

Scores explain a class's *logit* (for a single-sigmoid-logit model: z for class 1, −z for class 0),
because probabilities saturate and gradients vanish there; or, with ``score="log-odds"``, the
class's log-odds log(p / (1 − p)) = z_c − logsumexp of the other logits, which for two classes
is z_1 − z_0: then a positive score pushes towards that class and a negative one towards the other,
whatever the model predicted.

Integrated-gradients baselines (the "no words" input the path starts from; positions, padding
mask and length stay those of the sentence): ``zero`` (all-zero token embeddings), ``pad`` (the
``<pad>`` embedding at every real position), ``unk`` (the ``<unk>`` embedding: every word unknown).

The model is shared by many sessions, so nothing here changes it: gradients come from
``torch.autograd.grad`` with respect to the input embeddings only (no parameter ``.grad`` is
written, no ``requires_grad`` flag is set on a parameter), and the model must already be in eval
mode. Do not call these inside ``torch.inference_mode()``: gradients cannot be taken there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from ..analysis.ablation import chunk_rows
from ..analysis.analyze import analyze, model_device
from ..analysis.rollout import attention_rollout
from ..core.loaded import LoadedModel

RULES = ("gauss-legendre", "trapezoid")
BASELINES = ("zero", "pad", "unk")
SCORES = ("logit", "log-odds")


def _check_eval(model: nn.Module) -> None:
    if model.training:
        raise ValueError("Attributions need a model in eval mode (call model.eval() once after loading).")


def class_scores(logits: torch.Tensor, targets: torch.Tensor, score: str = "logit") -> torch.Tensor:
    """(B, K) logits, (B,) class indices -> (B,) the logit of each row's class, or with
    ``score="log-odds"`` its log-odds z_c − logsumexp(z_j, j ≠ c) (two classes: z_c − z_other).
    One sigmoid logit z (K = 1) means p(1) = σ(z), p(0) = σ(−z): class 1 scores z, class 0 −z
    (which are also the log-odds)."""
    if score not in SCORES:
        raise ValueError(f"score must be one of {', '.join(SCORES)}; got {score!r}.")
    if logits.shape[-1] == 1:
        z = logits[:, 0].float()
        return torch.where(targets == 1, z, -z)
    z = logits.float()
    own = z.gather(1, targets[:, None])[:, 0]
    if score == "logit":
        return own
    others = z.scatter(1, targets[:, None], float("-inf"))
    return own - torch.logsumexp(others, dim=1)


# ---- attention rollout ---------------------------------------------------------------------
def rollout_scores(attention: np.ndarray, pooling: str) -> np.ndarray:
    """attention (L, H, n, n) of one input without padding -> (n,) rollout to the pooled position.

    ``first``/``cls`` pooling reads position 0: its rollout row. ``mean``/``max``/``mean_max`` pool
    over all real tokens, so we average the rollout rows of all of them; for mean pooling that is
    exactly the rollout of the pooled vector, for max pooling (which picks one position per
    dimension) it is an approximation. Entries are >= 0 and sum to 1.
    """
    n = attention.shape[-1]
    joint = attention_rollout(attention)[-1] if attention.shape[0] else np.eye(n, dtype=np.float32)
    row = joint[0] if pooling in ("first", "cls") else joint.mean(axis=0)
    return row.astype(np.float32)


# ---- gradients -------------------------------------------------------------------------------
def gradient_x_input(model: nn.Module, ids: torch.Tensor, targets: torch.Tensor, score: str = "logit") -> torch.Tensor:
    """ids (B, T) (padded with the model's pad id), targets (B,) -> (B, T) gradient × input,
    summed over the embedding dimension; 0 at padding."""
    _check_eval(model)
    emb = model.encoder.embedding.token_embeddings(ids).detach().requires_grad_(True)  # (B, T, D)
    with torch.enable_grad():
        scores = class_scores(model(ids, token_embeddings=emb).logits, targets, score)  # (B,)
        (grad,) = torch.autograd.grad(scores.sum(), emb)  # rows are independent: sum gives per-row grads
    keep = ids != model.config.pad_id
    return ((grad * emb).sum(-1) * keep).detach()


def quadrature(steps: int, rule: str) -> tuple[np.ndarray, np.ndarray]:
    """Points α in [0, 1] and weights (summing to 1) for ∫₀¹ f(α) dα.
    ``trapezoid``: steps intervals, steps + 1 points; ``gauss-legendre``: steps points, exact for
    polynomials of degree < 2·steps, so far fewer steps reach a given completeness error."""
    if steps < 1:
        raise ValueError(f"Integrated gradients needs at least 1 step, not {steps}.")
    if rule == "trapezoid":
        alphas = np.linspace(0.0, 1.0, steps + 1)
        weights = np.full(steps + 1, 1.0 / steps)
        weights[[0, -1]] /= 2
        return alphas, weights
    if rule == "gauss-legendre":
        nodes, weights = np.polynomial.legendre.leggauss(steps)
        return (nodes + 1) / 2, weights / 2
    raise ValueError(f"rule must be one of {', '.join(RULES)}; got {rule!r}.")


def baseline_embeddings(model: nn.Module, ids: torch.Tensor, baseline: str, unk_id: int | None = None) -> torch.Tensor:
    """(B, T, D) baseline token embeddings: all zero, or the (scaled) ``<pad>`` / ``<unk>`` embedding
    at every real position (``unk`` needs the vocabulary's ``unk_id``). Positional encodings and the
    padding mask stay as they are: the baseline is the same sentence with its word content removed.
    Padding positions keep their own embedding."""
    emb = model.encoder.embedding.token_embeddings(ids).detach()
    if baseline == "zero":
        base = torch.zeros_like(emb)
    elif baseline in ("pad", "unk"):
        if baseline == "unk" and unk_id is None:
            raise ValueError("The <unk> baseline needs the vocabulary's unk_id.")
        fill = model.config.pad_id if baseline == "pad" else unk_id
        base = model.encoder.embedding.token_embeddings(torch.full_like(ids, fill)).detach()
    else:
        raise ValueError(f"baseline must be one of {', '.join(BASELINES)}; got {baseline!r}.")
    keep = (ids != model.config.pad_id).unsqueeze(-1)
    return torch.where(keep, base, emb)


@dataclass(frozen=True)
class IntegratedGradients:
    """attributions (B, T), 0 at padding; delta (B,) = F(input) − F(baseline); error (B,) =
    |sum(attributions) − delta| (the completeness error of the quadrature); start, end (B,):
    F(baseline) and F(input), F the explained score (``score``: logit or log-odds)."""

    attributions: torch.Tensor
    delta: torch.Tensor
    error: torch.Tensor
    steps: int
    rule: str
    baseline: str
    start: torch.Tensor | None = None
    end: torch.Tensor | None = None
    score: str = "logit"


def integrated_gradients(
    model: nn.Module,
    ids: torch.Tensor,
    targets: torch.Tensor,
    steps: int = 50,
    rule: str = "gauss-legendre",
    baseline: str = "zero",
    score: str = "logit",
    unk_id: int | None = None,
) -> IntegratedGradients:
    """Integrated gradients of each row's class logit (or log-odds) with respect to its token embeddings.

    ids (B, T), targets (B,). All path points (plus the input and the baseline, to measure
    completeness) run as one batch of (points·B, T, D), chunked only when that would not fit ELEMENT_BUDGET.
    """
    _check_eval(model)
    x = model.encoder.embedding.token_embeddings(ids).detach()  # (B, T, D)
    base = baseline_embeddings(model, ids, baseline, unk_id)
    alphas, weights = quadrature(steps, rule)
    # two extra points with weight 0: α = 1 (the input) and α = 0 (the baseline) give F(x) − F(b)
    alphas = torch.tensor(np.r_[alphas, 1.0, 0.0], dtype=x.dtype, device=x.device)
    weights = torch.tensor(np.r_[weights, 0.0, 0.0], dtype=x.dtype, device=x.device)
    b, t, _ = x.shape
    per_chunk = chunk_rows(model, t, b)
    total = torch.zeros_like(x)
    ends = []
    for start in range(0, len(alphas), per_chunk):
        a, w = alphas[start : start + per_chunk], weights[start : start + per_chunk]
        grads, scores = _path_gradients(model, ids, x, base, a, targets, score)  # (S, B, T, D), (S, B)
        total += (w.view(-1, 1, 1, 1) * grads).sum(0)
        ends.append(scores)
    scores = torch.cat(ends)  # (points, B)
    keep = ids != model.config.pad_id
    attributions = ((x - base) * total).sum(-1) * keep  # (B, T)
    delta = scores[-2] - scores[-1]
    error = (attributions.sum(-1) - delta).abs()
    return IntegratedGradients(attributions, delta, error, steps, rule, baseline, scores[-1], scores[-2], score)


def _path_gradients(model, ids, x, base, alphas, targets, score="logit") -> tuple[torch.Tensor, torch.Tensor]:
    """Gradients (S, B, T, D) and class logits (S, B) at the S points base + α·(x − base)."""
    s, (b, t, d) = len(alphas), x.shape
    path = (base + alphas.view(-1, 1, 1, 1) * (x - base)).reshape(s * b, t, d).requires_grad_(True)
    with torch.enable_grad():
        logits = model(ids.repeat(s, 1), token_embeddings=path).logits  # point-major: row p·B + i
        scores = class_scores(logits, targets.repeat(s), score)
        (grad,) = torch.autograd.grad(scores.sum(), path)
    return grad.view(s, b, t, d), scores.detach().view(s, b)


# ---- one sentence ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Attributions:
    """Everything the page shows for one sentence of n tokens (what the model saw).

    probabilities (K labels,); target: the class explained; rollout, grad_input, integrated: (n,);
    score: what is explained, the target's ``logit`` or ``log-odds``; ig_start, ig_end: that score
    at the baseline and at the input; ig_delta = ig_end − ig_start; ig_error = |sum(integrated) − ig_delta|.
    """

    text: str
    tokens: list[str]
    truncated: bool
    label_names: list[str]
    probabilities: np.ndarray
    target: int
    rollout: np.ndarray
    grad_input: np.ndarray
    integrated: np.ndarray
    ig_delta: float
    ig_error: float
    ig_steps: int
    ig_rule: str
    ig_baseline: str
    score: str = "logit"
    ig_start: float = float("nan")
    ig_end: float = float("nan")

    @property
    def predicted(self) -> int:
        return int(self.probabilities.argmax())

    @property
    def target_label(self) -> str:
        return self.label_names[self.target]


def sentence_ids(loaded: LoadedModel, text: str, max_len: int | None = None):
    """(AnalysisResult of ``text`` alone, ids (1, n) on the model's device)."""
    result = analyze(loaded, [text], max_len)
    ids = torch.as_tensor(result.ids[:, : int(result.lengths[0])], device=model_device(loaded))
    return result, ids


def resolve_target(label_names: list[str], probabilities: np.ndarray, target: int | str | None) -> int:
    """A class index from an index, a label name, or None (the predicted class)."""
    if target is None:
        return int(probabilities.argmax())
    index = label_names.index(target) if isinstance(target, str) and target in label_names else target
    if not isinstance(index, int) or not 0 <= index < len(label_names):
        raise ValueError(f"Unknown class {target!r}: choose one of {', '.join(label_names)}.")
    return index


def attribute(
    loaded: LoadedModel,
    text: str,
    target: int | str | None = None,
    steps: int = 50,
    rule: str = "gauss-legendre",
    baseline: str = "zero",
    max_len: int | None = None,
    score: str = "logit",
) -> Attributions:
    """The three attributions of ``text`` for class ``target`` (index or name; default: predicted);
    ``score``: explain the target's ``logit`` or its ``log-odds`` (see the module docstring)."""
    if loaded.config.kind != "classifier":
        raise ValueError("Attributions need a classifier; this model is an encoder-decoder.")
    result, ids = sentence_ids(loaded, text, max_len)
    # the model's own softmax (analyze()'s probabilities are calibrated; callers rescale themselves)
    probs = (result.probabilities if result.raw_probabilities is None else result.raw_probabilities)[0]
    index = resolve_target(result.label_names, probs, target)
    targets = torch.tensor([index], device=ids.device)
    model = loaded.model
    ig = integrated_gradients(model, ids, targets, steps, rule, baseline, score, loaded.vocab.unk_id)
    return Attributions(
        text=text,
        tokens=result.tokens[0],
        truncated=bool(result.truncated[0]),
        label_names=result.label_names,
        probabilities=probs,
        target=index,
        rollout=rollout_scores(result.attention_for(0), loaded.config.pooling),
        grad_input=gradient_x_input(model, ids, targets, score)[0].float().cpu().numpy(),
        integrated=ig.attributions[0].float().cpu().numpy(),
        ig_delta=float(ig.delta[0]),
        ig_error=float(ig.error[0]),
        ig_steps=steps,
        ig_rule=rule,
        ig_baseline=baseline,
        score=score,
        ig_start=float(ig.start[0]),
        ig_end=float(ig.end[0]),
    )


def rank_correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rank correlation of two (n,) vectors (ties get their average rank); NaN when
    n < 2 or either vector is constant."""
    if len(a) < 2:
        return float("nan")
    ra, rb = _ranks(np.asarray(a, dtype=np.float64)), _ranks(np.asarray(b, dtype=np.float64))
    if ra.std() == 0 or rb.std() == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


def _ranks(x: np.ndarray) -> np.ndarray:
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    upper = np.cumsum(counts)  # 1-based rank of the last member of each tie group
    return (upper - (counts - 1) / 2)[inverse]


def top_tokens(tokens: list[str], scores: np.ndarray, k: int = 3) -> list[tuple[int, str, float]]:
    """The k (position, token, score) with the largest |score|, largest first."""
    order = np.argsort(-np.abs(scores), kind="stable")[:k]
    return [(int(i), tokens[i], float(scores[i])) for i in order]


@dataclass(frozen=True)
class Evidence:
    """How far attention agrees with attribution for one sentence: Spearman's ρ between the
    rollout and |integrated gradients| (attention has no sign, so magnitudes are compared), and
    the top tokens of each."""

    rho: float
    top_rollout: list[tuple[int, str, float]]
    top_integrated: list[tuple[int, str, float]]


def attention_vs_attribution(attr: Attributions, k: int = 3) -> Evidence:
    return Evidence(
        rank_correlation(attr.rollout, np.abs(attr.integrated)),
        top_tokens(attr.tokens, attr.rollout, k),
        top_tokens(attr.tokens, attr.integrated, k),
    )


# ---- two sentences ---------------------------------------------------------------------------
def align_tokens(a: list[str], b: list[str]) -> list[tuple[int | None, int | None]]:
    """Pairs of positions (i in a, j in b) from a token diff; None marks a token the other lacks.

    A diff rather than position: "good" vs "not good" pairs good with good and leaves "not"
    alone, where aligning by position would pair "good" with "not". Replaced runs pair up by
    position within the run ("great" vs "awful"), leftovers stand alone.
    """
    import difflib

    pairs: list[tuple[int | None, int | None]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op in ("equal", "replace"):
            common = min(i2 - i1, j2 - j1)
            pairs += [(i1 + k, j1 + k) for k in range(common)]
            pairs += [(i, None) for i in range(i1 + common, i2)]
            pairs += [(None, j) for j in range(j1 + common, j2)]
        elif op == "delete":
            pairs += [(i, None) for i in range(i1, i2)]
        else:  # insert
            pairs += [(None, j) for j in range(j1, j2)]
    return pairs


@dataclass(frozen=True)
class Comparison:
    """Two sentences explained for the same class, with their tokens aligned (see align_tokens)."""

    a: Attributions
    b: Attributions
    pairs: list[tuple[int | None, int | None]]

    def aligned(self, kind: str) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
        """Tokens (gaps as "") and scores (gaps NaN) of both sentences, one column per pair.
        kind: ``rollout``, ``grad_input`` or ``integrated``."""
        tokens_a = [self.a.tokens[i] if i is not None else "" for i, _ in self.pairs]
        tokens_b = [self.b.tokens[j] if j is not None else "" for _, j in self.pairs]
        va, vb = getattr(self.a, kind), getattr(self.b, kind)
        scores_a = np.array([va[i] if i is not None else np.nan for i, _ in self.pairs], dtype=np.float32)
        scores_b = np.array([vb[j] if j is not None else np.nan for _, j in self.pairs], dtype=np.float32)
        return tokens_a, tokens_b, scores_a, scores_b


def compare(loaded: LoadedModel, text_a: str, text_b: str, target: int | str | None = None, **options) -> Comparison:
    """Attributions of both sentences for one class (default: the first sentence's prediction), so
    that a sign means the same in both rows; ``options`` go to :func:`attribute`."""
    a = attribute(loaded, text_a, target, **options)
    b = attribute(loaded, text_b, a.target, **options)
    return Comparison(a, b, align_tokens(a.tokens, b.tokens))
