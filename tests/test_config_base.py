"""ModelConfig and VisionConfig share one base (the layer settings and their checks) and still read
and write the config.json of every bundled model as before."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from transformer.core.config import LAYER_FIELDS, BaseConfig, ModelConfig
from transformer.vision.config import VisionConfig

MODELS = Path(__file__).resolve().parent.parent / "assets" / "models"
# our own bundles; the Hugging Face folders shipped as published (a config.json with a model_type) are not this format
BUNDLES = sorted(
    p for p in MODELS.glob("*/config.json") if "model_type" not in json.loads(p.read_text(encoding="utf-8"))
)


def config_class(data: dict) -> type[BaseConfig]:
    return VisionConfig if str(data.get("kind", "")).startswith("vision") else ModelConfig


@pytest.mark.parametrize("path", BUNDLES, ids=lambda p: p.parent.name)
def test_every_bundled_config_loads_and_saves_the_same_keys_and_values(path, tmp_path):
    data = json.loads(path.read_text(encoding="utf-8"))
    cls = config_class(data)
    config = cls.load(path)
    written = json.loads(json.dumps(config.to_dict()))
    assert {key: written[key] for key in data} == data  # every saved value comes back as it was
    assert set(written) == {f.name for f in dataclasses.fields(cls)}
    config.save(tmp_path / "config.json")
    assert cls.load(tmp_path / "config.json") == config


def test_both_families_declare_the_shared_fields_once():
    shared = {f.name for f in dataclasses.fields(BaseConfig)}
    assert set(LAYER_FIELDS) <= shared and {"kind", "label_names", "final_norm"} <= shared
    for cls in (ModelConfig, VisionConfig):
        assert issubclass(cls, BaseConfig) and shared <= {f.name for f in dataclasses.fields(cls)}
    # each family keeps its own defaults
    assert (ModelConfig().activation, ModelConfig().num_layers, ModelConfig().norm_first) == ("relu", 2, False)
    assert (VisionConfig().activation, VisionConfig().num_layers, VisionConfig().norm_first) == ("gelu", 4, True)
    assert len(VisionConfig().label_names) == 10 and ModelConfig().label_names == ("negative", "positive")


@pytest.mark.parametrize("cls", [ModelConfig, VisionConfig])
def test_the_shared_checks_hold_for_both(cls):
    with pytest.raises(ValueError, match=r"d_model \(30\) must be a positive multiple of num_heads \(4\)"):
        cls(d_model=30)
    with pytest.raises(ValueError, match="activation must be one of"):
        cls(activation="swishy")


def test_a_vit_builds_its_encoder_layers_from_the_shared_settings():
    vit = VisionConfig(d_model=32, num_heads=2, num_layers=3, d_ff=48, dropout=0.2, qkv_bias=False)
    encoder = vit.encoder_config()
    assert {name: getattr(encoder, name) for name in LAYER_FIELDS} == vit.layer_settings()
    assert encoder.positional == "none" and encoder.final_norm is False  # the ViT applies its own final norm
