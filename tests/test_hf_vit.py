"""A Hugging Face ViT (ViTForImageClassification) imported into our VisionTransformer gives
transformers' numbers: every layer's and head's attention and the logits, on images normalised
as its preprocessor_config.json says. A tiny random model is built and saved here (offline)."""

import json

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from transformer.hf.vit import import_vit, vit_config
from transformer.vision import analyze_images

transformers = pytest.importorskip("transformers")

TOL = 1e-5
LABELS = ("cat", "dog", "bird")
MEAN, STD = [0.4, 0.5, 0.6], [0.2, 0.25, 0.3]


def tiny_hf_config(**changes):
    values = dict(
        image_size=32,
        patch_size=8,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        id2label=dict(enumerate(LABELS)),
        label2id={name: i for i, name in enumerate(LABELS)},
    )
    return transformers.ViTConfig(**(values | changes))


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A ViT folder as save_pretrained writes it, with random weights (LayerNorms included)."""
    torch.set_num_threads(1)
    folder = tmp_path_factory.mktemp("vit")
    model = transformers.ViTForImageClassification(tiny_hf_config())
    torch.manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_((1.0 if "layernorm" in name and name.endswith("weight") else 0.0) + 0.3 * torch.randn_like(p))
    model.save_pretrained(folder)
    transformers.ViTImageProcessor(size={"height": 32, "width": 32}, image_mean=MEAN, image_std=STD).save_pretrained(
        folder
    )
    return folder


def _read(folder):
    hf_config = json.loads((folder / "config.json").read_text())
    preprocessor = json.loads((folder / "preprocessor_config.json").read_text())
    return hf_config, load_file(str(folder / "model.safetensors")), preprocessor


@pytest.fixture(scope="module")
def images():
    return torch.rand(2, 3, 32, 32, generator=torch.Generator().manual_seed(1))


@torch.no_grad()
def test_attention_and_logits_equal_transformers(folder, images):
    reference = transformers.ViTForImageClassification.from_pretrained(folder, attn_implementation="eager").eval()
    processor = transformers.ViTImageProcessor.from_pretrained(folder)
    pixels = processor(
        images=list(images.numpy()),
        do_resize=False,
        do_rescale=False,
        return_tensors="pt",
        input_data_format="channels_first",
    ).pixel_values
    theirs = reference(pixel_values=pixels, output_attentions=True)
    ours = import_vit(*_read(folder))
    out = ours.model(images, need_weights=True)  # our model normalises the [0, 1] pixels itself
    assert len(out.weights) == 2 and out.weights[0].weights.shape == (2, 4, 17, 17)
    diffs = [float((a - b.weights).abs().max()) for a, b in zip(theirs.attentions, out.weights, strict=True)]
    assert max(diffs) < TOL
    assert float((theirs.logits - out.logits).abs().max()) < TOL


def test_config_read_from_the_folder(folder):
    ours = import_vit(*_read(folder))
    c = ours.config
    assert (c.image_size, c.patch_size, c.channels, c.grid, c.num_tokens) == (32, 8, 3, 4, 17)
    assert c.label_names == LABELS
    assert c.pixel_mean == pytest.approx(MEAN) and c.pixel_std == pytest.approx(STD)
    assert (c.norm_first, c.final_norm, c.activation, c.layer_norm_eps) == (True, True, "gelu", 1e-12)
    assert ours.notes == ()


@torch.no_grad()
def test_the_vision_pages_analysis_reads_it(folder, images):
    """analyze_images (what the Vision page runs) on the imported model: class-token rows and labels."""
    reference = transformers.ViTForImageClassification.from_pretrained(folder, attn_implementation="eager").eval()
    pixels = (images - torch.tensor(MEAN)[:, None, None]) / torch.tensor(STD)[:, None, None]
    theirs = reference(pixel_values=pixels, output_attentions=True)
    result = analyze_images(import_vit(*_read(folder)), images.numpy())
    assert result.attention.shape == (2, 2, 4, 17, 17)  # (B, layers, heads, T, T)
    expected = torch.stack(theirs.attentions, dim=1).numpy()
    assert np.abs(result.attention - expected).max() < TOL
    assert result.label_names == LABELS
    assert result.tokens[0] != result.tokens[1]  # the class token, then the patches


def test_without_a_preprocessor_the_default_normalisation_is_noted(folder):
    hf_config, weights, _ = _read(folder)
    ours = import_vit(hf_config, weights, None)
    assert ours.config.pixel_mean == (0.5, 0.5, 0.5) and "normalisation_default" in ours.notes


def test_default_labels_are_noted(folder):
    hf_config, weights, preprocessor = _read(folder)
    hf_config = hf_config | {"id2label": {"0": "LABEL_0", "1": "LABEL_1", "2": "LABEL_2"}}
    assert "label_names_numbered" in import_vit(hf_config, weights, preprocessor).notes


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"image_size": [32, 48]}, "not square"),
        ({"hidden_act": "quick_gelu"}, "hidden_act 'quick_gelu'"),
        ({"model_type": "deit"}, "not 'vit'"),
        ({"hidden_size": 64}, r"do not fit config\.json"),
    ],
)
def test_settings_it_cannot_reproduce_are_named(folder, changes, message):
    hf_config, weights, preprocessor = _read(folder)
    with pytest.raises(ValueError, match=message):
        import_vit(hf_config | changes, weights, preprocessor)


def test_missing_tensor_is_named(folder):
    hf_config, weights, preprocessor = _read(folder)
    weights = {k: v for k, v in weights.items() if "layer.1.output.dense" not in k}
    with pytest.raises(ValueError, match=r"layer\.1\.output\.dense\.weight"):
        import_vit(hf_config, weights, preprocessor)


def test_config_without_sizes_is_refused():
    with pytest.raises(ValueError, match="hidden_size"):
        vit_config({"model_type": "vit", "image_size": 32, "patch_size": 8})


@torch.no_grad()
def test_saved_as_a_vision_bundle_it_keeps_its_normalisation(folder, images, tmp_path):
    from transformer.vision import load_vision_bundle, save_vision_bundle

    ours = import_vit(*_read(folder))
    again = load_vision_bundle(save_vision_bundle(tmp_path / "vit", ours.model))
    assert again.config == ours.config
    assert torch.equal(again.model(images).logits, ours.model(images).logits)


@pytest.mark.parametrize(
    "preprocessor, mean, std",
    [
        ({"do_normalize": False}, (), ()),
        ({"image_mean": 0.5, "image_std": 0.25}, (0.5,) * 3, (0.25,) * 3),
        # pixels given to the model as 0-255 bytes: mean and std in byte units
        ({"do_rescale": False, "image_mean": [127.5] * 3, "image_std": [51.0] * 3}, (0.5,) * 3, (0.2,) * 3),
    ],
)
def test_normalisation_on_our_zero_to_one_pixels(preprocessor, mean, std):
    config = vit_config(tiny_hf_config().to_dict(), preprocessor)
    assert config.pixel_mean == pytest.approx(mean) and config.pixel_std == pytest.approx(std)
