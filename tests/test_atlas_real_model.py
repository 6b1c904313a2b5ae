"""The head atlas' role labels on a real pretrained encoder: all-MiniLM-L6-v2 (6 layers x 12 heads),
the bundled copy or the shared one; skipped when neither folder is here.

The atlas numbers heads from 1 (its grid reads "Layer 1, Head 3"); arrays here are 0-based."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from transformer import analyze
from transformer.analysis.head_roles import ROLE_THRESHOLD, assign_roles, text_role_scores
from transformer.loader import load_model

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = [ROOT / "assets" / "models" / "all-minilm-l6-v2", ROOT.parent / "shared" / "models" / "all-MiniLM-L6-v2"]
FOLDER = next((f for f in FOLDERS if (f / "model.safetensors").is_file()), None)
pytestmark = pytest.mark.skipif(
    FOLDER is None, reason="all-MiniLM-L6-v2 is not here (assets/models or ../shared/models)"
)
# the English text the atlas page starts on (ui.text.DEFAULT_TEXT)
TEXT = "The acting was wonderful and the story kept me hooked until the very end."


@pytest.fixture(scope="module")
def atlas():
    torch.set_num_threads(1)
    result = analyze(load_model(FOLDER, "cpu"), [TEXT])
    tokens = result.tokens[0]
    scores = text_role_scores(result.attention_for(0), tokens, causal=False)
    roles, strength = assign_roles(scores)
    return tokens, scores, roles, strength


def test_the_textbook_heads_are_named(atlas):
    tokens, scores, roles, strength = atlas
    assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]" and len(tokens) == 17
    assert roles.shape == (6, 12)
    # layer 1 head 3: the previous token, weight 1.00
    assert scores["previous"][0, 2] > 0.99
    assert roles[0, 2] == "previous" and strength[0, 2] > 0.99
    # layer 2 head 9: the next token (0.65 on this text; 0.63 on others)
    assert 0.6 < scores["next"][1, 8] < 0.7
    assert roles[1, 8] == "next"
    # no other head follows the previous or the next token
    assert (roles == "previous").sum() == 1 and (roles == "next").sum() == 1


def test_labels_hold_on_every_head(atlas):
    _, scores, roles, _ = atlas
    strong_previous = scores["previous"] >= 0.9
    assert (roles[strong_previous] == "previous").all()
    # most weight on [CLS]/[SEP] (and no larger pattern): a sink, never broad or mixed
    most_on_specials = scores["sink"] >= 0.5
    assert most_on_specials.sum() >= 20  # the middle layers park their weight there
    assert (roles[most_on_specials] == "sink").all()
    broad = roles == "broad"
    assert broad.any() and (scores["broadness"][broad] >= 0.75).all()
    patterns = ("previous", "next", "diagonal", "sink", "punctuation")
    assert (np.max([scores[k][broad] for k in patterns], axis=0) < ROLE_THRESHOLD).all()
    # the first layer looks broadly (10 of 12 heads), the previous-token head and one mixed aside
    assert (roles[0] == "broad").sum() == 10
