"""The Train page's tasks and trainer (transformer.lab): what each task asks, held-out sequences
never trained on, the trainer learning at a fixed seed, and determinism."""

import numpy as np
import pytest
import torch

from transformer.lab.tasks import (
    FIRST_SYMBOL,
    MIN_HELD_OUT,
    SEP_ID,
    START_ID,
    TASKS,
    Task,
    TooFewHeldOut,
    draw_inputs,
    held_out_count,
    held_out_shortage,
    is_held_out,
)
from transformer.lab.trainer import LabSettings, Trainer, first_reaching, probe_induction, train_for


def inputs_of(task: Task, rows: np.ndarray) -> np.ndarray:
    """The symbol indices of each row's input (copy / reverse / sort)."""
    return rows[:, 1 : 1 + task.length] - FIRST_SYMBOL


@pytest.mark.parametrize("name", ["copy", "reverse", "sort"])
def test_answer_tasks_write_input_separator_and_the_answer(name):
    task = Task(name, 6, 10)
    batch = task.sample(np.random.default_rng(0), 32)
    x = inputs_of(task, batch.rows)
    expected = {"copy": x, "reverse": x[:, ::-1], "sort": np.sort(x, axis=1)}[name]
    assert batch.rows.shape == (32, task.row_length) == (32, 14)
    assert (batch.rows[:, 0] == START_ID).all() and (batch.rows[:, 7] == SEP_ID).all()
    np.testing.assert_array_equal(batch.rows[:, 8:] - FIRST_SYMBOL, expected)
    # the predictions that count are made at '>' and the answer's tokens, scored on the answer
    answer_targets = batch.rows[:, 1:][batch.answer].reshape(32, 6)
    np.testing.assert_array_equal(answer_targets - FIRST_SYMBOL, expected)


def test_induction_rows_repeat_a_span_and_score_only_what_the_first_copy_tells():
    task = Task("induction", 8, 20)
    batch = task.sample(np.random.default_rng(1), 64)
    distances = set()
    for row, answer in zip(batch.rows, batch.answer):
        scored = np.flatnonzero(answer)  # prediction i is made at token i
        assert 3 <= len(scored) <= 7  # spans of 4..8 symbols: 3..7 answers
        k, second = len(scored) + 1, scored[0]  # the second copy starts where the first answer is made
        copy = row[second : second + k]
        firsts = [a for a in range(1, second - k + 1) if np.array_equal(row[a : a + k], copy)]
        assert firsts, "the span appears earlier in the row"
        distances.add(second - firsts[-1])
        # every scored target is what followed the same token in the first copy
        for i in scored:
            assert row[i + 1] == row[i - (second - firsts[-1]) + 1]
    assert len(distances) > 5  # the copies are not a fixed distance apart: no fixed look back finds them


def test_held_out_inputs_are_never_drawn_for_training():
    rng = np.random.default_rng(0)
    train = draw_inputs(rng, 20_000, 4, 6, held_out=False)
    held = draw_inputs(rng, 500, 4, 6, held_out=True)
    assert not is_held_out(train).any() and is_held_out(held).all()
    assert not {tuple(r) for r in train} & {tuple(r) for r in held}
    # about HELD_OUT_FRACTION of all inputs are held out, the same split on every call
    every = np.array(np.meshgrid(*[range(6)] * 4)).reshape(4, -1).T
    assert 0.015 < is_held_out(every).mean() < 0.05
    np.testing.assert_array_equal(is_held_out(every), is_held_out(every.copy()))


@pytest.mark.parametrize("name", TASKS)
def test_training_batches_and_the_trainers_evaluation_use_opposite_sides_of_the_split(name):
    trainer = Trainer(LabSettings(task=name, length=6, symbols=8, batch=128))
    task = trainer.task
    rows = task.sample(trainer.rng, 128).rows
    held_rows = trainer.held_out[0].numpy()
    if name == "induction":  # the example's span and every held-out span lie on the held-out side
        example = trainer.example.rows[0]
        assert is_held_out(example[None, 1 : 1 + task.length] - FIRST_SYMBOL).all()
        return
    assert not is_held_out(inputs_of(task, rows)).any()
    assert is_held_out(inputs_of(task, held_rows)).all()
    assert is_held_out(inputs_of(task, trainer.example.rows)).all()


def test_a_task_outside_its_limits_says_what_is_allowed():
    with pytest.raises(ValueError, match="Unknown task"):
        Task("translate", 4, 10)
    with pytest.raises(ValueError, match="length must be between 2 and 32"):
        Task("copy", 40, 10)
    with pytest.raises(ValueError, match="multiple of heads"):
        LabSettings(d_model=30, heads=4)
    with pytest.raises(ValueError, match="layers must be between 1 and 4"):
        LabSettings(layers=6)


def test_settings_that_leave_too_few_held_out_sequences_are_refused_before_a_run():
    # 4 symbols at length 2: 16 sequences, none of them held out (once, this failed mid-run)
    assert held_out_count(2, 4) == 0
    assert held_out_shortage(2, 4) == {"symbols": 4, "length": 2, "total": 16, "held_out": 0, "need": MIN_HELD_OUT}
    with pytest.raises(TooFewHeldOut, match="4 symbols at length 2 make 16 different sequences") as refused:
        LabSettings(task="reverse", length=2, symbols=4)
    assert refused.value.fields["held_out"] == 0
    # the count is exact: every input of 6 symbols at length 4, hashed
    every = np.indices((6,) * 4).reshape(4, -1).T
    assert held_out_count(4, 6) == int(is_held_out(every).sum()) >= MIN_HELD_OUT
    assert held_out_shortage(4, 6) is None and held_out_shortage(12, 16) is None  # past counting: thousands
    # every setting the Train page offers either passes or is refused here; each one refused is short
    for length in range(2, 17):
        for symbols in range(4, 61):
            shortage = held_out_shortage(length, symbols)
            assert shortage is None or shortage["held_out"] < MIN_HELD_OUT
    assert held_out_shortage(2, 16) and not held_out_shortage(2, 20) and not held_out_shortage(4, 4)


def test_reverse_is_learned_to_held_out_accuracy_099_at_a_fixed_seed():
    torch.set_num_threads(1)
    trainer, snaps = train_for(LabSettings(task="reverse", length=5, symbols=8, seed=0), float("inf"), max_steps=250)
    assert snaps[0].accuracy < 0.5  # chance is 1/8
    assert snaps[-1].accuracy >= 0.99, [s.summary() for s in snaps]
    assert first_reaching(snaps, "accuracy", 0.99)["step"] <= 250


def test_without_positions_reverse_is_not_learned_in_the_same_steps():
    torch.set_num_threads(1)
    _, snaps = train_for(
        LabSettings(task="reverse", length=5, symbols=8, positional="none"), float("inf"), max_steps=250
    )
    assert snaps[-1].accuracy < 0.9


def test_snapshot_holds_every_heads_attention_on_the_example_and_head_scores():
    trainer = Trainer(LabSettings(task="copy", length=4, symbols=6, layers=3, heads=2, d_model=16))
    snap = trainer.snapshot()
    t = trainer.task.row_length
    assert snap.attention.shape == (3, 2, t, t) and snap.previous.shape == snap.induction.shape == (3, 2)
    np.testing.assert_allclose(snap.attention.sum(-1), 1.0, atol=1e-5)
    assert np.all(np.triu(snap.attention, k=1) == 0)  # causal
    assert len(trainer.example_tokens) == t and trainer.example_tokens[0] == "<|endoftext|>"


def test_the_induction_probe_scores_a_head_that_attends_to_what_followed():
    trainer = Trainer(LabSettings(task="induction", length=8, symbols=20, layers=1, heads=1, d_model=8))
    model = trainer.model

    class Copying(torch.nn.Module):  # stands in for the model: weights of a perfect induction head
        config = model.config

        def forward(self, ids, need_weights=False):
            b, t = ids.shape
            w = torch.zeros(b, 1, t, t)
            for q in range(t):
                earlier = [k for k in range(q) if (ids[:, k] == ids[:, q]).all()]
                w[:, 0, q, earlier[-1] + 1 if earlier else q] = 1.0
            return type("Out", (), {"attention": [type("W", (), {"weights": w})()]})()

        def parameters(self):
            return model.parameters()

    assert probe_induction(Copying(), trainer.task)[0, 0] > 0.95
    assert probe_induction(model, trainer.task)[0, 0] < 0.4  # random weights


def test_the_same_seed_gives_the_same_weights_and_another_seed_others():
    def weights(seed):
        trainer = Trainer(LabSettings(task="sort", length=4, symbols=6, d_model=16, seed=seed))
        for _ in range(5):
            trainer.step()
        return torch.cat([p.detach().flatten() for p in trainer.model.parameters()])

    assert torch.equal(weights(3), weights(3))
    assert not torch.equal(weights(3), weights(4))


def test_attention_only_layers_add_nothing_after_attention():
    trainer = Trainer(LabSettings(task="copy", length=4, symbols=6, d_model=16, feed_forward=False))
    for _ in range(3):
        trainer.step()
    for layer in trainer.model.layers:
        assert layer.ffn.linear1.weight.numel() == 0
        assert torch.count_nonzero(layer.ffn.linear2.bias) == 0


def test_the_output_layer_is_its_own_unless_tied_and_the_memory_estimate_counts_it():
    from transformer.lab.runner import estimated_bytes

    settings = LabSettings(task="copy", length=4, symbols=6, d_model=16)
    untied, tied = Trainer(settings).model, Trainer(settings.replace(tied_output=True)).model
    assert not untied.config.tie_output_embedding and tied.config.tie_output_embedding
    assert untied.output.weight.data_ptr() != untied.embedding.tokens.weight.data_ptr()
    assert tied.output.weight.data_ptr() == tied.embedding.tokens.weight.data_ptr()
    n_untied = sum(p.numel() for p in untied.parameters())
    n_tied = sum(p.numel() for p in tied.parameters())
    assert n_untied - n_tied == untied.output.weight.numel()
    extra = estimated_bytes(settings) - estimated_bytes(settings.replace(tied_output=True))
    assert extra == 4 * 4 * untied.output.weight.numel()  # weights, gradients and AdamW's two moments


def test_the_cli_prints_one_json_line_with_accuracy_induction_steps_and_seconds(capsys, tmp_path):
    import json

    from transformer.bundle import load_bundle
    from transformer.cli.main import main
    from transformer.core.bpe_text import encode_prompt

    args = ["lab", "--task", "copy", "--length", "4", "--symbols", "6", "--d-model", "16", "--steps", "30"]
    assert main([*args, "--seconds", "60", "--seed", "2", "--out", str(tmp_path / "lab")]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert {"accuracy", "exact", "induction", "previous", "steps", "seconds", "settings"} <= set(record)
    assert record["steps"] == 30 and record["settings"]["seed"] == 2 and 0 <= record["accuracy"] <= 1
    assert record["threads"] == 1
    # the saved folder is a bundled language model whose tokenizer reads the task's symbols
    loaded = load_bundle(tmp_path / "lab")
    assert loaded.config.kind == "language-model" and loaded.metrics["task"] == "copy"
    assert encode_prompt(loaded.lm_tokenizer, "1 2 3 4 >").tokens == ["<|endoftext|>", "1", "2", "3", "4", ">"]
    assert encode_prompt(loaded.lm_tokenizer, "12 34>").ids == encode_prompt(loaded.lm_tokenizer, "1 2 3 4 >").ids


def test_the_cli_says_what_is_wrong_with_settings(capsys):
    from transformer.cli.main import main

    assert main(["lab", "--task", "copy", "--d-model", "30", "--heads", "4"]) == 2
    assert "multiple of heads" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["reverse", "induction", "positions"])
def test_every_preset_builds_trains_and_measures(name):
    from transformer.lab.presets import PRESETS

    preset = PRESETS[name]
    trainer = Trainer(preset.settings.replace(batch=8))
    trainer.step()
    snap = trainer.snapshot()
    assert snap.step == 1 and np.isfinite(snap.loss)
    assert snap.attention.shape[:2] == (preset.settings.layers, preset.settings.heads)
    assert trainer.model.config.positional == preset.settings.positional
