"""Many generations' prompts read in one pass over the weights.

Every prompt is read up to its last token (what ``Decoding.read_prompt`` does for one), the prompts of one
model and one head mask side by side: (B, T_max) ids, each prompt followed by copies of its last id up to
the longest. A causal model's token never sees a later position, so each prompt's own positions compute
what they compute alone; the padding's keys and values are computed and dropped. Each generation then gets
its own cache, a copy of its rows. One pass reads the weights once for the class instead of once per
prompt: on one CPU thread, 20 prompts of about 12 tokens of SmolLM2 in one pass cost what 6-7 read one by
one cost (bench/bench_generate_class.py measures the whole).
"""

from __future__ import annotations

import torch

from ..lm.cache import forward_cached
from ..lm.decode import PROMPT_CHUNK, Decoding
from .batch_cache import row_cache

BATCH_PROMPT_TOKENS = (
    2048  # padded prompt tokens in one pass (its attention scores stay B x H x T x T <= 2048 x H x 256)
)


@torch.no_grad()
def read_prompts(decodings: list[Decoding]) -> None:
    """Read each decoding's unread prompt (all of one model); prompts longer than PROMPT_CHUNK, and a group of
    one, are read alone (in chunks), the others together in passes of at most BATCH_PROMPT_TOKENS."""
    waiting = [d for d in decodings if d.unread_prompt()]
    for group in _groups(waiting):
        if len(group) == 1:
            group[0].read_prompt()
        else:
            _read_together(group)


def _groups(decodings: list[Decoding]) -> list[list[Decoding]]:
    """Decodings of one head mask, shortest prompt first, packed while B x T_max <= BATCH_PROMPT_TOKENS; a
    long prompt in a group of its own."""
    by_gate: list[list[Decoding]] = []
    for decoding in sorted(decodings, key=lambda d: len(d.unread_prompt())):
        same = next((g for g in by_gate if _same_gate(g[0].gate, decoding.gate)), None)
        if same is None:
            by_gate.append([decoding])
        else:
            same.append(decoding)
    groups: list[list[Decoding]] = []
    for members in by_gate:
        group: list[Decoding] = []
        for decoding in members:
            length = len(decoding.unread_prompt())
            if length > PROMPT_CHUNK:
                groups.append([decoding])
                continue
            if group and (len(group) + 1) * length > BATCH_PROMPT_TOKENS:
                groups.append(group)
                group = []
            group.append(decoding)
        if group:
            groups.append(group)
    return groups


def _same_gate(a: torch.Tensor | None, b: torch.Tensor | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and torch.equal(a, b))


def _read_together(decodings: list[Decoding]) -> None:
    model = decodings[0].model
    device = next(model.parameters()).device
    prompts = [d.unread_prompt() for d in decodings]
    longest = max(len(p) for p in prompts)
    ids = torch.tensor([p + p[-1:] * (longest - len(p)) for p in prompts], device=device)  # (B, T_max)
    batch = forward_cached(model, ids, None, False, decodings[0].gate, logits=False).cache
    for n, (decoding, prompt) in enumerate(zip(decodings, prompts)):
        decoding.prompt_read(row_cache((layer.self_attn.current() for layer in batch.layers), n, len(prompt)))
