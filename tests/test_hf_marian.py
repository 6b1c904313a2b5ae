"""A Hugging Face Marian translator imported into our engine gives transformers' numbers: every
layer's and head's attention (encoder, decoder self, cross), the logits, greedy decoding and the
step-by-step decoding of the Translate page. A tiny random model is built and saved here (offline)."""

import pytest
import torch
from safetensors.torch import load_file

from tests.hf_models import tiny_marian_config
from transformer.analysis.stepper import decoder_head_steps
from transformer.core.positional import sinusoidal_halves
from transformer.hf.marian import import_marian, marian_config
from transformer.translation.decode import DecodeOptions, decode

transformers = pytest.importorskip("transformers")

TOL = 1e-5
PAD, EOS, VOCAB = 59, 0, 60
SOURCES = [[5, 17, 33, 8, 41, 2, EOS], [12, 9, 50, EOS, PAD, PAD, PAD]]


def tiny_hf_config(**changes):
    return tiny_marian_config(VOCAB, PAD, EOS, **changes)


def _randomise(model) -> None:
    """Random weights everywhere, LayerNorms and the logits bias included (their defaults are 1 and 0)."""
    torch.manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_((1.0 if "layer_norm.weight" in name else 0.0) + 0.2 * torch.randn_like(p))
        model.final_logits_bias.copy_(0.1 * torch.randn_like(model.final_logits_bias))


@pytest.fixture(scope="module", params=[True, False], ids=["tied", "untied"])
def pair(request, tmp_path_factory):
    """(transformers' model read back from disk, eager attention; ours imported from the same files).
    Tied: one table for both sides and the output (as opus-mt); untied: its own output layer (its
    random greedy decodings vary more, where the tied one repeats a token)."""
    torch.set_num_threads(1)
    folder = tmp_path_factory.mktemp("marian")
    model = transformers.MarianMTModel(tiny_hf_config(tie_word_embeddings=request.param))
    _randomise(model)
    model.save_pretrained(folder)
    reference = transformers.MarianMTModel.from_pretrained(folder, attn_implementation="eager").eval()
    hf_config = reference.config.to_dict()
    ours = import_marian(hf_config, load_file(str(folder / "model.safetensors")))
    return reference, ours


def _max_diff(theirs, ours) -> float:
    return max(float((a - b.weights).abs().max()) for a, b in zip(theirs, ours, strict=True))


@torch.no_grad()
def test_attention_and_logits_equal_transformers(pair):
    reference, ours = pair
    src = torch.tensor(SOURCES)
    tgt = torch.tensor([[PAD, 4, 19, 7, 30], [PAD, 22, 3, 44, 11]])
    theirs = reference(input_ids=src, attention_mask=(src != PAD).long(), decoder_input_ids=tgt, output_attentions=True)
    out = ours.model(src, tgt, need_weights=True)
    assert len(out.encoder.attention) == len(out.decoder_self) == len(out.cross) == 2
    assert out.encoder.attention[0].weights.shape == (2, 4, 7, 7)
    assert _max_diff(theirs.encoder_attentions, out.encoder.attention) < TOL
    assert _max_diff(theirs.decoder_attentions, out.decoder_self) < TOL
    assert _max_diff(theirs.cross_attentions, out.cross) < TOL
    assert float((theirs.logits - out.logits).abs().max()) < TOL
    # the decoder's start token is the pad token: it stays visible to every later position
    assert float(out.decoder_self[0].weights[:, :, 1:, 0].min()) > 0


@torch.no_grad()
def test_greedy_decoding_equals_generate(pair):
    reference, ours = pair
    for row in SOURCES:
        src = torch.tensor([[i for i in row if i != PAD]])
        generated = reference.generate(
            src, num_beams=1, do_sample=False, max_new_tokens=8, output_logits=True, return_dict_in_generate=True
        )
        expected = generated.sequences[0].tolist()
        assert len(expected) > 1
        assert ours.model.greedy_decode(src, max_new=8)[0].tolist() == expected
        # the Translate page's step-by-step decoding: same ids, same next-token probabilities
        steps = decode(ours, src[0].tolist(), DecodeOptions(max_new=8))
        assert steps.ids == expected
        for step, logits in zip(steps.steps, generated.logits, strict=True):
            assert abs(torch.from_numpy(step.probs) - torch.softmax(logits[0], -1)).max() < TOL


@torch.no_grad()
def test_stepper_decoder_head_equals_transformers(pair):
    reference, ours = pair
    src, tgt = torch.tensor([SOURCES[0]]), torch.tensor([[PAD, 4, 19, 7]])
    theirs = reference(input_ids=src, decoder_input_ids=tgt, output_attentions=True)
    steps = decoder_head_steps(ours, src, tgt, layer=1, head=2)
    assert abs(torch.from_numpy(steps.weights) - theirs.decoder_attentions[1][0, 2]).max() < TOL


@pytest.mark.parametrize("d_model", [32, 33, 512])
def test_positions_are_marians_sinusoids(d_model):
    from transformers.models.marian.modeling_marian import MarianSinusoidalPositionalEmbedding

    table = MarianSinusoidalPositionalEmbedding(40, d_model).create_weight()
    assert torch.equal(table, torch.from_numpy(sinusoidal_halves(40, d_model)))


def test_config_maps_marians_settings():
    config = marian_config(tiny_hf_config().to_dict())
    assert (config.activation, config.positional, config.norm_first, config.final_norm) == (
        "silu",
        "sinusoidal_halves",
        False,
        False,
    )
    assert (config.bos_id, config.eos_id, config.pad_id, config.target_padding_id) == (PAD, EOS, PAD, None)
    assert config.scale_embedding and config.tie_output_embedding


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"decoder_attention_heads": 8}, "same number of heads"),
        ({"activation_function": "gelu_fast"}, "activation_function 'gelu_fast'"),
        ({"normalize_before": True}, "normalize_before"),
    ],
)
def test_unsupported_settings_are_named(changes, message):
    with pytest.raises(ValueError, match=message):
        marian_config(tiny_hf_config().to_dict() | changes)


def test_missing_tensor_is_named(pair, tmp_path):
    reference, _ = pair
    weights = {k: v for k, v in reference.state_dict().items() if "decoder.layers.1.fc2" not in k}
    with pytest.raises(ValueError, match=r"decoder\.layers\.1\.fc2\.weight"):
        import_marian(reference.config.to_dict(), weights)
