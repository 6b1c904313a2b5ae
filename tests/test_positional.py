import math

import numpy as np
import pytest

from transformer.core.positional import sinusoidal_encoding, wavelengths


@pytest.mark.parametrize("d_model", [1, 7, 16])
def test_matches_the_formula(d_model):
    pe = sinusoidal_encoding(50, d_model, base=10000.0)
    assert pe.shape == (50, d_model) and pe.dtype == np.float32
    for pos in (0, 3, 49):
        for j in range(d_model):
            i2 = j - j % 2
            angle = pos / 10000.0 ** (i2 / d_model)
            expected = math.sin(angle) if j % 2 == 0 else math.cos(angle)
            assert abs(pe[pos, j] - expected) < 1e-6


def test_base_changes_the_slowest_period():
    assert wavelengths(8, 10000.0)[-1] * 0.999 < 2 * math.pi * 10000.0 ** (6 / 8) < wavelengths(8, 10000.0)[-1] * 1.001
    assert wavelengths(8, 20000.0)[-1] / wavelengths(8, 10000.0)[-1] == pytest.approx(2**0.75)


def test_rejects_bad_sizes():
    with pytest.raises(ValueError):
        sinusoidal_encoding(10, 0)
    with pytest.raises(ValueError):
        sinusoidal_encoding(10, 4, base=0)
