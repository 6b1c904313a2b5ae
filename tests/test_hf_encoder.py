"""The BERT-like families share one encoder importer (transformer/hf/encoder.py): each family's table of
names reaches every tensor of its folder, and a masked-LM head whose config unties its decoder
(tie_word_embeddings false) reads its own table and bias and gives transformers' logits."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.hf_models import make_folder
from transformer.hf import load_hf_folder

pytest.importorskip("transformers")
TEXT = "the movie was [MASK] and good"


@pytest.mark.parametrize("arch", ["bert-mlm", "roberta-mlm", "electra-mlm", "distilbert-mlm"])
def test_an_untied_masked_lm_reads_its_own_decoder(tmp_path, arch):
    torch.set_num_threads(1)
    folder, reference, tokenizer = make_folder(arch, tmp_path / arch, tie_word_embeddings=False)
    loaded = load_hf_folder(folder)
    ids = torch.tensor([tokenizer(TEXT.replace("[MASK]", tokenizer.mask_token))["input_ids"]])
    # In float64: these random weights give logits up to ~6, whose float32 rounding differs by up to 1.3e-5 between
    # the two implementations' summation orders on some CPUs (RoBERTa failed at 1e-5 on one machine, passed on
    # another); in float64 the two agree within 1e-6, which is what this test is about.
    reference.double(), loaded.model.double()
    with torch.no_grad():
        expected = reference(ids).logits[0].numpy()
        out = loaded.model(ids, need_weights=True)
        ours = loaded.model.token_logits(out.encoder.hidden)[0].numpy()
    np.testing.assert_allclose(ours, expected, atol=1e-5)
    decoder = loaded.model.mlm_head.decoder.weight
    assert not torch.equal(decoder, loaded.model.encoder.embedding.tokens.weight)  # not tied to the tokens
    unused = [note for note in loaded.notes if "not used" in note]
    # untied, BERT's and RoBERTa's decoder has a bias of its own; the head's shared one is left, and said so
    left = {"bert-mlm": "cls.predictions.bias", "roberta-mlm": "lm_head.bias"}.get(arch)
    assert len(unused) == (left is not None) and all(
        n.startswith("1 tensor(s)") and n.endswith(f": {left}.") for n in unused
    )


@pytest.mark.parametrize("arch", ["bert-cls", "roberta-cls", "electra-cls", "distilbert-cls", "bert-bare"])
def test_every_tensor_of_the_folder_is_mapped(tmp_path, arch):
    folder, _, _ = make_folder(arch, tmp_path / arch)
    loaded = load_hf_folder(folder)
    unused = [note for note in loaded.notes if "not used" in note]
    if arch == "bert-bare":  # its pooler is read by no head of ours, and said so; nothing else is left
        assert len(unused) == 1 and "2 tensor(s)" in unused[0] and "pooler.dense.bias, pooler.dense.weight" in unused[0]
        assert any(n.startswith("BertModel: the encoder was imported without a head") for n in loaded.notes)
    else:
        assert unused == []
