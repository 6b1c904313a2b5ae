"""Temperature scaling and the expected calibration error, on synthetic logits with a known answer."""

from __future__ import annotations

import numpy as np
import pytest

from transformer.text.calibration import (
    Reliability,
    expected_calibration_error,
    fit_temperature,
    negative_log_likelihood,
    reliability,
    rescale,
    softmax,
)


def overconfident(true_t: float, n: int = 20_000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Logits whose labels are drawn from softmax(logits / true_t): the right temperature is true_t."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, 3)) * 4
    p = softmax(logits, true_t)
    labels = np.array([rng.choice(3, p=row) for row in p])
    return logits, labels


@pytest.mark.parametrize("true_t", [0.5, 1.0, 2.5])
def test_fit_recovers_the_temperature_the_labels_were_drawn_with(true_t):
    logits, labels = overconfident(true_t)
    fitted = fit_temperature(logits, labels)
    assert fitted == pytest.approx(true_t, rel=0.06)
    nll = negative_log_likelihood(logits, labels, fitted)
    assert nll <= negative_log_likelihood(logits, labels, fitted * 1.1)
    assert nll <= negative_log_likelihood(logits, labels, fitted / 1.1)


def test_temperature_never_changes_the_predicted_class_and_lowers_ece_when_overconfident():
    logits, labels = overconfident(2.5)
    fitted = fit_temperature(logits, labels)
    assert (softmax(logits, fitted).argmax(1) == logits.argmax(1)).all()
    before = expected_calibration_error(softmax(logits), labels)
    after = expected_calibration_error(softmax(logits, fitted), labels)
    assert before > 0.1 and after < 0.02


def test_reliability_bins_by_hand():
    probs = np.array([[0.95, 0.05], [0.92, 0.08], [0.35, 0.65], [0.62, 0.38]])
    labels = np.array([0, 1, 1, 1])
    rel = reliability(probs, labels, bins=5)  # bins (a, b] of width 0.2: 0.6–0.8 and 0.8–1.0 are used
    assert rel.count.tolist() == [0, 0, 0, 2, 2]
    np.testing.assert_allclose(rel.confidence[3:], [0.635, 0.935])
    np.testing.assert_allclose(rel.accuracy[3:], [0.5, 0.5])
    assert rel.ece == pytest.approx((2 * 0.135 + 2 * 0.435) / 4)
    back = Reliability.from_dict(rel.to_dict())
    assert back.count.tolist() == rel.count.tolist() and np.isnan(back.confidence[0])


def test_bad_logits_are_refused_with_a_message():
    with pytest.raises(ValueError, match="NaN or infinite"):
        fit_temperature(np.array([[np.nan, 1.0]]), np.array([0]))
    with pytest.raises(ValueError, match="Need"):
        fit_temperature(np.zeros((3, 2)), np.array([0, 1]))


def test_rescaling_probabilities_equals_dividing_the_logits():
    logits = np.array([[2.0, -1.0, 0.5], [0.0, 3.0, 1.0]])
    np.testing.assert_allclose(rescale(softmax(logits), 1.7), softmax(logits, 1.7), atol=1e-12)
