"""``python -m transformer attribute``: the Classifier page's per-token attributions as JSON."""

import json

import numpy as np
import pytest

from transformer import load_model
from transformer.cli.main import main
from transformer.text.attribution import attribute


def test_attribute_prints_each_tokens_scores(tiny_bundle, capsys):
    texts = ["the movie was great", "not good at all"]
    args = ["attribute", "--checkpoint", str(tiny_bundle), "--text", texts[0], "--text", texts[1], "--steps", "32"]
    assert main(args) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["model"]["kind"] == "classifier" and [r["text"] for r in document["inputs"]] == texts
    loaded = load_model(tiny_bundle)
    for record, text in zip(document["inputs"], texts):
        n = len(record["tokens"])
        for key in ("rollout", "gradient_x_input", "integrated_gradients"):
            assert len(record[key]) == n
        expected = attribute(loaded, text, steps=32, baseline="unk", score="log-odds")
        assert record["explained"] == record["predicted"] == expected.target_label
        np.testing.assert_allclose(record["integrated_gradients"], expected.integrated, atol=1e-5)
        np.testing.assert_allclose(record["rollout"], expected.rollout, atol=1e-6)
        check = record["integrated_gradients_check"]
        gap = abs(sum(record["integrated_gradients"]) - check["logit_difference"])
        assert gap == pytest.approx(check["completeness_error"], abs=1e-5) and gap < 0.05 * abs(
            check["logit_difference"]
        )


def test_attribute_explains_a_chosen_class_and_refuses_unknown_ones(tiny_bundle, capsys):
    args = ["attribute", "--checkpoint", str(tiny_bundle), "--text", "bad plot", "--steps", "8"]
    assert main([*args, "--class", "positive"]) == 0
    assert json.loads(capsys.readouterr().out)["inputs"][0]["explained"] == "positive"
    assert main([*args, "--class", "maybe"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "choose one of negative, positive" in err
