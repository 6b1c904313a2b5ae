"""Held-out measures for the vision models: accuracy, IoU per class, same-object attention share."""

from __future__ import annotations

import numpy as np


def iou_per_class(predicted: np.ndarray, true: np.ndarray, num_classes: int) -> np.ndarray:
    """(K,) intersection over union of each class over all pixels given; NaN where a class is
    in neither. predicted, true: integer arrays of the same shape."""
    out = np.full(num_classes, np.nan)
    for k in range(num_classes):
        p, t = predicted == k, true == k
        union = np.logical_or(p, t).sum()
        if union:
            out[k] = np.logical_and(p, t).sum() / union
    return out


def patch_objects(objects: np.ndarray, patch_size: int) -> np.ndarray:
    """objects (H, W) object ids -> (gh·gw,) the object covering more than half of each patch (0: none)."""
    h, w = objects.shape
    p = patch_size
    blocks = objects.reshape(h // p, p, w // p, p).transpose(0, 2, 1, 3).reshape(-1, p * p)
    out = np.zeros(len(blocks), dtype=np.int64)
    for i, block in enumerate(blocks):
        ids, counts = np.unique(block, return_counts=True)
        best = counts.argmax()
        if ids[best] and counts[best] * 2 > p * p:
            out[i] = ids[best]
    return out


def same_object_share(attention: np.ndarray, objects: np.ndarray, patch_size: int, offset: int) -> tuple[float, float]:
    """How much of each object patch's attention goes to patches of the same object, against that
    object's share of the image's patches. attention (N, T, T) one layer, heads averaged;
    objects (N, H, W); ``offset`` 1 when token 0 is the class token.
    Returns (mean attention share, mean object share) over all object patches as queries."""
    shares, sizes = [], []
    for attn, obj in zip(attention, objects):
        owners = patch_objects(obj, patch_size)  # (P,)
        patches = attn[offset:, offset:]  # (P, P) patch queries to patch keys
        for oid in np.unique(owners[owners > 0]):
            members = owners == oid
            shares.extend(patches[members][:, members].sum(axis=1))
            sizes.extend([members.mean()] * int(members.sum()))
    return float(np.mean(shares)), float(np.mean(sizes))
