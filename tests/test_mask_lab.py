"""The Masks page's computations (ui.mask_lab): the batch it pads, the masks it offers, switched cells,
the stage figures and the worked example's numbers."""

import numpy as np
import torch

from transformer.analysis.stepper import head_steps
from ui import mask_lab


def test_a_single_sentence_gets_two_shorter_ones_in_the_models_language_and_wordless_lines_are_left_out():
    batch = mask_lab.batch_of(["the movie was long"], add_examples=True, korean=False)
    assert batch.lines == ["the movie was long", "I loved this movie!", "Boring."] and not batch.wordless
    assert mask_lab.batch_of(["영화 좋았다"], True, korean=True).lines[1:] == list(mask_lab.PADDING_EXAMPLES["ko"])
    assert mask_lab.batch_of(["one line"], add_examples=False, korean=False).lines == ["one line"]
    mixed = mask_lab.batch_of(["a cat", " ", "a dog", "\t"], False, False)
    assert mixed.lines == ["a cat", "a dog"] and mixed.wordless == [2, 4] and mixed.cut == 0
    many = mask_lab.batch_of([f"line {n}" for n in range(9)], False, False)
    assert len(many.lines) == mask_lab.MAX_BATCH and many.cut == 9


def test_masks_presets_and_switched_cells():
    ids = np.array([5, 6, 7, 1, 1])  # two <pad> (id 1) at the end
    masks = mask_lab.three_masks(ids, pad_id=1)
    assert masks["padding"][:, 3:].sum() == 0 and masks["padding"][:, :3].all()  # keys that are <pad> blocked
    np.testing.assert_array_equal(masks["look-ahead"], np.tril(np.ones((5, 5), dtype=bool)))
    np.testing.assert_array_equal(masks["both"], masks["padding"] & masks["look-ahead"])
    assert mask_lab.preset_mask("none", ids, 1).all()
    own = mask_lab.preset_mask("own", ids, 1)
    own[0, 0] = False  # a copy: the preset is not changed through it
    assert mask_lab.preset_mask("own", ids, 1)[0, 0]
    edited = mask_lab.switched(masks["padding"], [0 * 5 + 1, 4 * 5 + 4])
    assert not edited[0, 1] and edited[4, 4] and masks["padding"][0, 1] and not masks["padding"][4, 4]
    chosen = mask_lab.flip_cell([], (0, 1), 5)
    assert chosen == [1] and mask_lab.flip_cell(chosen, (0, 1), 5) == []  # a second click switches it back
    states = {True: "open", False: "blocked"}
    assert (
        mask_lab.cell_text(1, masks["padding"], ["0:a", "1:b", "2:c", "3:p", "4:p"], states)
        == "0:a → 1:b  (open → blocked)"
    )
    assert mask_lab.batch_tokens([["a"], ["a", "b"]], 3) == [["a", "<pad>", "<pad>"], ["a", "b", "<pad>"]]


def test_stage_figures_and_the_worked_example_read_one_heads_steps(tiny_bundle):
    from transformer import load_model

    loaded = load_model(tiny_bundle)
    ids = torch.tensor([[2, 3, 4]])
    steps = head_steps(loaded, ids, 0, 0)
    labels = ["0:a", "1:b", "2:c"]
    figures = mask_lab.stage_figures(steps, labels, "stage", "en")
    assert [f.layout.meta for f in figures] == [
        "stage-scores",
        "stage-scaled",
        "stage-masked",
        "stage-weights",
        "stage-output",
    ]
    np.testing.assert_allclose(np.asarray(figures[3].data[0].z), steps.weights, atol=1e-6)
    assert [f.layout.meta for f in mask_lab.qkv_figures(steps, labels, "stage", "ko")] == [
        "stage-q",
        "stage-k",
        "stage-v",
    ]
    fields = mask_lab.worked_fields(steps, 1, labels)
    top = int(np.argmax(steps.weights[1]))
    assert (
        fields["key"] == labels[top]
        and fields["weight"] == f"{steps.weights[1, top]:.2f}"
        and fields["total"] == "1.00"
    )
    assert mask_lab.finite(steps)
    blocked = head_steps(loaded, ids, 0, 0, np.zeros((3, 3), dtype=bool))
    assert mask_lab.worked_fields(blocked, 1, labels) is None  # every key blocked: the page says so instead


def test_a_language_models_own_weights_for_one_head_are_causal_rows_of_probabilities():
    from transformer.lab.trainer import LabSettings, Trainer

    model = Trainer(LabSettings(task="copy", length=4, symbols=6, d_model=16, heads=2)).model.eval()
    ids = torch.tensor([[2, 5, 6, 7, 3]])
    weights = mask_lab.own_weights(model, ids, 1, 1)
    assert weights.shape == (5, 5)
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-5)
    assert np.abs(np.triu(weights, 1)).max() == 0  # a token sees only those before it
    with torch.no_grad():
        every = model(ids, need_weights=True).attention[1].weights[0].numpy()
    np.testing.assert_array_equal(weights, every[1])
