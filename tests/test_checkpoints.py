"""Importing checkpoints saved by tutorial code: for each family, a small reference model written as
the tutorial writes it is saved with torch.save(model.state_dict()), imported through our loader,
and compared with the reference: attention weights of every layer and head, and the logits."""

import numpy as np
import pytest
import torch

from tests.checkpoint_references import CourseClassifier, FusedClassifier, SeqFirstClassifier, TorchEncoderClassifier
from tests.checkpoint_references_seq2seq import ConcatTransformer, Seq2SeqTransformer, VanillaTransformer
from transformer import ImportOptions, ModelConfig, SequenceClassifier, analyze, load_model
from transformer.checkpoints import asked, defaults, inspect_checkpoint, summary
from transformer.core.tokenizer import Vocab

TOL = 1e-5
WORDS = "the movie was great bad not good plot acting film boring loved it a and".split()
TARGET_WORDS = "der film war toll schlecht nicht gut ein und".split()
TEXTS = ["the movie was great", "not good", "a boring film and bad acting , loved it"]
TARGETS = ["der film war toll", "nicht gut", "ein schlecht film und"]


@pytest.fixture
def vocab() -> Vocab:
    return Vocab.build([WORDS])


@pytest.fixture
def target_vocab() -> Vocab:
    return Vocab.build([TARGET_WORDS], specials=["<bos>", "<eos>"])


def saved(tmp_path, model: torch.nn.Module, vocab: Vocab, name="model.pt", extra: dict | None = None):
    """torch.save the reference's state_dict (or a dict holding it) and write vocab.txt; returns both paths."""
    torch.manual_seed(0)
    model.eval()
    path = tmp_path / name
    torch.save(model.state_dict() if extra is None else {"model_state_dict": model.state_dict(), **extra}, path)
    return path, vocab.save(tmp_path / "vocab.txt")


def reference_run(model, ids):
    """(logits, records) of a reference whose forward returns logits and keeps weights in model.records."""
    model.records.clear()
    return model(ids), list(model.records)


def assert_classifier_matches(loaded, reference, texts=TEXTS):
    """Every layer's and head's attention and the logits of each text, batched here, one by one there."""
    result = analyze(loaded, texts)
    assert result.logits is not None
    with torch.no_grad():
        for i in range(len(texts)):
            ids = torch.tensor(result.ids[i : i + 1, : int(result.lengths[i])])
            logits, records = reference(ids)
            ref = torch.stack([r[0] for r in records]).numpy()  # (L, H, n, n)
            assert result.attention_for(i).shape == ref.shape
            assert np.abs(result.attention_for(i) - ref).max() <= TOL
            assert np.abs(result.logits[i] - logits[0].numpy()).max() <= TOL
    return result


def test_course_notebook_classifier(tmp_path, vocab):
    torch.manual_seed(1)
    ref = CourseClassifier(len(vocab), embedding_dim=32, num_heads=4, pad_idx=vocab.pad_id).eval()
    path, vocab_file = saved(tmp_path, ref, vocab)
    loaded = load_model(path, "cpu", ImportOptions(vocab_path=str(vocab_file), num_heads=4))
    assert loaded.format == "course-encoder"
    cfg = loaded.config
    assert (cfg.mask_fill, cfg.scale_embedding, cfg.single_logit, cfg.head_hidden) == (-1e10, False, True, (16,))
    result = assert_classifier_matches(loaded, lambda ids: reference_run(ref, ids))
    assert result.probabilities.shape == (3, 2)  # one sigmoid logit -> [1 - p, p]


def test_course_notebook_with_wrong_heads_differs(tmp_path, vocab):
    """The comparison can fail: the same weights cut into 2 heads give other attention."""
    torch.manual_seed(1)
    ref = CourseClassifier(len(vocab), embedding_dim=32, num_heads=4, pad_idx=vocab.pad_id).eval()
    path, vocab_file = saved(tmp_path, ref, vocab)
    loaded = load_model(path, "cpu", ImportOptions(vocab_path=str(vocab_file), num_heads=2))
    with pytest.raises(AssertionError):
        assert_classifier_matches(loaded, lambda ids: reference_run(ref, ids))


def test_fused_qkv_per_head_rows_are_permuted(tmp_path, vocab):
    torch.manual_seed(2)
    ref = FusedClassifier(len(vocab), d_model=24, num_heads=3, pad_idx=vocab.pad_id).eval()
    path, vocab_file = saved(tmp_path, ref, vocab)
    loaded = load_model(path, "cpu", ImportOptions(vocab_path=str(vocab_file), num_heads=3))
    cfg = loaded.config
    assert loaded.format == "fused-qkv-per-head"
    assert (cfg.norm_style, cfg.layer_norm_eps, cfg.final_norm) == ("std_eps", 1e-6, True)
    assert_classifier_matches(loaded, lambda ids: reference_run(ref, ids))


def test_pytorch_encoder_pre_norm_gelu_first_token(tmp_path, vocab):
    torch.manual_seed(3)
    ref = TorchEncoderClassifier(len(vocab), pad_idx=vocab.pad_id).eval()
    path, vocab_file = saved(tmp_path, ref, vocab)
    options = ImportOptions(
        vocab_path=str(vocab_file),
        num_heads=4,
        pooling="first",
        norm_first=True,
        activation="gelu",
        scale_embedding=False,
        label_names=("a", "b", "c"),
    )
    loaded = load_model(path, "cpu", options)
    assert loaded.format == "pytorch-nn-transformer"
    assert (loaded.config.positional, loaded.config.max_len, loaded.config.final_norm) == ("learned", 40, True)
    assert_classifier_matches(loaded, ref)


def test_pytorch_sequence_first_encoder_with_pe_buffer(tmp_path, vocab):
    torch.manual_seed(4)
    ref = SeqFirstClassifier(len(vocab), pad_idx=vocab.pad_id).eval()
    path, vocab_file = saved(tmp_path, ref, vocab, "model.pth")
    loaded = load_model(path, "cpu", ImportOptions(vocab_path=str(vocab_file), num_heads=2))
    assert loaded.config.scale_embedding and not loaded.config.norm_first  # the family's defaults
    assert loaded.config.positional == "learned"  # the float32 'pe' table is loaded as saved
    assert_classifier_matches(loaded, ref)


@pytest.mark.parametrize("with_config", [False, True])
def test_our_own_state_dict(tmp_path, with_config):
    """Without a saved config the questions are answered; with one, even what is not asked (pre-norm,
    std_eps LayerNorm, a class token) comes from it."""
    torch.manual_seed(5)
    vocab = Vocab.build([WORDS], specials=["<cls>"])
    cfg = ModelConfig(
        vocab_size=len(vocab),
        d_model=16,
        num_heads=4,
        num_layers=2,
        d_ff=32,
        max_len=64,
        dropout=0.0,
        scale_embedding=True,
        pooling="max",
        pad_id=vocab.pad_id,
        head_hidden=(8,),
    )
    if with_config:
        cfg = cfg.replace(norm_first=True, norm_style="std_eps", pooling="cls", add_cls_token=True, final_norm=True)
    ours = SequenceClassifier(cfg).eval()
    extra = {"config": cfg.to_dict(), "itos": vocab.itos} if with_config else None
    path, vocab_file = saved(tmp_path, ours, vocab, extra=extra)
    options = ImportOptions() if with_config else ImportOptions(vocab_path=str(vocab_file), num_heads=4, pooling="max")
    loaded = load_model(path, "cpu", options)
    assert loaded.format == "attention-lab" and loaded.config.head_hidden == (8,)
    assert loaded.config == cfg or not with_config

    def reference(ids):
        out = ours(ids, need_weights=True)
        return out.logits, [w.weights for w in out.encoder.attention]

    result = assert_classifier_matches(loaded, reference)
    assert (result.tokens[0][0] == "<cls>") == with_config


def assert_seq2seq_matches(loaded, ref, target_vocab):
    result = analyze(loaded, TEXTS, targets=TARGETS)
    with torch.no_grad():
        for i in range(len(TEXTS)):
            n, m = int(result.lengths[i]), len(result.decoder_tokens[i])
            src = torch.tensor(result.ids[i : i + 1, :n])
            tgt = torch.tensor([[target_vocab.token_to_id(t) for t in result.decoder_tokens[i]]])
            logits, records = ref(src, tgt)
            pairs = [
                (result.attention_for(i), records["encoder"]),
                (result.decoder_self_attention[i, :, :, :m, :m], records["decoder_self"]),
                (result.cross_attention[i, :, :, :m, :n], records["cross"]),
            ]
            for ours, theirs in pairs:
                expected = torch.stack([r[0] for r in theirs]).numpy()
                assert ours.shape == expected.shape and np.abs(ours - expected).max() <= TOL
            our_logits = loaded.model(src, tgt).logits
            assert torch.allclose(our_logits, logits, atol=TOL, rtol=0)


def seq2seq_files(tmp_path, ref, vocab, target_vocab):
    path, vocab_file = saved(tmp_path, ref, vocab)
    return path, ImportOptions(
        vocab_path=str(vocab_file), num_heads=4, target_vocab_path=str(target_vocab.save(tmp_path / "target.txt"))
    )


def reset_records(ref):
    def run(src, tgt):
        for v in ref.records.values():
            v.clear()
        return ref(src, tgt)

    return run


def test_vanilla_encoder_decoder_with_saved_pe(tmp_path, vocab, target_vocab):
    torch.manual_seed(6)
    ref = VanillaTransformer(len(vocab), len(target_vocab), pad=vocab.pad_id).eval()
    path, options = seq2seq_files(tmp_path, ref, vocab, target_vocab)
    loaded = load_model(path, "cpu", options)
    cfg = loaded.config
    assert loaded.format == "vanilla-encoder-decoder" and cfg.kind == "encoder-decoder"
    assert (cfg.max_len, cfg.num_decoder_layers, cfg.target_vocab_size) == (5000, 2, len(target_vocab))
    assert cfg.bos_id == target_vocab.token_to_id("<bos>")
    assert_seq2seq_matches(loaded, reset_records(ref), target_vocab)


def test_w_concat_gamma_beta_encoder_decoder(tmp_path, vocab, target_vocab):
    torch.manual_seed(7)
    ref = ConcatTransformer(len(vocab), len(target_vocab), pad=vocab.pad_id).eval()
    path, options = seq2seq_files(tmp_path, ref, vocab, target_vocab)
    loaded = load_model(path, "cpu", options)
    cfg = loaded.config
    assert (loaded.format, cfg.norm_style, cfg.layer_norm_eps, cfg.mask_fill) == (
        "wq-wconcat",
        "std_eps",
        1e-12,
        -10000.0,
    )
    assert_seq2seq_matches(loaded, reset_records(ref), target_vocab)


def test_pytorch_nn_transformer_sequence_first(tmp_path, vocab, target_vocab):
    torch.manual_seed(8)
    ref = Seq2SeqTransformer(len(vocab), len(target_vocab), pad=vocab.pad_id).eval()
    path, options = seq2seq_files(tmp_path, ref, vocab, target_vocab)
    loaded = load_model(path, "cpu", options)
    assert loaded.config.final_norm and loaded.config.scale_embedding
    assert_seq2seq_matches(loaded, ref, target_vocab)


def test_what_is_inferred_and_what_is_asked(tmp_path, vocab):
    ref = CourseClassifier(len(vocab), embedding_dim=32, feed_forward_dim=64, num_layers=2)
    path, _ = saved(tmp_path, ref, vocab, extra={"num_heads": 4, "itos": vocab.itos})
    detection = inspect_checkpoint(path)
    rows = dict(summary(detection))
    assert rows["Vocabulary size"] == str(len(vocab)) and rows["d_model"] == "32"
    assert rows["Encoder layers"] == "2" and rows["Feed-forward size"] == "64"
    assert rows["Maximum length"].startswith("not stored")
    assert rows["Head"].startswith("MLP") and "32 → 16 → 1" in rows["Head"]
    assert asked(detection) == [
        "num_heads",
        "pooling",
        "label_names",
        "scale_embedding",
        "pad_id",
        "mask_fill",
        "positional",
        "pe_base",
        "max_len",
    ]
    assert defaults(detection)["num_heads"] == 4  # saved beside the weights
    assert defaults(detection)["mask_fill"] == -1e10
