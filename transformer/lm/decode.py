"""Generation, one token at a time, with or without the key/value cache, recording at each step
what the Generate page shows: the likeliest tokens, the chosen token, and the attention row of the
token that made the prediction, per layer and head.

A generation in progress is a :class:`Decoding`: it says which ids the model reads next and takes
the model's answer (the last logits and attention rows) back. :func:`generate` runs one alone; a
scheduler (``transformer.serving``) steps many together through the same object, so a token chosen
in a batch is chosen exactly as alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..core.decoder import DecoderLM
from .cache import KVCache, forward_cached
from .sampling import Sampling, choose, filtered_probabilities

MAX_STEPS = 512  # no call generates more than this, whatever is asked (the context is the real bound)
KEEP_TOP = 20  # tokens a step record keeps (the page's bars and force menu); never the whole vocabulary
# bytes of attention rows (L x H x T float32 per step) one generation keeps; the steps past it keep none and
# their rows are recomputed when asked (:func:`step_rows`): SmolLM2's 30 x 9 heads at 1,000 tokens are 1.1 MB a step
ROWS_BUDGET = 32_000_000
PROMPT_CHUNK = 256  # prompt tokens read at once (a long prompt's attention scores stay chunk x T, not T x T)


@dataclass(frozen=True)
class Step:
    """One generated token, bounded whatever the vocabulary: ``top_ids`` (k,) the k likeliest tokens
    (most likely first, ties by id), ``top_probs`` their softmax probabilities and ``top_filtered``
    their probabilities after the sampling settings (float64); ``chosen_prob`` / ``chosen_filtered``
    the chosen token's; ``chosen_rank`` how many tokens the model found likelier than it; ``kept`` how
    many tokens the sampling settings left to draw from; attention: (L, H, T) float32, the attention row
    of the last prefix token (the query that predicted this token) over the T prefix tokens, None past the
    generation's ROWS_BUDGET (:func:`step_rows` gives them); forced: True when the token was given, not chosen."""

    position: int
    token_id: int
    top_ids: np.ndarray
    top_probs: np.ndarray
    top_filtered: np.ndarray
    chosen_prob: float
    chosen_filtered: float
    chosen_rank: int
    kept: int
    attention: np.ndarray | None
    forced: bool

    @property
    def nbytes(self) -> int:
        """Bytes of the record's arrays."""
        arrays = (self.top_ids, self.top_probs, self.top_filtered, self.attention)
        return sum(a.nbytes for a in arrays if a is not None)


@dataclass(frozen=True)
class Generation:
    """ids: prompt + generated ids; steps: one record per generated token; stopped: why it ended
    ("steps": as many as asked; "context": the model's context filled; "limit": MAX_STEPS reached;
    "end": the ``stop_at`` token was produced)."""

    ids: list[int]
    prompt_length: int
    steps: list[Step]
    stopped: str


def _check_prompt(model: DecoderLM, ids: list[int]) -> None:
    if not ids:
        raise ValueError("The prompt is empty: give at least one token.")
    if len(ids) > model.config.max_len:
        raise ValueError(
            f"The prompt has {len(ids)} tokens; this model reads at most {model.config.max_len}. Shorten it."
        )


def step_record(logits: torch.Tensor, sampling: Sampling, token: int | None, generator, keep: int = KEEP_TOP):
    """(the chosen token, its record's numbers) from one step's logits (V,): ``token`` when forced, else
    chosen from the filtered distribution. The full distributions live only inside this call."""
    probs = torch.softmax(logits.double(), -1)
    filtered = filtered_probabilities(logits, sampling)
    chosen = choose(filtered, generator) if token is None else int(token)
    top = likeliest(probs, keep)
    p = float(probs[chosen])
    numbers = dict(
        top_ids=top.cpu().numpy(),
        top_probs=probs[top].cpu().numpy(),
        top_filtered=filtered[top].cpu().numpy(),
        chosen_prob=p,
        chosen_filtered=float(filtered[chosen]),
        chosen_rank=int((probs > p).sum()),
        kept=int((filtered > 0).sum()),
    )
    return chosen, numbers


def likeliest(probs: torch.Tensor, k: int) -> torch.Tensor:
    """The ids of the ``k`` largest of ``probs`` (V,), largest first, equal ones by id (as a stable sort
    of the whole vocabulary orders them, without sorting it: only the tokens tied with the k-th or above)."""
    k = min(k, probs.shape[0])
    if k == 0:
        return torch.zeros(0, dtype=torch.long, device=probs.device)
    threshold = torch.topk(probs, k).values[-1]
    candidates = torch.nonzero(probs >= threshold).flatten()  # ascending ids
    if candidates.shape[0] < k:  # NaN among the probabilities: the plain stable sort
        return torch.argsort(probs, descending=True, stable=True)[:k]
    return candidates[torch.argsort(probs[candidates], descending=True, stable=True)[:k]]


class Decoding:
    """One generation in progress. ``pending``: the ids the model reads next (the prompt, then each
    new token); ``cache``: its key/value cache (None before the prompt is read); :meth:`take` gives it
    the model's last logits (V,) and attention rows (L, H, T) and chooses the next token.

    forced: {step index: token id} puts that token at that step instead of the chosen one. head_mask
    (L, H): 1 = on, 0 = off. Raises ValueError for an empty or too long prompt."""

    def __init__(
        self,
        model: DecoderLM,
        ids: list[int],
        steps: int,
        sampling: Sampling = Sampling(),
        forced: dict[int, int] | None = None,
        head_mask: torch.Tensor | None = None,
        stop_at: int | None = None,
    ) -> None:
        _check_prompt(model, ids)
        shape = (len(model.layers), model.config.num_heads)
        if head_mask is not None and tuple(head_mask.shape) != shape:
            raise ValueError(f"head_mask must have shape {shape} (layers, heads); got {tuple(head_mask.shape)}.")
        self.model = model
        self.sampling = sampling
        self.forced = dict(forced or {})
        self.gate = None if head_mask is None else head_mask.to(next(model.parameters()).device)
        self.stop_at = stop_at
        self.generator = None if sampling.picks_the_top else torch.Generator().manual_seed(sampling.seed)
        self.ids = list(ids)
        self.prompt_length = len(ids)
        self.asked = int(steps)
        self.budget = min(max(self.asked, 0), MAX_STEPS, model.config.max_len - len(ids))
        self.steps: list[Step] = []
        self.rows_bytes = 0  # attention rows kept so far (at most ROWS_BUDGET)
        self.cache: KVCache | None = None
        self.pending = list(ids)
        self.stopped = "steps"
        self.done = self.budget == 0
        self._settle()

    @torch.no_grad()
    def read_prompt(self) -> None:
        """Read the prompt up to its last token into a new cache (no weights, no logits), leaving that last
        token pending: its step, which gives the first prediction, can then be taken with other generations'.
        A one-token prompt is left as it is (its first step makes the cache)."""
        if self.unread_prompt():
            self.prompt_read(read_into_cache(self.model, self.unread_prompt(), None, self.gate))

    def unread_prompt(self) -> list[int]:
        """The ids :meth:`read_prompt` reads (the prompt but its last token); [] once read, or for one token."""
        return self.pending[:-1] if self.cache is None else []

    def prompt_read(self, cache: KVCache) -> None:
        """Take ``cache``, holding :meth:`unread_prompt`'s keys and values (read here or with other prompts)."""
        self.cache = cache
        self.pending = self.pending[-1:]

    def take(self, logits: torch.Tensor, attention: np.ndarray) -> int:
        """Record the step whose last logits are ``logits`` (V,) and attention rows (L, H, T); returns the token."""
        index = len(self.steps)
        token, numbers = step_record(logits, self.sampling, self.forced.get(index), self.generator)
        if self.rows_bytes + attention.nbytes > ROWS_BUDGET:
            attention = None
        else:
            self.rows_bytes += attention.nbytes
        self.steps.append(Step(len(self.ids), token, attention=attention, forced=index in self.forced, **numbers))
        self.ids.append(token)
        self.pending = [token]
        if self.stop_at is not None and token == self.stop_at:
            self.stopped, self.done = "end", True
        elif len(self.steps) >= self.budget:
            self.done = True
            self._settle()
        return token

    def _settle(self) -> None:
        """Why a generation that used its whole budget stopped (the context, the step limit or as asked)."""
        if self.done and self.stopped != "end" and self.budget < self.asked:
            full = self.budget == self.model.config.max_len - self.prompt_length
            self.stopped = "context" if full else "limit"

    def result(self) -> Generation:
        return Generation(self.ids, self.prompt_length, self.steps, self.stopped)


@torch.no_grad()
def generate(
    model: DecoderLM,
    ids: list[int],
    steps: int,
    sampling: Sampling = Sampling(),
    forced: dict[int, int] | None = None,
    head_mask: torch.Tensor | None = None,
    use_cache: bool = True,
    stop_at: int | None = None,
) -> Generation:
    """Continue ``ids`` by up to ``steps`` tokens (bounded by MAX_STEPS and the context), alone.

    See :class:`Decoding` for the settings. ``use_cache=False`` re-runs the whole prefix each step (the
    reference the cache is tested against)."""
    decoding = Decoding(model, ids, steps, sampling, forced, head_mask, stop_at)
    while not decoding.done:
        step_alone(decoding, use_cache)
    return decoding.result()


@torch.no_grad()
def step_alone(decoding: Decoding, use_cache: bool = True) -> int:
    """One step of ``decoding`` by itself (its pending ids after its cache); returns the token."""
    model = decoding.model
    if use_cache:
        out = read_cached(model, decoding.pending, decoding.cache, decoding.gate)
        logits, weights, decoding.cache = out.logits[0, -1], out.attention, out.cache
    else:  # the reference the cache is tested against: every layer's T x T weights, each step
        device = next(model.parameters()).device
        out = model(torch.tensor([decoding.ids], device=device), need_weights=True, head_mask=decoding.gate)
        logits, weights = out.logits[0, -1], [w.weights for w in out.attention]
    rows = np.stack([w[0, :, -1].float().cpu().numpy() for w in weights])  # (L, H, T)
    return decoding.take(logits.float(), rows)


def read_cached(model: DecoderLM, ids: list[int], cache: KVCache | None, gate: torch.Tensor | None):
    """``forward_cached`` of ``ids`` after ``cache`` with the attention weights of the last id only: the ids
    before it (a prompt) are read by :func:`read_into_cache`. Returns the last call's ``CachedOutput`` (logits
    and weights of the last id)."""
    device = next(model.parameters()).device
    cache = read_into_cache(model, ids[:-1], cache, gate)
    return forward_cached(model, torch.tensor([ids[-1:]], device=device), cache, True, gate)


def read_into_cache(model: DecoderLM, ids: list[int], cache: KVCache | None, gate: torch.Tensor | None):
    """The cache after reading ``ids`` (none: ``cache`` as it is), PROMPT_CHUNK at a time without weights or
    logits, so no T x T matrix and no T x vocabulary logits are made (30 layers x 9 heads x 1,000² tokens
    would be 1 GB on SmolLM2; a chunk's scores are at most PROMPT_CHUNK x T per head)."""
    device = next(model.parameters()).device
    for start in range(0, len(ids), PROMPT_CHUNK):
        chunk = torch.tensor([ids[start : start + PROMPT_CHUNK]], device=device)
        cache = forward_cached(model, chunk, cache, False, gate, logits=False).cache
    return cache


@torch.no_grad()
def step_rows(model: DecoderLM, ids: list[int], head_mask: torch.Tensor | None = None) -> np.ndarray:
    """(L, H, T) float32: the attention row of the last of ``ids`` over all T of them, per layer and head (a
    step's ``attention`` for the prefix ``ids``), with :func:`read_cached` (no T x T matrix)."""
    _check_prompt(model, ids)
    gate = None if head_mask is None else head_mask.to(next(model.parameters()).device)
    return np.stack([w[0, :, -1].float().cpu().numpy() for w in read_cached(model, ids, None, gate).attention])


@torch.no_grad()
def next_token_probs(model: DecoderLM, ids: list[int], head_mask: torch.Tensor | None = None) -> np.ndarray:
    """(V,) the model's next-token probabilities after ``ids`` (no sampling settings)."""
    _check_prompt(model, ids)
    device = next(model.parameters()).device
    gate = None if head_mask is None else head_mask.to(device)
    logits = model(torch.tensor([ids], device=device), head_mask=gate).logits[0, -1]
    return torch.softmax(logits.double(), -1).cpu().numpy()
