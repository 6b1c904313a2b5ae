"""The Translate page on an imported tiny Marian translator (random weights, SentencePiece models
trained here) put in the session's upload registry as a Checkpoints import would: its tokens, its
greedy output equal to ``transformers``' ``generate()``, its cross-attention per head, decoding step
by step and forcing a piece; the gold-alignment parts are replaced by a note."""

from __future__ import annotations

import html
import json
import random

import numpy as np
import pytest
import torch
from safetensors.torch import load_file
from streamlit.testing.v1 import AppTest

from tests.app_helpers import array, figures, open_app, texts
from tests.hf_models import tiny_marian_config
from tests.test_hf_spm import _lines, _train
from transformer.hf.marian import import_marian
from transformer.hf.spm import MarianTokenizer, readable
from ui.session import upload_key

transformers = pytest.importorskip("transformers")
pytest.importorskip("sentencepiece")

KEY = upload_key("tiny-opus-mt")
TEXT = "the movie was great"
TOLERANCE = 1e-5


def write_tokenizer(folder) -> MarianTokenizer:
    """source.spm, target.spm and Marian's vocab.json (</s> 0, <unk> 1, the pieces, <pad> last)."""
    import sentencepiece

    rng = random.Random(0)
    _train(folder, "source", _lines(rng, 300), 120)
    _train(folder, "target", _lines(rng, 300), 100)
    pieces = []
    for name in ("source", "target"):
        processor = sentencepiece.SentencePieceProcessor(model_file=str(folder / f"{name}.spm"))
        listed = [processor.IdToPiece(i) for i in range(processor.GetPieceSize())]
        pieces += [p for p in listed if p not in ("<unk>", "<s>", "</s>", *pieces)]
    vocab = {"</s>": 0, "<unk>": 1} | {p: i + 2 for i, p in enumerate(pieces)}
    vocab["<pad>"] = len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    return MarianTokenizer.from_folder(folder)


@pytest.fixture(scope="module")
def marian(tmp_path_factory):
    """(our imported model, transformers' MarianMTModel read back eager, the tokenizer)."""
    torch.set_num_threads(1)
    folder = tmp_path_factory.mktemp("marian_page")
    tokenizer = write_tokenizer(folder)
    pad = tokenizer.vocab.pad_id
    config = tiny_marian_config(len(tokenizer.vocab), pad, tie_word_embeddings=False)
    torch.manual_seed(0)
    model = transformers.MarianMTModel(config)
    with torch.no_grad():  # random everywhere (LayerNorms near 1), so that greedy output varies
        for name, p in model.named_parameters():
            p.copy_((1.0 if "layer_norm.weight" in name else 0.0) + 0.3 * torch.randn_like(p))
    model.save_pretrained(folder)
    reference = transformers.MarianMTModel.from_pretrained(folder, attn_implementation="eager").eval()
    ours = import_marian(
        reference.config.to_dict(), load_file(str(folder / "model.safetensors")), tokenizer, "tiny-opus-mt"
    )
    return ours, reference, tokenizer


def open_translate(uploads: dict, chosen: str | None = None, **query: str) -> AppTest:
    """The app on the translate page with ``uploads`` in this session's registry."""
    return open_app("translate", uploads=uploads, chosen=chosen, **query)


def generated(reference, tokenizer, text: str) -> list[int]:
    ids = tokenizer.encode(text).ids
    with torch.no_grad():
        out = reference.generate(
            torch.tensor([ids]), num_beams=1, do_sample=False, max_new_tokens=min(63, 2 * len(ids) + 10)
        )
    return out[0].tolist()


def test_imported_marian_is_offered_and_translates_as_generate_does(marian):
    ours, reference, tokenizer = marian
    at = open_translate({KEY: ours})
    assert at.radio(key="tr_model").options[-1] == KEY
    at.radio(key="tr_model").set_value(KEY).run()
    at.text_input(key="tr_imported_text").set_value(TEXT).run()
    assert not at.exception and not at.error
    expected = generated(reference, tokenizer, TEXT)
    assert len(expected) > 2
    pieces = [readable(tokenizer.target_vocab.id_to_token(i)) for i in expected[1:]]
    shown = [m for m in texts(at.markdown) if m.startswith("### ")]
    assert shown and shown[0].replace("\\", "") == "### " + tokenizer.decode(expected)
    # the model's own tokens: SentencePiece pieces with ␣ for a word start
    source = [readable(p) for p in tokenizer.encode(TEXT).pieces]
    cross = figures(at)["translate-cross"]
    assert [html.unescape(label.split(":", 1)[1]) for label in cross["data"][0]["x"]] == source
    assert [html.unescape(label.split(":", 1)[1]) for label in cross["data"][0]["y"]] == pieces
    with torch.no_grad():
        theirs = reference(
            input_ids=torch.tensor([tokenizer.encode(TEXT).ids]),
            decoder_input_ids=torch.tensor([expected[:-1]]),
            output_attentions=True,
        ).cross_attentions
    layer, head = at.selectbox(key="tr_layer").value - 1, at.selectbox(key="tr_head").value - 1
    assert np.abs(array(cross["data"][0]["z"]) - theirs[layer][0, head].numpy()).max() < TOLERANCE
    # no gold alignment for an imported model: a note instead of the scores
    assert "translate-head-scores" not in figures(at) and len(cross["data"]) == 1
    assert any("only for the two bundled tasks" in m for m in texts(at.info))


def test_step_by_step_and_forcing_a_piece(marian):
    ours, reference, tokenizer = marian
    at = open_translate({KEY: ours}, chosen=KEY)  # the sidebar's choice is followed
    assert at.radio(key="tr_model").value == KEY
    at.text_input(key="tr_imported_text").set_value(TEXT).run()
    expected = generated(reference, tokenizer, TEXT)
    topk = figures(at)["translate-topk"]["data"][0]
    step = at.session_state["tr_step"] - 1
    with torch.no_grad():
        logits = reference(
            input_ids=torch.tensor([tokenizer.encode(TEXT).ids]), decoder_input_ids=torch.tensor([expected[:-1]])
        ).logits[0, step]
    probs = torch.softmax(logits, -1)
    assert np.abs(array(topk["x"]) - probs.topk(len(topk["y"])).values.numpy()).max() < TOLERANCE
    # force another piece at the first step: the output then starts with it
    forced = next(i for i in probs.argsort(descending=True).tolist() if i not in (expected[1], 0, 1))
    at.toggle(key="tr_force").set_value(True).run()
    at.selectbox(key="tr_force_token").set_value(tokenizer.target_vocab.id_to_token(forced)).run()
    assert_forced(at, tokenizer, expected, forced)


def assert_forced(at: AppTest, tokenizer, expected: list[int], forced: int) -> None:
    assert not at.exception, [e.value for e in at.exception]
    output = next(m for m in texts(at.markdown) if m.startswith("Output with these settings"))
    assert output.replace("\\", "").startswith("Output with these settings: **" + tokenizer.decode([forced]))
    compare = next(c for c in texts(at.caption) if c.startswith("Without forced tokens"))
    assert compare.replace("\\", "") == "Without forced tokens or switched-off heads: " + tokenizer.decode(expected)


def test_a_large_vocabulary_is_forced_by_typing_a_piece(marian, monkeypatch):
    from ui import translation_models

    monkeypatch.setattr(translation_models, "MAX_LISTED_TOKENS", 10)
    ours, reference, tokenizer = marian
    at = open_translate({KEY: ours}, chosen=KEY)
    at.text_input(key="tr_imported_text").set_value(TEXT).run()
    expected = generated(reference, tokenizer, TEXT)
    at.toggle(key="tr_force").set_value(True).run()
    assert not [w for w in at.selectbox if w.key == "tr_force_token"]  # typed, not listed
    at.text_input(key="tr_force_piece").set_value("no-such-piece").run()
    assert any("is not a piece of this model's target vocabulary" in w for w in texts(at.warning))
    vocab = tokenizer.target_vocab
    piece = next(p for p in vocab.itos if p.startswith("▁") and len(p) > 2 and vocab.token_to_id(p) != expected[1])
    at.text_input(key="tr_force_piece").set_value(piece[1:]).run()  # a word: tried with ␣ in front
    assert_forced(at, tokenizer, expected, vocab.token_to_id(piece))


def test_bundled_models_keep_their_gold_alignment(marian):
    ours, _, _ = marian
    at = open_translate({KEY: ours})
    assert at.radio(key="tr_model").value == "en-ko-order"
    assert "translate-head-scores" in figures(at)
    assert not any("only for the two bundled tasks" in m for m in texts(at.info))
