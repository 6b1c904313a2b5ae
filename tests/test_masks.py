import torch

from transformer.core.masks import (
    combine,
    decoder_self_mask,
    key_padding_from,
    look_ahead_mask,
    padding_mask,
    to_torch_blocked,
)


def test_padding_mask_blocks_pad_keys_only():
    ids = torch.tensor([[7, 8, 9], [7, 1, 1]])
    mask = padding_mask(ids, pad_id=1)
    assert mask.shape == (2, 1, 3, 3) and mask.dtype == torch.bool
    assert mask[1, 0].tolist() == [[True, False, False]] * 3  # pad queries still see the real key
    assert mask[0].all()


def test_look_ahead_is_lower_triangular():
    assert look_ahead_mask(3).tolist() == [[True, False, False], [True, True, False], [True, True, True]]


def test_decoder_mask_combines_padding_and_look_ahead():
    ids = torch.tensor([[5, 6, 1]])
    mask = decoder_self_mask(ids, pad_id=1)
    assert mask[0, 0].tolist() == [[True, False, False], [True, True, False], [True, True, False]]
    assert torch.equal(mask, combine(padding_mask(ids, 1), look_ahead_mask(3)))


def test_conversion_to_torch_convention():
    ids = torch.tensor([[5, 1]])
    assert key_padding_from(padding_mask(ids, 1)).tolist() == [[False, True]]
    assert to_torch_blocked(look_ahead_mask(2)).tolist() == [[False, True], [False, False]]


def test_look_ahead_with_past_positions_is_the_bottom_rows_of_the_full_mask():
    full = look_ahead_mask(7)
    assert torch.equal(look_ahead_mask(3, past=4), full[4:])
    assert torch.equal(look_ahead_mask(1, past=6), torch.ones(1, 7, dtype=torch.bool))
    ids = torch.tensor([[2, 5, 6, 1, 7, 8, 9]])  # <pad> id 1 at position 3
    assert torch.equal(decoder_self_mask(ids, 1, past=4), decoder_self_mask(ids, 1)[:, :, 4:])
