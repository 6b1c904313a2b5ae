"""The out-of-fold n-gram teacher (``--ngram-teacher``): it scores every text with a model that never saw it."""

import random

import numpy as np
import pytest
import torch

from transformer.text.ngram_teacher import out_of_fold_probabilities
from transformer.text.train import Optimisation, batch_loss


def test_a_text_is_scored_by_a_model_that_never_saw_it():
    """Labels carried only by a word unique to each text: a model that saw the text would get it right,
    one that did not can only guess."""
    rng = random.Random(0)
    labels = [rng.randrange(2) for _ in range(200)]
    texts = [f"token{i} the film" for i in range(200)]
    probs = out_of_fold_probabilities(texts, labels)
    assert probs.shape == (200, 2) and np.allclose(probs.sum(1), 1.0, atol=1e-5)
    right = float((probs.argmax(1) == np.array(labels)).mean())
    assert right < 0.65  # chance: no text's own word was in the model that scored it


def test_words_that_carry_the_label_are_learned_across_folds():
    rng = random.Random(1)
    good, bad = ["wonderful", "superb", "moving"], ["dull", "awful", "tedious"]
    texts, labels = [], []
    for i in range(120):
        label = i % 2
        words = rng.sample(good if label else bad, 2) + ["film", f"name{i}"]
        rng.shuffle(words)
        texts.append(" ".join(words))
        labels.append(label)
    probs = out_of_fold_probabilities(texts, labels)
    assert float((probs.argmax(1) == np.array(labels)).mean()) == 1.0


def test_copies_of_a_text_share_one_fold_and_one_probability():
    """A sentence repeated (SST-2 ×3) must not be scored by a model fitted on its own copy."""
    base = [f"token{i} the film" for i in range(60)]
    labels = [i % 2 for i in range(60)]
    probs = out_of_fold_probabilities(base * 3, labels * 3)
    assert np.array_equal(probs[:60], probs[60:120]) and np.array_equal(probs[:60], probs[120:])
    assert float((probs[:60].argmax(1) == np.array(labels)).mean()) < 0.7  # copies did not leak their label


def test_bad_arguments_say_what_is_wrong():
    with pytest.raises(ValueError, match="at least 2 folds"):
        out_of_fold_probabilities(["a b"] * 4, [0, 1, 0, 1], folds=1)
    with pytest.raises(ValueError, match="3 texts but 2 labels"):
        out_of_fold_probabilities(["a", "b", "c"], [0, 1])


def test_the_loss_mixes_the_label_and_the_teachers_answer():
    from transformer import ModelConfig
    from transformer.core.model import SequenceClassifier

    torch.manual_seed(0)
    model = SequenceClassifier(ModelConfig(vocab_size=30, d_model=16, num_heads=2, num_layers=1, dropout=0.0))
    ids = torch.randint(2, 30, (4, 7), generator=torch.Generator().manual_seed(0))
    target = torch.tensor([0, 1, 1, 0])
    soft = torch.tensor([[0.9, 0.1], [0.3, 0.7], [0.5, 0.5], [0.2, 0.8]])
    opt = Optimisation(None, None, torch.device("cpu"), None, 0, 0.0, 0.0, None)
    logits = model(ids).logits
    hard = torch.nn.functional.cross_entropy(logits, target)
    taught = -(soft * torch.log_softmax(logits, -1)).sum(-1).mean()
    opt.ngram_weight = 0.25
    assert batch_loss(model, ids, target, opt, soft=soft).item() == pytest.approx(
        (0.75 * hard + 0.25 * taught).item(), rel=1e-5
    )
    opt.ngram_weight = 0.0  # off: plain cross-entropy whatever soft is
    assert batch_loss(model, ids, target, opt, soft=soft).item() == pytest.approx(hard.item(), rel=1e-5)
