"""Masked-language-model pre-training: which tokens are hidden, the loss, and the train command's use of it."""

import json

import torch

from transformer import ModelConfig, load_bundle
from transformer.core.model import Encoder
from transformer.core.tokenizer import MASK, TextEncoder, Vocab
from transformer.text.pretrain import IGNORE, MaskedLMHead, mask_tokens, mlm_loss
from transformer.text.train import main as train_main

from .test_train import imdb  # noqa: F401  (fixture)

PAD, MASK_ID, FIRST_WORD, VOCAB = 1, 2, 3, 50


def _batch(rows: int = 64, length: int = 40, pads: int = 10) -> torch.Tensor:
    ids = torch.randint(FIRST_WORD, VOCAB, (rows, length), generator=torch.Generator().manual_seed(0))
    ids[:, -pads:] = PAD
    return ids


def test_about_fifteen_percent_of_real_tokens_are_chosen_and_pads_never():
    ids = _batch()
    inputs, targets = mask_tokens(ids, MASK_ID, PAD, FIRST_WORD, VOCAB, 0.15, torch.Generator().manual_seed(1))
    chosen = targets != IGNORE
    real = ids != PAD
    assert not (chosen & ~real).any()
    assert abs(chosen.sum().item() / real.sum().item() - 0.15) < 0.02
    assert torch.equal(targets[chosen], ids[chosen])
    assert torch.equal(inputs[~chosen], ids[~chosen])  # what is not chosen is left alone


def test_chosen_tokens_are_mostly_masked_some_random_some_kept():
    ids = _batch(rows=400)
    inputs, targets = mask_tokens(ids, MASK_ID, PAD, FIRST_WORD, VOCAB, 0.15, torch.Generator().manual_seed(2))
    chosen = targets != IGNORE
    masked = (inputs == MASK_ID) & chosen
    kept = (inputs == ids) & chosen
    share_masked = masked.sum().item() / chosen.sum().item()
    assert 0.75 < share_masked < 0.85
    assert 0.08 < kept.sum().item() / chosen.sum().item() < 0.16  # 10 % kept + random draws of the same word
    swapped = inputs[chosen & ~masked & ~kept]
    assert swapped.numel() > 0 and swapped.min() >= FIRST_WORD and swapped.max() < VOCAB  # never a special token


def test_nothing_is_hidden_at_rate_zero():
    ids = _batch()
    inputs, targets = mask_tokens(ids, MASK_ID, PAD, FIRST_WORD, VOCAB, 0.0)
    assert torch.equal(inputs, ids) and (targets == IGNORE).all()


def test_head_is_tied_to_the_embedding_table_and_the_loss_falls():
    torch.manual_seed(0)
    config = ModelConfig(
        vocab_size=VOCAB, d_model=16, num_heads=2, num_layers=1, d_ff=32, dropout=0.0, pad_id=PAD, scale_embedding=True
    )
    encoder = Encoder(config)
    head = MaskedLMHead(encoder.embedding.tokens)
    assert head.embedding.weight is encoder.embedding.tokens.weight
    ids = _batch(rows=8, length=12, pads=2)
    inputs, targets = mask_tokens(ids, MASK_ID, PAD, FIRST_WORD, VOCAB, 0.3, torch.Generator().manual_seed(3))
    params = list(encoder.parameters()) + [head.bias] + list(head.transform.parameters())
    optimizer = torch.optim.Adam(params, lr=1e-2)
    first = mlm_loss(encoder, head, inputs, targets)
    assert (
        abs(first.item() - torch.log(torch.tensor(float(VOCAB))).item()) < 1.0
    )  # near chance at the start (small embedding rows)
    for _ in range(60):
        optimizer.zero_grad()
        mlm_loss(encoder, head, inputs, targets).backward()
        optimizer.step()
    assert mlm_loss(encoder, head, inputs, targets).item() < 0.5 * first.item()


def test_typed_mask_token_is_an_unknown_word():
    vocab = Vocab.from_counts({"good": 3}, specials=[MASK])
    ids = TextEncoder(vocab).encode(f"good {MASK}").ids
    assert ids == [vocab.token_to_id("good"), vocab.unk_id]


def test_train_with_pretraining_records_it_and_keeps_mask_in_the_vocabulary(imdb, tmp_path):  # noqa: F811
    out = tmp_path / "model"
    args = ["--data", str(imdb), "--out", str(out), "--mlm-epochs", "2", "--epochs", "3", "--d-model", "16"]
    args += ["--heads", "2", "--layers", "1", "--d-ff", "16", "--batch-size", "8", "--lr", "3e-3", "--min-freq", "1"]
    assert train_main(args + ["--eval-lens", "32"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    history = metrics["pretraining_history"]
    assert [h["epoch"] for h in history] == [1, 2] and all(h["mlm_loss"] > 0 for h in history)
    assert metrics["metrics"]["test_accuracy"] >= 0.9
    assert MASK in load_bundle(out).vocab


def test_pretrained_encoder_is_saved_and_fine_tuning_starts_from_it(imdb, tmp_path):  # noqa: F811
    pre, out = tmp_path / "pre", tmp_path / "model"
    args = ["--data", str(imdb), "--mlm-epochs", "1", "--epochs", "1", "--d-model", "16", "--heads", "2"]
    args += ["--layers", "1", "--d-ff", "16", "--batch-size", "8", "--min-freq", "1", "--eval-lens", "32"]
    assert train_main(args + ["--out", str(tmp_path / "first"), "--pretrained-out", str(pre)]) == 0
    saved = json.loads((pre / "metrics.json").read_text())
    assert [h["epoch"] for h in saved["pretraining_history"]] == [1] and "pre-training only" in saved["what"]
    assert saved["command"].endswith(f"--pretrained-out {pre}")  # the command that ran, not the test runner's
    encoder_before = {k: v for k, v in load_bundle(pre).model.state_dict().items() if k.startswith("encoder.")}
    tuned = ["--data", str(imdb), "--init-from", str(pre), "--epochs", "1", "--lr", "0"]
    assert train_main(tuned + ["--eval-lens", "32", "--out", str(out)]) == 0  # at rate 0 the encoder is as it was
    after = load_bundle(out).model.state_dict()
    assert all(torch.equal(after[k], v) for k, v in encoder_before.items())


def test_going_on_from_a_model_compares_truncations_up_to_its_own_length(imdb, tmp_path):  # noqa: F811
    """A model that reads 1,024 tokens is compared at 1,024 too, not capped at --max-len's default of 512."""
    first, out = tmp_path / "first", tmp_path / "model"
    args = ["--data", str(imdb), "--epochs", "1", "--d-model", "16", "--heads", "2", "--layers", "1", "--d-ff", "16"]
    args += ["--batch-size", "8", "--min-freq", "1", "--max-len", "1024", "--train-len", "64", "--eval-lens", "64"]
    assert train_main(args + ["--out", str(first)]) == 0
    more = [
        "--data",
        str(imdb),
        "--init-from",
        str(first),
        "--epochs",
        "1",
        "--eval-lens",
        "600,1024",
        "--out",
        str(out),
    ]
    assert train_main(more) == 0
    measured = json.loads((out / "metrics.json").read_text())["metrics"]["validation_accuracy_by_truncation"]
    assert set(measured) == {"600", "1024"}


def test_a_resumed_pretraining_keeps_the_vocabulary_its_saved_rows_belong_to(imdb, tmp_path, monkeypatch):  # noqa: F811
    """The WordPiece trainer may order pieces of equal count differently from run to run: a resumed run must
    read the pieces from the saved state, not learn them again (which gave the saved rows to other pieces)."""
    import transformer.text.train as train_module

    out = tmp_path / "model"
    args = ["--data", str(imdb), "--out", str(out), "--tokenizer", "wordpiece", "--vocab-size", "300"]
    args += ["--d-model", "16", "--heads", "2", "--layers", "1", "--d-ff", "16", "--batch-size", "8"]
    args += ["--min-freq", "1", "--epochs", "1", "--eval-lens", "32"]
    assert train_main(args + ["--mlm-epochs", "1"]) == 0
    first_vocab = load_bundle(out).vocab.itos
    state = torch.load(out / "pretrain_state.pt", weights_only=True)
    assert state["vocabulary"] == first_vocab and '"WordPiece"' in state["tokenizer_json"]

    def must_not_learn_again(*_args, **_kwargs):
        raise AssertionError("the vocabulary was learned again on --resume")

    monkeypatch.setattr(train_module, "train_wordpiece", must_not_learn_again)
    assert train_main(args + ["--mlm-epochs", "2", "--resume"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert [h["epoch"] for h in metrics["pretraining_history"]] == [1, 2]
    assert load_bundle(out).vocab.itos == first_vocab

    del state["vocabulary"], state["tokenizer_json"]  # a state written before the vocabulary was kept in it
    torch.save(state, out / "pretrain_state.pt")
    try:
        train_main(args + ["--mlm-epochs", "3", "--resume"])
    except SystemExit as stop:
        assert "without its vocabulary" in str(stop) and "without --resume" in str(stop)
    else:
        raise AssertionError("an old state without its vocabulary was resumed")
