"""The one analysis call every page reads."""

import numpy as np
import pytest
import torch

from transformer import analyze, load_bundle
from transformer.core.model import SequenceClassifier


def test_result_shapes_and_padding(tiny_bundle):
    loaded = load_bundle(tiny_bundle)
    result = analyze(loaded, ["the movie was great", "bad"])
    assert result.tokens == [["the", "movie", "was", "great"], ["bad"]]
    assert result.ids.shape == (2, 4) and list(result.lengths) == [4, 1]
    assert result.ids[1, 1:].tolist() == [loaded.vocab.pad_id] * 3
    assert result.attention.shape == (2, 2, 4, 4, 4)  # (B, L, H, T, T)
    assert result.scores.shape == result.attention.shape
    assert result.padding_mask.shape == (2, 1, 4, 4)
    assert result.token_embeddings.shape == (2, 4, 16) and result.positional_encodings.shape == (4, 16)
    assert np.allclose(result.embeddings, result.token_embeddings + result.positional_encodings, atol=1e-6)
    assert result.probabilities.shape == (2, 2)
    assert np.allclose(result.probabilities.sum(-1), 1.0, atol=1e-6)
    assert result.attention.dtype == np.float32 and result.device == "cpu"
    assert set(result.timings_ms) == {"tokenize", "forward", "total"}


def test_attention_rows_sum_to_one_and_pad_keys_get_zero(tiny_bundle):
    result = analyze(load_bundle(tiny_bundle), ["the movie was great", "bad plot"])
    assert np.allclose(result.attention.sum(-1), 1.0, atol=1e-5)
    assert (result.attention[1, :, :, :, 2:] == 0).all()
    assert result.attention_for(1).shape == (2, 4, 2, 2)


def test_padded_batch_gives_the_same_numbers_as_one_input(tiny_bundle):
    loaded = load_bundle(tiny_bundle)
    alone = analyze(loaded, ["bad plot"])
    batched = analyze(loaded, ["the movie was great and the plot", "bad plot"])
    assert np.allclose(alone.attention_for(0), batched.attention_for(1), atol=1e-6)
    assert np.allclose(alone.probabilities[0], batched.probabilities[1], atol=1e-6)


def test_unknown_words_and_truncation_are_reported(tiny_bundle):
    result = analyze(load_bundle(tiny_bundle), ["the zzz movie 영화 😀 was great"], max_len=4)
    assert result.tokens[0] == ["the", "zzz", "movie", "영화"]
    assert result.unknown[0] == [False, True, False, True]
    assert result.truncated == [True] and result.original_lengths == [7]


def test_empty_input_is_a_clear_error(tiny_bundle):
    loaded = load_bundle(tiny_bundle)
    with pytest.raises(ValueError, match="no words"):
        analyze(loaded, ["the movie", "   "])
    with pytest.raises(ValueError, match="No input"):
        analyze(loaded, [])


def test_matches_a_direct_forward_and_keeps_no_state(tiny_bundle):
    loaded = load_bundle(tiny_bundle)
    before = {k: v.clone() for k, v in loaded.model.state_dict().items()}
    result = analyze(loaded, ["not good"])
    ids = torch.tensor(result.ids)
    with torch.no_grad():
        direct = loaded.model(ids).logits
    assert np.allclose(result.logits, direct.numpy(), atol=1e-6)
    after = loaded.model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert not any(
        isinstance(v, torch.Tensor) and v.dim() == 4 for v in vars(loaded.model.encoder.layers[0].self_attn).values()
    )


def test_input_json_has_the_documented_keys(tiny_bundle):
    result = analyze(load_bundle(tiny_bundle), ["the movie was great"])
    entry = result.input_json(0)
    assert {"text", "tokens", "ids", "truncated", "prediction", "attention"} <= set(entry)
    assert np.array(entry["attention"]["encoder"]).shape == (2, 4, 4, 4)
    assert set(entry["prediction"]["probabilities"]) == {"negative", "positive"}


def test_save_load_gives_identical_logits(tiny_bundle, tmp_path):
    from transformer import save_bundle

    first = load_bundle(tiny_bundle)
    again = load_bundle(save_bundle(tmp_path / "copy", first.model, first.config, first.vocab))
    ids = torch.tensor([[3, 4, 5, 6]])
    with torch.no_grad():
        assert torch.equal(first.model(ids).logits, again.model(ids).logits)
    assert again.config == first.config and again.vocab == first.vocab


def test_classifier_pooling_ignores_padding():
    from tests.conftest import tiny_config

    for pooling in ("mean", "max", "mean_max", "first"):
        torch.manual_seed(0)
        model = SequenceClassifier(tiny_config(pooling=pooling)).eval()
        with torch.no_grad():
            alone = model(torch.tensor([[3, 4, 5]])).logits
            padded = model(torch.tensor([[3, 4, 5, 1, 1]])).logits
        assert torch.allclose(alone, padded, atol=1e-6), pooling


def test_encoder_decoder_returns_decoder_and_cross_attention(tmp_path, tiny_vocab):
    from tests.conftest import tiny_config
    from transformer import save_bundle
    from transformer.core.model import EncoderDecoder

    torch.manual_seed(0)
    config = tiny_config(
        kind="encoder-decoder",
        num_decoder_layers=1,
        target_vocab_size=len(tiny_vocab),
        vocab_size=len(tiny_vocab),
        bos_id=2,
        eos_id=3,
    )
    loaded = load_bundle(save_bundle(tmp_path / "s2s", EncoderDecoder(config).eval(), config, tiny_vocab))
    forced = analyze(loaded, ["the movie was great"], targets=["a good film"])
    assert forced.decoder_tokens[0][1:] == ["a", "good", "film"]
    assert forced.cross_attention.shape == (1, 1, 4, 4, 4)  # (B, L_dec, H, T_t, T_s)
    assert forced.decoder_self_attention.shape == (1, 1, 4, 4, 4)
    assert (np.triu(forced.decoder_self_attention[0, 0, 0], k=1) == 0).all()
    assert forced.probabilities is None
    greedy = analyze(loaded, ["the movie"])
    assert 2 <= len(greedy.decoder_tokens[0]) <= config.max_len
    assert np.array(greedy.input_json(0)["attention"]["cross"]).shape[-1] == 2
