"""What the Vision page decides apart from its layout, as pure functions: which picture sources fit a
model, the attention map a view shows, the texts of the model card and the prediction, the arrays a
download holds."""

from __future__ import annotations

import numpy as np

from transformer.vision.maps import mean_maps, query_maps, rollout_maps

from .i18n import translate

SOURCES = ("test", "random", "upload", "camera", "draw", "scene")
VIEWS = ("cls", "mean", "rollout")
SHAPES = ("circle", "square", "triangle")


def picture_sources(segmenter: bool, drawings: bool, own_pictures_only: bool) -> list[str]:
    """The picture sources that fit a model: test scenes only for a segmenter, drawing only for a model that
    reads drawn digits, and only the user's own pictures for an upload or import (whose size need not fit
    the bundled test pictures)."""
    if own_pictures_only:
        return ["upload", "camera"]
    return [s for s in SOURCES if (segmenter or s != "scene") and (drawings or s != "draw")]


NAME_KEYS = {
    "source_": {"test": "vision.source_test", "random": "vision.source_random", "upload": "vision.source_upload",
                "camera": "vision.source_camera", "draw": "vision.source_draw", "scene": "vision.source_scene"},
    "view_": {"cls": "vision.view_cls", "mean": "vision.view_mean", "rollout": "vision.view_rollout"},
    "shape_": {"circle": "vision.shape_circle", "square": "vision.shape_square", "triangle": "vision.shape_triangle"},
}  # fmt: skip


def names(prefix: str, keys, lang: str) -> dict[str, str]:
    """{key: its text in ``lang``} for the sources ("source_"), views ("view_") or shapes ("shape_")."""
    return {key: translate(NAME_KEYS[prefix][key], lang) for key in keys}


def attention_map(attention: np.ndarray, view: str, layer: int, head: int, grid: int, lang: str):
    """(grid × grid map, title) of what the class token reads in ``view`` ("cls": one head; "mean": the
    layer's mean over heads; "rollout": attention chained up to the layer). ``attention``: (L, H, T, T)."""
    if view == "cls":
        return query_maps(attention, 0, grid, 1)[layer, head], translate(
            "vision.title_cls", lang, layer=layer + 1, head=head + 1
        )
    if view == "mean":
        return mean_maps(attention, 0, grid, 1)[layer], translate("vision.title_mean", lang, layer=layer + 1)
    return rollout_maps(attention, 0, grid, 1)[layer], translate("vision.title_rollout", lang, layer=layer + 1)


def top_classes(probabilities: np.ndarray, label_names, k: int = 3) -> str:
    """ "**7** 91.2 %, **1** 4.0 %, **9** 2.1 %": the ``k`` likeliest classes."""
    top = np.argsort(probabilities)[::-1][:k]
    return ", ".join(f"**{label_names[i]}** {100 * probabilities[i]:.1f} %" for i in top)


def metrics_text(metrics: dict | None, classification: bool, lang: str) -> str:
    """The model's held-out numbers from its metrics.json ("" when it has none)."""
    test = (metrics or {}).get("test")
    if not test:
        return ""
    n = (metrics.get("splits") or {}).get("test", 0)
    if classification:
        return translate("vision.metrics_classification", lang, acc=100 * test["accuracy"], n=n)
    return translate(
        "vision.metrics_segmentation",
        lang,
        iou=test["mean_iou_shapes"],
        n=n,
        same=100 * test["last_layer_attention_to_same_object"],
        share=100 * test["object_share_of_image"],
    )


def head_labels(num_layers: int, num_heads: int, lang: str) -> dict[tuple[int, int], str]:
    """{(layer, head): "layer 2, head 3"} for every head (0-based keys, 1-based names)."""
    pairs = [(layer, head) for layer in range(num_layers) for head in range(num_heads)]
    return {p: translate("vision.layer_head", lang, layer=p[0] + 1, head=p[1] + 1) for p in pairs}


def download_arrays(result) -> dict[str, np.ndarray]:
    """The first picture's arrays of a vision analysis, as the .npz download holds them."""
    arrays = dict(
        image=result.images[0],
        patches=result.patches[0],
        attention=result.attention[0],
        probabilities=result.probabilities[0],
        label_names=np.array(result.label_names, dtype=str),
        tokens=np.array(result.tokens, dtype=str),
    )
    if result.mask is not None:
        arrays["mask"] = result.mask[0]
    return arrays


def model_texts(loaded, imported: bool, lang: str) -> list[str]:
    """The model card's lines: what the model does on its grid of patches, its held-out numbers, and for an
    upload or import what it reads (image size, patch size, channels, normalisation, classes)."""
    c = loaded.config
    classification = c.task == "classification"
    about = "vision.about_classification" if classification else "vision.about_segmentation"
    texts = [
        translate(about, lang, grid=c.grid, patch=c.patch_size),
        metrics_text(loaded.metrics, classification, lang),
    ]
    if imported:
        from .vision_models import normalisation_text

        mean, std = normalisation_text(c.pixel_mean), normalisation_text(c.pixel_std)
        texts.append(translate("vision.imported_about", lang, size=c.image_size, patch=c.patch_size,
                               channels=c.channels, classes=c.num_classes, mean=mean, std=std))  # fmt: skip
    return [text for text in texts if text]


def iou_table(names, iou: np.ndarray, lang: str) -> dict[str, list[str]]:
    """The per-class intersection over union as a two-column table ("—" for a class in neither mask)."""
    rows = list(zip(names, iou))
    values = ["—" if np.isnan(v) else f"{v:.3f}" for _, v in rows]
    return {translate("vision.iou_class", lang): [name for name, _ in rows], translate("vision.iou", lang): values}
