"""Hugging Face Vision Transformers (``ViTForImageClassification``, e.g. ``google/vit-base-patch16-224``)
as our :class:`~transformer.vision.model.VisionTransformer`, the model the Vision page shows.

What HF ViT is, in our config's words: a p × p convolution with stride p over the image (our
patch embedding: the filter (D, C, p, p) is a (D, C·p·p) matrix over patches flattened as
(channel, row, column)), a class token, learned positions, pre-LN blocks with GELU, a final
LayerNorm and a linear classifier on the class token. Its images are normalised per channel by
``preprocessor_config.json`` (``image_mean``, ``image_std``); our model takes [0, 1] pixels and
applies that normalisation itself.
"""

from __future__ import annotations

import math

import torch

from ..checkpoints.errors import CodedError
from ..core.config import MAX_PARAMETERS
from ..vision.bundle import VisionModel
from ..vision.config import VisionConfig
from ..vision.model import VisionTransformer

# ViTImageProcessor's defaults when a folder has no preprocessor_config.json (IMAGENET_STANDARD_*)
DEFAULT_MEAN = (0.5, 0.5, 0.5)
DEFAULT_STD = (0.5, 0.5, 0.5)
# HF activation names -> ours (ACT2FN "gelu" is the exact erf form, as our "gelu")
ACTIVATIONS = {"gelu": "gelu", "relu": "relu"}
MAX_IMAGE_SIZE = 1024
MAX_TOKENS = 4097  # positions: a 64 × 64 grid of patches and the class token
# per layer, our name -> HF names as files hold them: the names save_pretrained writes (and the hub
# holds), then those of transformers' own modules in recent versions
LAYER = {
    "self_attn.w_q": ("attention.attention.query", "attention.q_proj"),
    "self_attn.w_k": ("attention.attention.key", "attention.k_proj"),
    "self_attn.w_v": ("attention.attention.value", "attention.v_proj"),
    "self_attn.w_o": ("attention.output.dense", "attention.o_proj"),
    "attn_block.norm": ("layernorm_before",),
    "ffn.linear1": ("intermediate.dense", "mlp.fc1"),
    "ffn.linear2": ("output.dense", "mlp.fc2"),
    "ffn_block.norm": ("layernorm_after",),
}
LAYER_PREFIXES = ("encoder.layer.", "layers.")


def _square(value: object, key: str) -> int:
    """An int, or a [h, w] pair with h == w (this app's grids are square)."""
    if isinstance(value, list | tuple):
        if len(value) != 2 or value[0] != value[1]:
            raise ValueError(f"config.json: {key} {value} is not square; this app shows square images.")
        value = value[0]
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"config.json: {key} must be a positive whole number, not {value!r}.")
    return value


def label_names(hf_config: dict) -> tuple[tuple[str, ...], bool]:
    """The classes in id order from ``id2label`` (keys are strings in config.json), and whether
    they are only the placeholders ``LABEL_0``, ``LABEL_1`` … that transformers writes by default."""
    id2label = hf_config.get("id2label") or {}
    try:
        labels = {int(k): str(v) for k, v in id2label.items()}
    except (TypeError, ValueError, AttributeError) as err:
        raise ValueError("config.json: id2label must map class numbers to names.") from err
    if sorted(labels) != list(range(len(labels))):
        raise ValueError("config.json: id2label must number its classes 0, 1, 2, … without gaps.")
    names = tuple(labels[i] for i in range(len(labels)))
    return names, all(name == f"LABEL_{i}" for i, name in enumerate(names))


def normalisation(preprocessor: dict | None, channels: int) -> tuple[tuple[float, ...], tuple[float, ...], str]:
    """(mean, std, where they came from) for the model's [0, 1] pixels. The processor maps bytes
    b (0-255) to (b · rescale_factor - image_mean) / image_std; our pixels are b / 255, so mean and std
    are divided by 255 · rescale_factor (1 for the usual 1/255; 255 without rescaling). Empty when
    the two agree with no normalisation at all."""
    if preprocessor is None:
        return DEFAULT_MEAN[:channels], DEFAULT_STD[:channels], "family default"
    try:
        scale = (
            255.0 * float(preprocessor.get("rescale_factor", 1 / 255))
            if preprocessor.get("do_rescale", True)
            else 255.0
        )
        if preprocessor.get("do_normalize", True) is False:
            mean, std = (0.0,) * channels, (1.0,) * channels
        else:
            mean, std = (
                tuple(float(v) for v in ([x] * channels if isinstance(x, int | float) else x))
                for x in (preprocessor.get("image_mean", DEFAULT_MEAN), preprocessor.get("image_std", DEFAULT_STD))
            )
    except (TypeError, ValueError) as err:
        raise ValueError("preprocessor_config.json: rescale_factor, image_mean and image_std must be numbers.") from err
    if len(mean) != channels or len(std) != channels:
        raise ValueError(f"preprocessor_config.json: image_mean and image_std need {channels} values each.")
    if math.isclose(scale, 1.0):
        scale = 1.0
    if scale == 1.0 and all(m == 0 for m in mean) and all(v == 1 for v in std):
        return (), (), "preprocessor_config.json"
    return tuple(m / scale for m in mean), tuple(v / scale for v in std), "preprocessor_config.json"


def vit_config(hf_config: dict, preprocessor: dict | None = None) -> VisionConfig:
    """Our VisionConfig for a ViT ``config.json`` (and ``preprocessor_config.json``), both parsed;
    raises ValueError naming a setting this app cannot reproduce or a size beyond its limits."""
    if hf_config.get("model_type", "vit") != "vit":
        raise ValueError(f"config.json says model_type {hf_config.get('model_type')!r}, not 'vit'.")
    activation = hf_config.get("hidden_act", "gelu")
    if activation not in ACTIVATIONS:
        raise ValueError(f"config.json: hidden_act {activation!r} is not one this app computes (gelu, relu).")
    image, patch = (
        _square(hf_config.get("image_size", 224), "image_size"),
        _square(hf_config.get("patch_size", 16), "patch_size"),
    )
    if image > MAX_IMAGE_SIZE or (image // patch) ** 2 + 1 > MAX_TOKENS:
        raise ValueError(f"config.json: {image} px images in {patch} px patches are beyond this app's limits.")
    if hf_config.get("qkv_bias", True) is not True:
        raise ValueError("config.json sets qkv_bias false; this app reads ViTs with query, key and value biases.")
    channels = int(hf_config.get("num_channels", 3))
    names, _ = label_names(hf_config)
    mean, std, _ = normalisation(preprocessor, channels)
    try:
        return VisionConfig(
            kind="vision-classifier",
            image_size=image,
            channels=channels,
            patch_size=patch,
            d_model=int(hf_config["hidden_size"]),
            num_heads=int(hf_config["num_attention_heads"]),
            num_layers=int(hf_config["num_hidden_layers"]),
            d_ff=int(hf_config["intermediate_size"]),
            dropout=0.0,
            attention_dropout=0.0,
            activation=ACTIVATIONS[activation],
            norm_first=True,
            final_norm=True,
            layer_norm_eps=float(hf_config.get("layer_norm_eps", 1e-12)),
            qkv_bias=True,
            class_token=True,
            label_names=names,
            pixel_mean=mean,
            pixel_std=std,
        )
    except KeyError as err:
        raise ValueError(f"config.json lacks {err.args[0]!r}, which a ViT needs.") from err


def _check_size(config: VisionConfig) -> None:
    """Refuse a config that describes more parameters than the app takes, before anything is built."""
    d, f = config.d_model, config.d_ff
    parameters = config.num_layers * (4 * d * d + 2 * d * f) + (config.num_tokens + config.patch_dim) * d
    if parameters > MAX_PARAMETERS:
        raise ValueError(
            f"config.json describes about {parameters / 1e6:,.0f}M parameters; this app takes at most "
            f"{MAX_PARAMETERS / 1e6:.0f}M."
        )


def _layer_state(w: dict[str, torch.Tensor], i: int) -> dict[str, torch.Tensor]:
    out = {}
    for ours, candidates in LAYER.items():
        theirs = next(
            (f"{p}{i}.{c}" for p in LAYER_PREFIXES for c in candidates if f"{p}{i}.{c}.weight" in w),
            f"encoder.layer.{i}.{candidates[0]}",
        )
        for kind in ("weight", "bias"):
            key = f"{theirs}.{kind}"
            if key not in w:
                raise ValueError(f"The weights lack vit.{key}: the file does not match config.json.")
            out[f"layers.{i}.{ours}.{kind}"] = w[key]
    return out


def vit_state(weights: dict[str, torch.Tensor], config: VisionConfig) -> dict[str, torch.Tensor]:
    """HF ViT names -> our VisionTransformer's state dict; ValueError naming a missing or misshapen tensor."""
    w = {k.removeprefix("vit."): v for k, v in weights.items()}
    pairs = {
        "patch_embedding.weight": "embeddings.patch_embeddings.projection.weight",
        "patch_embedding.bias": "embeddings.patch_embeddings.projection.bias",
        "cls_token": "embeddings.cls_token",
        "positional_embedding": "embeddings.position_embeddings",
        "norm.weight": "layernorm.weight",
        "norm.bias": "layernorm.bias",
        "head.weight": "classifier.weight",
        "head.bias": "classifier.bias",
    }
    missing = [theirs for theirs in pairs.values() if theirs not in w]
    if missing:
        raise ValueError(f"The weights lack {', '.join(missing[:3])}: is this a ViTForImageClassification?")
    state = {ours: w[theirs] for ours, theirs in pairs.items()}
    state["patch_embedding.weight"] = state["patch_embedding.weight"].reshape(config.d_model, -1)  # (D, C·p·p)
    for i in range(config.num_layers):
        state.update(_layer_state(w, i))
    return state


def import_vit(
    hf_config: dict, weights: dict[str, torch.Tensor], preprocessor: dict | None = None, name: str = ""
) -> VisionModel:
    """A ViT ``config.json``, its weights (HF names) and ``preprocessor_config.json`` (parsed; None
    when the folder has none: ViT's default normalisation is assumed and noted) as a VisionModel
    in eval mode on the CPU, the model the Vision page loads. Raises ValueError naming what does not fit."""
    config = vit_config(hf_config, preprocessor)
    _check_size(config)
    state = vit_state(weights, config)
    model = VisionTransformer(config)
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    wrong = [
        f"{k} {tuple(state[k].shape)} (config: {shape})"
        for k, shape in expected.items()
        if tuple(state[k].shape) != shape
    ]
    if wrong:
        message = f"The weights do not fit config.json: {'; '.join(wrong[:3])}."
        raise CodedError("config_mismatch", message, file="config.json")
    model.load_state_dict(state)
    _, numbered = label_names(hf_config)
    notes = ("label_names_numbered",) if numbered else ()
    notes += ("normalisation_default",) if preprocessor is None else ()
    return VisionModel(model.eval(), config, name, "huggingface-vit", None, notes)
