"""The language model's curriculum by row length (``--warm-schedule``): stages, rows, and their repeated spans."""

import numpy as np
import pytest

from transformer.lm.train import parse_args, warm_batch, warm_length, warm_schedule
from transformer.lm.train_metrics import curriculum_text


def test_schedule_stages_in_order_then_the_mix():
    args = parse_args(["--context", "128", "--warm-schedule", "32:10,64:5"])
    stages = warm_schedule(args)
    assert stages == [(32, 10), (64, 5)]
    assert [warm_length(stages, s) for s in (0, 9, 10, 14, 15, 99)] == [32, 32, 64, 64, None, None]
    assert curriculum_text(stages, (300, 556)).startswith("first 10 steps on 32-token rows, then 5 steps on 64")
    assert warm_schedule(parse_args(["--warm-steps", "7"])) == [(128, 7)]  # the older option: full-length rows
    assert warm_schedule(parse_args([])) == []


@pytest.mark.parametrize("bad", ["16:10", "200:10", "32:-1"])
def test_a_row_length_outside_the_context_is_refused(bad):
    with pytest.raises(SystemExit, match="warm-schedule"):
        warm_schedule(parse_args(["--context", "128", "--warm-schedule", bad]))


def test_shorter_rows_come_in_more_of_them_and_repeat_their_span():
    args = parse_args(["--context", "128", "--batch", "4"])
    rows = warm_batch(args, (300, 556), 0, np.random.default_rng(0), 32).numpy()
    assert rows.shape == (16, 33)  # four times the rows at a quarter of the length: the same tokens per step
    assert (rows[:, 0] == 0).all() and ((rows[:, 1:] >= 300) & (rows[:, 1:] < 556)).all()
    for row in rows:  # the span after <eot> is written again right after itself
        k = next(k for k in range(10, 16) if (row[1 : 1 + k] == row[1 + k : 1 + 2 * k]).all())
        assert 10 <= k < 16
