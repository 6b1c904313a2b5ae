"""The digits are read without importing scikit-learn (150 MB per server process), and are the same
images, labels and split as scikit-learn's own ``load_digits`` and ``train_test_split``."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from transformer.vision.digits import read_digits, split_indices, stored_split


def test_read_digits_equals_load_digits():
    from sklearn.datasets import load_digits

    images, labels = read_digits()
    data = load_digits()
    assert images.shape == (1797, 8, 8)
    np.testing.assert_array_equal(images, data.images)
    np.testing.assert_array_equal(labels, data.target)


def test_the_kept_split_is_scikit_learns():
    _, labels = read_digits()
    kept = stored_split(0)
    assert kept is not None
    fresh = split_indices(labels, 0)
    for name in ("train", "val", "test"):
        np.testing.assert_array_equal(kept[name], fresh[name])
    assert [len(kept[n]) for n in ("train", "val", "test")] == [1077, 360, 360]
    assert stored_split(1) is None  # another seed is computed, not read


def test_loading_the_splits_imports_no_scikit_learn():
    code = (
        "import sys; from transformer.vision.digits import load_digits_splits; s = load_digits_splits(); "
        "print(len(s.test[1]), any(m == 'sklearn' or m.startswith('sklearn.') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["360", "False"]
