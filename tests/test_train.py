"""Training and evaluation end to end on a tiny IMDB-layout fixture the test writes itself."""

import json
import random

import pytest
import torch

from transformer import analyze, load_bundle
from transformer.text.evaluate import main as evaluate_main
from transformer.text.train import bucket_batches, lr_factor
from transformer.text.train import main as train_main

POSITIVE = "a wonderful film , great acting and a moving story . loved it !"
NEGATIVE = "a boring film , bad acting and a dull story . hated it !"


@pytest.fixture
def imdb(tmp_path):
    rng = random.Random(0)
    root = tmp_path / "aclImdb"
    for split in ("train", "test"):
        for label, text in (("pos", POSITIVE), ("neg", NEGATIVE)):
            folder = root / split / label
            folder.mkdir(parents=True)
            for i in range(30):
                words = text.split()
                rng.shuffle(words)
                (folder / f"{i}_{8 if label == 'pos' else 2}.txt").write_text(
                    " ".join(words) + "<br />", encoding="utf-8"
                )
    return root


def test_train_writes_a_bundle_with_metrics(imdb, tmp_path, capsys):
    out = tmp_path / "model"
    code = train_main(
        [
            "--data",
            str(imdb),
            "--out",
            str(out),
            "--epochs",
            "4",
            "--d-model",
            "16",
            "--heads",
            "2",
            "--layers",
            "1",
            "--d-ff",
            "16",
            "--batch-size",
            "8",
            "--lr",
            "3e-3",
            "--eval-lens",
            "8,32",
            "--min-freq",
            "1",
        ]
    )
    assert code == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["data"]["train"] + metrics["data"]["validation"] == 60 and metrics["data"]["test"] == 60
    assert set(metrics["metrics"]["test_accuracy_per_class"]) == {"negative", "positive"}
    assert metrics["metrics"]["test_accuracy"] >= 0.9  # the two classes differ in every review
    assert metrics["command"].startswith("python -m transformer.text.train --data")
    assert len(metrics["history"]) == 4
    loaded = load_bundle(out)
    assert loaded.config.default_max_tokens == 32  # ties go to the longer length
    assert analyze(loaded, ["loved it , wonderful"]).predicted_label(0) == "positive"
    code = evaluate_main(["--model", str(out), "--data", str(imdb), "--split", "test"])
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and result["count"] == 60 and result["accuracy"] == metrics["metrics"]["test_accuracy"]


def test_missing_data_gives_a_clear_error(tmp_path, capsys):
    code = evaluate_main(["--model", str(tmp_path), "--data", str(tmp_path / "nowhere")])
    assert code == 2 and "error:" in capsys.readouterr().err


def test_bucketing_groups_similar_lengths():
    lengths = [5, 100, 6, 101, 7, 102, 8, 103]
    batches = bucket_batches(lengths, 4, random.Random(0))
    spans = sorted(max(lengths[i] for i in b) - min(lengths[i] for i in b) for b in batches)
    assert spans == [3, 3] and sorted(i for b in batches for i in b) == list(range(8))


def test_learning_rate_warms_up_then_decays():
    assert lr_factor(0, 100, 10) == pytest.approx(0.1)
    assert lr_factor(9, 100, 10) == pytest.approx(1.0)
    assert lr_factor(55, 100, 10) == pytest.approx(0.5)
    assert lr_factor(100, 100, 10) == 0.0


def _optimisation(consistency: float):
    from transformer.text.train import Optimisation

    return Optimisation(None, None, torch.device("cpu"), None, 0, 0.0, 0.0, None, consistency)


def test_r_drop_adds_the_disagreement_of_two_dropout_passes():
    from transformer import ModelConfig
    from transformer.core.model import SequenceClassifier
    from transformer.text.train import batch_loss

    ids = torch.randint(2, 30, (4, 9), generator=torch.Generator().manual_seed(0))
    target = torch.tensor([0, 1, 1, 0])
    for dropout, expect_gap in ((0.0, False), (0.5, True)):
        torch.manual_seed(0)
        model = SequenceClassifier(ModelConfig(vocab_size=30, d_model=16, num_heads=2, num_layers=1, dropout=dropout))
        model.train()
        torch.manual_seed(1)
        plain = batch_loss(model, ids, target, _optimisation(0.0))
        torch.manual_seed(1)
        with_kl = batch_loss(model, ids, target, _optimisation(1000.0))
        torch.manual_seed(1)  # the same two dropout draws, with a KL weight of almost nothing
        tiny_kl = batch_loss(model, ids, target, _optimisation(1e-9))
        if expect_gap:  # two passes under different dropout disagree: a large weight raises the loss
            assert with_kl.item() > tiny_kl.item() + 1e-3
        else:  # without dropout both passes agree: the KL term is zero and the loss is plain cross-entropy
            assert torch.allclose(plain, with_kl, atol=1e-6)


def test_train_seed_changes_training_but_not_the_split(imdb, tmp_path):
    small = ["--data", str(imdb), "--epochs", "1", "--d-model", "16", "--heads", "2", "--layers", "1", "--d-ff", "16",
             "--batch-size", "8", "--eval-lens", "32", "--min-freq", "1"]  # fmt: skip
    runs = {}
    for name, extra in (("a", []), ("b", ["--train-seed", "5"]), ("c", ["--train-seed", "13"])):
        out = tmp_path / name
        assert train_main([*small, *extra, "--out", str(out)]) == 0
        runs[name] = (json.loads((out / "metrics.json").read_text()), load_bundle(out).model.state_dict())
    assert runs["a"][0]["data"] == runs["b"][0]["data"]  # the same split (seed 13 for both)
    assert "--train-seed 5" in runs["b"][0]["command"]
    weights = [state["encoder.layers.0.ffn.linear1.weight"] for _, state in runs.values()]
    assert not torch.equal(weights[0], weights[1])  # another initialisation and order
    assert torch.equal(weights[0], weights[2])  # --train-seed 13 is the default --seed's run


def test_keep_loss_is_zero_for_the_teachers_own_answers_and_counts_only_kept_rows():
    from types import SimpleNamespace

    from transformer.text.train import keep_loss

    torch.manual_seed(0)
    table = torch.randn(10, 2)

    class Teacher(torch.nn.Module):
        def forward(self, ids):
            return SimpleNamespace(logits=table[ids[:, 0]])

    ids = torch.tensor([[1, 0], [2, 0], [3, 0], [4, 0]])
    kept = torch.tensor([True, False, True, False])
    same = table[ids[:, 0]].clone()
    assert float(keep_loss(same, Teacher(), ids, kept)) == pytest.approx(0.0, abs=1e-7)
    other = same.clone()
    other[1] += 5.0  # a row that is not kept: no pull
    assert float(keep_loss(other, Teacher(), ids, kept)) == pytest.approx(0.0, abs=1e-7)
    other[0] = -other[0]
    p = torch.softmax(table[1], -1)
    q = torch.log_softmax(-table[1], -1)
    expected = float((p * (p.log() - q)).sum()) / 4  # KL(teacher ‖ model) of row 0, over the batch of 4
    assert float(keep_loss(other, Teacher(), ids, kept)) == pytest.approx(expected, rel=1e-5)


def test_keep_weight_goes_on_from_a_model_and_needs_one(imdb, tmp_path, capsys):
    small = ["--data", str(imdb), "--epochs", "1", "--d-model", "16", "--heads", "2", "--layers", "1", "--d-ff", "16",
             "--batch-size", "8", "--eval-lens", "32", "--min-freq", "1"]  # fmt: skip
    with pytest.raises(SystemExit, match="--init-from"):
        train_main([*small, "--keep-weight", "1", "--out", str(tmp_path / "x")])
    first = tmp_path / "first"
    assert train_main([*small, "--out", str(first)]) == 0
    assert train_main([*small, "--init-from", str(first), "--keep-weight", "1", "--out", str(tmp_path / "kept")]) == 0
    metrics = json.loads((tmp_path / "kept" / "metrics.json").read_text())
    assert "--keep-weight 1" in metrics["command"] and metrics["initialised_from"].endswith("first")


def test_adversarial_push_raises_the_loss_and_vanishes_at_zero():
    from transformer import ModelConfig
    from transformer.core.model import SequenceClassifier
    from transformer.text.train import adversarial_loss

    torch.manual_seed(0)
    model = SequenceClassifier(ModelConfig(vocab_size=30, d_model=16, num_heads=2, num_layers=1, dropout=0.0))
    ids = torch.randint(2, 30, (4, 9), generator=torch.Generator().manual_seed(0))
    target = torch.tensor([0, 1, 1, 0])
    clean = torch.nn.functional.cross_entropy(model(ids).logits, target).item()
    opt = _optimisation(0.0)
    opt.adversarial = 1e-6  # no push: the clean loss twice
    assert adversarial_loss(model, ids, target, opt).item() == pytest.approx(2 * clean, rel=1e-4)
    opt.adversarial = 0.5  # the push goes uphill: the second term is above the clean loss
    assert adversarial_loss(model, ids, target, opt).item() > 2 * clean + 1e-3
    opt.adversarial = -0.5  # the same step downhill lowers it: the direction is the gradient's
    assert adversarial_loss(model, ids, target, opt).item() < 2 * clean - 1e-3


def test_adversarial_training_runs_alone(imdb, tmp_path):
    small = ["--data", str(imdb), "--epochs", "1", "--d-model", "16", "--heads", "2", "--layers", "1", "--d-ff", "16",
             "--batch-size", "8", "--eval-lens", "32", "--min-freq", "1"]  # fmt: skip
    with pytest.raises(SystemExit, match="leave out --consistency"):
        train_main([*small, "--adversarial", "1", "--consistency", "1", "--out", str(tmp_path / "x")])
    assert train_main([*small, "--adversarial", "1", "--out", str(tmp_path / "m")]) == 0
    assert "--adversarial 1" in json.loads((tmp_path / "m" / "metrics.json").read_text())["command"]


def test_training_with_the_ngram_teacher_records_it(imdb, tmp_path):
    small = ["--data", str(imdb), "--epochs", "1", "--d-model", "16", "--heads", "2", "--layers", "1", "--d-ff", "16",
             "--batch-size", "8", "--eval-lens", "32", "--min-freq", "1"]  # fmt: skip
    with pytest.raises(SystemExit, match="weight in"):
        train_main([*small, "--ngram-teacher", "1", "--out", str(tmp_path / "x")])
    assert train_main([*small, "--ngram-teacher", "0.5", "--out", str(tmp_path / "m")]) == 0
    teacher = json.loads((tmp_path / "m" / "metrics.json").read_text())["ngram_teacher"]
    assert teacher["weight"] == 0.5 and teacher["folds"] == 5
    assert teacher["out_of_fold_accuracy_on_training_examples"] == 1.0
