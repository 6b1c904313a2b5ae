"""Imported Hugging Face folders give the reference's numbers: every layer's and head's attention
weights and the logits within 1e-5 of ``transformers`` (eager attention, output_attentions=True),
and the reference tokenizer's tokens and ids on fuzzed English, Korean and mixed text."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch

from tests.hf_models import ARCHITECTURES, fuzzed_texts, make_folder
from transformer.analysis.analyze import analyze
from transformer.analysis.fill_mask import fill_mask
from transformer.hf import load_hf_folder

TOLERANCE = 1e-5
SENTENCES = ["the movie was great, really good!", "영화 정말 재미 있다", "Not bad... 배우 연기 좋아요 😀 2021"]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """One folder per architecture, made once: (folder, reference model, reference tokenizer)."""
    root = tmp_path_factory.mktemp("hf")
    return {arch: make_folder(arch, root / arch) for arch in ARCHITECTURES}


def reference_run(reference, ids: torch.Tensor, mask: torch.Tensor | None = None):
    with torch.no_grad():
        out = reference(ids, attention_mask=mask, output_attentions=True)
    logits = getattr(out, "logits", None)
    return [a.numpy() for a in out.attentions], None if logits is None else logits.numpy()


def our_run(loaded, ids: torch.Tensor):
    with torch.no_grad():
        out = loaded.model(ids, need_weights=True)
        if loaded.head == "language-model":
            return [w.weights.numpy() for w in out.attention], out.logits.numpy()
        weights = [w.weights.numpy() for w in out.encoder.attention]
        if loaded.head == "masked-lm":
            return weights, loaded.model.token_logits(out.encoder.hidden).numpy()
    return weights, None if out.logits is None else out.logits.numpy()


@pytest.mark.parametrize("arch", list(ARCHITECTURES))
def test_attention_and_logits_match_transformers(folders, arch):
    folder, reference, tokenizer = folders[arch]
    loaded = load_hf_folder(folder)
    assert loaded.config.num_layers == 2 and loaded.config.num_heads == 4
    for text in SENTENCES:
        ids = torch.tensor([tokenizer(text)["input_ids"]])
        theirs, their_logits = reference_run(reference, ids)
        ours, our_logits = our_run(loaded, ids)
        assert len(ours) == len(theirs) == 2
        for layer_ours, layer_theirs in zip(ours, theirs):
            assert layer_ours.shape == layer_theirs.shape  # (1, H, T, T): every head
            assert np.abs(layer_ours - layer_theirs).max() < TOLERANCE
        if arch != "bert-bare":
            assert our_logits.shape == their_logits.shape
            assert np.abs(our_logits - their_logits).max() < TOLERANCE


@pytest.mark.parametrize("arch", ["bert-cls", "roberta-cls", "electra-cls", "distilbert-cls", "gpt2"])
def test_tokens_and_ids_match_the_reference_tokenizer(folders, arch):
    folder, _, tokenizer = folders[arch]
    encoder = load_hf_folder(folder).text_encoder()
    for text in fuzzed_texts(60, seed=7) + SENTENCES:
        ids = tokenizer(text)["input_ids"]
        pieces, our_ids = encoder.pieces(text)
        assert our_ids == ids, text
        assert pieces == tokenizer.convert_ids_to_tokens(ids), text
        assert encoder.encode(text).ids == ids


@pytest.mark.parametrize("arch", ["bert-cls", "roberta-mlm", "gpt2"])
def test_tokenizer_built_from_vocabulary_files_matches(folders, arch, tmp_path):
    """Without tokenizer.json: WordPiece from vocab.txt, byte-level BPE from vocab.json + merges.txt."""
    folder, _, tokenizer = folders[arch]
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    write_vocabulary_files(copy)
    (copy / "tokenizer.json").unlink()
    encoder = load_hf_folder(copy).text_encoder()
    assert load_hf_folder(copy).sources["tokenizer"] != "tokenizer.json"
    for text in fuzzed_texts(40, seed=3) + ["a <mask> film", "a [MASK] film"]:
        assert encoder.pieces(text)[1] == tokenizer(text)["input_ids"], text


def write_vocabulary_files(folder) -> None:
    """vocab.txt, or vocab.json + merges.txt, from the model of the folder's tokenizer.json (the
    files older save_pretrained versions and many Hub repositories hold instead of it)."""
    model = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))["model"]
    order = sorted(model["vocab"], key=model["vocab"].get)
    if model["type"] == "WordPiece":
        (folder / "vocab.txt").write_text("".join(t + "\n" for t in order), encoding="utf-8")
        return
    (folder / "vocab.json").write_text(json.dumps(model["vocab"]), encoding="utf-8")
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    (folder / "merges.txt").write_text("#version: 0.2\n" + "".join(m + "\n" for m in merges), encoding="utf-8")


def test_analyze_reads_an_imported_classifier_with_padding(folders):
    """The pages' one analysis call: a padded batch, labels from id2label, weights equal per input."""
    folder, reference, tokenizer = folders["bert-cls"]
    loaded = load_hf_folder(folder)
    result = analyze(loaded, SENTENCES, calibration="none")
    assert result.label_names == ["NEG", "NEUTRAL", "POS"]
    batch = tokenizer(SENTENCES, padding=True, return_tensors="pt")
    theirs, their_logits = reference_run(reference, batch["input_ids"], batch["attention_mask"])
    for j, n in enumerate(result.lengths):
        for layer in range(2):
            diff = np.abs(result.attention[j, layer, :, :n, :n] - theirs[layer][j, :, :n, :n]).max()
            assert diff < TOLERANCE
    assert np.abs(result.logits - their_logits).max() < TOLERANCE
    assert result.tokens[0][0] == "[CLS]" and result.tokens[0][-1] == "[SEP]"


def test_byte_level_pieces_are_shown_readably(folders):
    encoder = load_hf_folder(folders["roberta-cls"][0]).text_encoder()
    encoded = encoder.encode("the movie 영화")
    assert encoded.tokens[0] == "<s>" and encoded.tokens[-1] == "</s>"
    assert any(t.startswith("␣") for t in encoded.tokens)
    assert not any("Ġ" in t for t in encoded.tokens)
    assert encoder.is_special(encoded.ids[0]) and not encoder.is_special(encoded.ids[1])


def test_truncation_keeps_the_special_tokens(folders):
    folder, _, tokenizer = folders["bert-cls"]
    encoded = load_hf_folder(folder).text_encoder().encode("the movie was great " * 10, max_len=6)
    assert encoded.truncated and len(encoded.ids) == 6
    assert encoded.tokens[0] == "[CLS]" and encoded.tokens[-1] == "[SEP]"
    assert encoded.ids == tokenizer("the movie was great " * 10, truncation=True, max_length=6)["input_ids"]


@pytest.mark.parametrize("arch", ["bert-mlm", "roberta-mlm", "distilbert-mlm", "electra-mlm"])
def test_fill_mask_gives_the_references_top_tokens(folders, arch):
    folder, reference, tokenizer = folders[arch]
    loaded = load_hf_folder(folder)
    mask = tokenizer.mask_token
    text = f"the movie was {mask} and {mask} !"
    result = fill_mask(loaded, text, top_k=3)
    ids = torch.tensor([tokenizer(text)["input_ids"]])
    with torch.no_grad():
        logits = reference(ids).logits[0]
    positions = (ids[0] == tokenizer.mask_token_id).nonzero().flatten().tolist()
    assert [b.position for b in result.blanks] == positions
    for blank in result.blanks:
        probs = torch.softmax(logits[blank.position], -1)
        assert [g.id for g in blank.guesses] == probs.topk(3).indices.tolist()
        assert abs(blank.guesses[0].probability - float(probs.max())) < TOLERANCE
    assert result.attention.shape == (2, 4, len(result.tokens), len(result.tokens))


def test_fill_mask_without_a_blank_says_what_to_type(folders):
    loaded = load_hf_folder(folders["bert-mlm"][0])
    with pytest.raises(ValueError, match=r"Type \[MASK\]"):
        fill_mask(loaded, "no blank here")


def test_pytorch_model_bin_and_shards_give_the_same_numbers(tmp_path):
    """pytorch_model.bin (read with weights_only=True in the isolated reader) and a sharded
    safetensors folder import to the same weights as the single file."""
    folder, reference, tokenizer = make_folder("bert-cls", tmp_path / "bin")
    # transformers 5 writes safetensors only: the .bin older versions wrote is torch.save(state_dict)
    torch.save(reference.state_dict(), folder / "pytorch_model.bin")
    (folder / "model.safetensors").unlink()
    assert (folder / "pytorch_model.bin").is_file() and not (folder / "model.safetensors").exists()
    loaded = load_hf_folder(folder)
    ids = torch.tensor([tokenizer(SENTENCES[0])["input_ids"]])
    theirs, their_logits = reference_run(reference, ids)
    ours, our_logits = our_run(loaded, ids)
    assert np.abs(our_logits - their_logits).max() < TOLERANCE
    sharded = tmp_path / "sharded"
    reference.save_pretrained(sharded, max_shard_size="20KB")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(folder / name, sharded / name)
    assert (sharded / "model.safetensors.index.json").is_file()
    ours_sharded, logits_sharded = our_run(load_hf_folder(sharded), ids)
    assert np.abs(logits_sharded - their_logits).max() < TOLERANCE
