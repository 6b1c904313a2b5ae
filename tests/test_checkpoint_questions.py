"""What the weights cannot tell, answered as the learner's code did: positions or none, which
sinusoid base, √d_model scaling or not, a start token or none. Each checkpoint is saved by a
reference written in its family's own code and compared with it within 1e-5; the values used
and their sources are listed in ``LoadedModel.assumptions``."""

import numpy as np
import pytest
import torch

from tests.checkpoint_references_course import CourseTransformer, PlainTorchClassifier, course_classifier
from tests.checkpoint_references_seq2seq import VanillaTransformer
from tests.test_checkpoints import (
    TARGET_WORDS,
    TARGETS,
    TEXTS,
    WORDS,
    assert_classifier_matches,
    assert_seq2seq_matches,
    reference_run,
    reset_records,
    saved,
)
from transformer import ImportOptions, analyze, load_model
from transformer.checkpoints import asked, defaults, inspect_checkpoint
from transformer.core.tokenizer import Vocab

TOL = 1e-5


@pytest.fixture
def vocab() -> Vocab:
    return Vocab.build([WORDS])


def records_of(ref):
    return lambda ids: reference_run(ref, ids)


@pytest.mark.parametrize("scale", [False, True])
def test_pytorch_encoder_without_positions_scaled_or_not(tmp_path, vocab, scale):
    torch.manual_seed(11)
    ref = PlainTorchClassifier(len(vocab), scale, pad_idx=vocab.pad_id).eval()
    path, vocab_file = saved(tmp_path, ref, vocab)
    detection = inspect_checkpoint(path)
    assert defaults(detection)["positional"] == "none"  # PyTorch code saves its sinusoid as a buffer: none saved
    options = ImportOptions(vocab_path=str(vocab_file), num_heads=4, scale_embedding=scale)
    loaded = load_model(path, "cpu", options)
    assert loaded.config.positional == "none" and loaded.config.scale_embedding is scale
    assert loaded.assumptions["positional"] == {"value": "none", "source": "family default"}
    assert loaded.assumptions["scale_embedding"] == {"value": scale, "source": "user"}
    assert loaded.assumptions["pad_id"]["source"] == "vocabulary"
    assert_classifier_matches(loaded, ref)
    # answered the other way, the attention is not the user's: the question matters
    wrong = load_model(path, "cpu", ImportOptions(vocab_path=str(vocab_file), num_heads=4, positional="sinusoidal"))
    ours = analyze(wrong, TEXTS[:1]).attention_for(0)
    _, theirs = ref(torch.tensor(analyze(wrong, TEXTS[:1]).ids))
    assert np.abs(ours - torch.stack([r[0] for r in theirs]).detach().numpy()).max() > 1e-3


@pytest.mark.parametrize(
    ("positions", "base", "scale"),
    [(True, 10000.0, False), (False, 10000.0, False), (True, 1000.0, True), (False, 10000.0, True)],
)
def test_course_encoder_positions_base_and_scaling(tmp_path, vocab, positions, base, scale):
    torch.manual_seed(12)
    ref = course_classifier(len(vocab), positions=positions, base=base, scale=scale, pad_idx=vocab.pad_id).eval()
    path, vocab_file = saved(tmp_path, ref, vocab)
    detection = inspect_checkpoint(path)
    assert {"positional", "pe_base", "scale_embedding"} <= set(asked(detection))
    assert defaults(detection)["positional"] == "sinusoidal"  # the notebook adds the sinusoid without saving it
    options = ImportOptions(
        vocab_path=str(vocab_file),
        num_heads=4,
        positional="sinusoidal" if positions else "none",
        pe_base=base,
        scale_embedding=scale,
        label_names=("neg", "pos"),
    )
    loaded = load_model(path, "cpu", options)
    assert (loaded.config.positional, loaded.config.pe_base) == ("sinusoidal" if positions else "none", base)
    assert loaded.assumptions["mask_fill"] == {"value": -1e10, "source": "family default"}
    assert_classifier_matches(loaded, records_of(ref))


def test_course_nn_transformer_without_positions(tmp_path):
    """Seed 002: no positional encoding, no scaling, one shared embedding; the family's defaults
    give no positions, and the scaling question is answered 'no'."""
    torch.manual_seed(13)
    shared = Vocab.build([WORDS + TARGET_WORDS], specials=["<bos>", "<eos>"])
    ref = CourseTransformer(len(shared), pad=shared.pad_id).eval()
    path, vocab_file = saved(tmp_path, ref, shared)
    loaded = load_model(path, "cpu", ImportOptions(vocab_path=str(vocab_file), num_heads=4, scale_embedding=False))
    cfg = loaded.config
    assert (cfg.kind, cfg.positional, cfg.scale_embedding, cfg.final_norm) == ("encoder-decoder", "none", False, False)
    assert loaded.assumptions["bos"] == {"value": "<bos>", "source": "vocabulary"}
    assert_seq2seq_matches(loaded, ref, shared)


def vanilla(tmp_path, vocab, target_vocab, **options):
    torch.manual_seed(14)
    ref = VanillaTransformer(len(vocab), len(target_vocab), pad=vocab.pad_id).eval()
    path, vocab_file = saved(tmp_path, ref, vocab)
    target_file = target_vocab.save(tmp_path / "target.txt")
    opts = ImportOptions(vocab_path=str(vocab_file), num_heads=4, target_vocab_path=str(target_file), **options)
    return ref, load_model(path, "cpu", opts)


def test_no_start_token_is_invented(tmp_path, vocab):
    """A target vocabulary without <bos>: the teacher-forced target is fed exactly as given."""
    target_vocab = Vocab.build([TARGET_WORDS])
    ref, loaded = vanilla(tmp_path, vocab, target_vocab)
    assert loaded.config.bos_id is None and loaded.config.eos_id is None
    assert loaded.assumptions["bos"] == {"value": None, "source": "vocabulary"}
    assert any("no start token" in note for note in loaded.notes)
    result = analyze(loaded, TEXTS, targets=TARGETS)
    assert result.decoder_tokens[0] == TARGETS[0].split()  # no extra first row
    assert result.decoder_self_attention.shape[-1] == max(len(t.split()) for t in TARGETS)
    assert_seq2seq_matches(loaded, reset_records(ref), target_vocab)
    with pytest.raises(ValueError, match="--bos"):
        analyze(loaded, TEXTS[:1])  # running on its own needs a start token


def test_a_start_token_of_the_vocabulary_is_added_and_said(tmp_path, vocab):
    target_vocab = Vocab.build([TARGET_WORDS], specials=["<sos>", "<eos>"])
    ref, loaded = vanilla(tmp_path, vocab, target_vocab)
    assert loaded.config.bos_id == target_vocab.token_to_id("<sos>")
    assert any("'<sos>' is put before every target" in note for note in loaded.notes)
    result = analyze(loaded, TEXTS, targets=TARGETS)
    assert result.decoder_tokens[1] == ["<sos>", *TARGETS[1].split()]
    assert_seq2seq_matches(loaded, reset_records(ref), target_vocab)


def test_start_and_end_tokens_from_the_user(tmp_path, vocab):
    target_vocab = Vocab.build([TARGET_WORDS], specials=["<go>", "<stop>"])
    _, loaded = vanilla(tmp_path, vocab, target_vocab, bos="<go>", eos="<stop>")
    assert (loaded.config.bos_id, loaded.config.eos_id) == (2, 3)
    assert loaded.assumptions["bos"] == {"value": "<go>", "source": "user"}
    greedy = analyze(loaded, TEXTS[:1])
    assert greedy.decoder_tokens[0][0] == "<go>"
    with pytest.raises(ValueError, match="not in the target vocabulary"):
        vanilla(tmp_path, vocab, target_vocab, bos="<start>")


def test_cli_teacher_forces_the_target_as_given_and_lists_the_assumptions(tmp_path, vocab, capsys):
    import json

    from transformer.cli.main import main

    target_vocab = Vocab.build([TARGET_WORDS])
    torch.manual_seed(15)
    ref = VanillaTransformer(len(vocab), len(target_vocab), pad=vocab.pad_id).eval()
    path, vocab_file = saved(tmp_path, ref, vocab)
    target_file = target_vocab.save(tmp_path / "target.txt")
    args = ["inspect", "--checkpoint", str(path), "--vocab", str(vocab_file), "--target-vocab", str(target_file)]
    args += ["--heads", "4", "--text", TEXTS[0], "--text", TEXTS[1], "--target", TARGETS[0], "--target", TARGETS[1]]
    assert main(args) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["model"]["assumptions"]["bos"] == {"value": None, "source": "vocabulary"}
    assert document["model"]["assumptions"]["num_heads"] == {"value": 4, "source": "user"}
    first = document["inputs"][0]
    assert first["decoder_tokens"] == TARGETS[0].split()
    m, n = len(first["decoder_tokens"]), len(first["tokens"])
    assert np.array(first["attention"]["cross"]).shape == (2, 4, m, n)
    assert np.array(first["attention"]["decoder_self"]).shape == (2, 4, m, m)
