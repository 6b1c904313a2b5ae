"""The Hugging Face path on published files: the shipped all-MiniLM-L6-v2 folder (byte-identical weights, equal
to transformers eager), tokenizer.json batch settings ignored for one text, padding known from the tokenizer, a
GPT-2 text read exactly as its tokenizer gives it, and ``inspect --image`` on a Hugging Face ViT folder."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.hf_models import make_folder
from transformer.analysis.analyze import analyze
from transformer.cli.main import main
from transformer.hf import load_hf_folder

SHIPPED = Path(__file__).resolve().parent.parent / "assets" / "models" / "all-minilm-l6-v2"
UPSTREAM_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
TEXTS = [
    "The movie was not bad at all, and the acting was great.",
    "영화 정말 재미있었어요. 배우들 연기가 최고!",
    "Not bad... 배우 연기 좋아요 café naïve 2021",
    "😀🎉🔥 wow 👍",
]


def run_cli(capsys, *args):
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_shipped_weights_are_the_upstream_file_with_its_licence():
    digest = hashlib.sha256((SHIPPED / "model.safetensors").read_bytes()).hexdigest()
    assert digest == UPSTREAM_SHA256
    assert "Apache License" in (SHIPPED / "LICENSE").read_text(encoding="utf-8")
    origin = json.loads((SHIPPED / "metrics.json").read_text(encoding="utf-8"))["origin"]
    assert origin["upstream"] == "sentence-transformers/all-MiniLM-L6-v2" and origin["licence"] == "Apache-2.0"


@pytest.fixture(scope="module")
def minilm():
    """(our import, transformers' BertModel with eager attention, its tokenizer)."""
    transformers = pytest.importorskip("transformers")
    torch.set_num_threads(1)
    reference = transformers.BertModel.from_pretrained(SHIPPED, attn_implementation="eager").eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(SHIPPED)
    return load_hf_folder(SHIPPED), reference, tokenizer


def test_minilm_tokens_and_attention_equal_transformers(minilm):
    loaded, reference, tokenizer = minilm
    result = analyze(loaded, TEXTS)
    batch = tokenizer(TEXTS, padding=True, return_tensors="pt")
    with torch.no_grad():
        theirs = reference(**batch, output_attentions=True, output_hidden_states=True)
    for j, text in enumerate(TEXTS):
        ids = tokenizer(text)["input_ids"]
        n = int(result.lengths[j])
        assert list(result.ids[j][:n]) == ids and n == len(ids)  # no [PAD]: the file's padding of 128 is not applied
        assert result.tokens[j] == tokenizer.convert_ids_to_tokens(ids)
        for layer in range(6):
            diff = np.abs(result.attention[j, layer, :, :n, :n] - theirs.attentions[layer][j, :, :n, :n].numpy())
            assert diff.max() < 1e-5
    with torch.no_grad():  # token states of the padded batch, padding known from each input's length
        ours = loaded.model(batch["input_ids"], keep=batch["attention_mask"].bool()).encoder.hidden
    for j, n in enumerate(result.lengths):
        assert np.abs(ours[j, :n].numpy() - theirs.last_hidden_state[j, :n].numpy()).max() < 1e-5


def test_minilm_through_the_cli_gives_the_tokenizers_strings(minilm, capsys):
    _, reference, tokenizer = minilm
    text = TEXTS[2]
    code, out, _ = run_cli(capsys, "inspect", "--checkpoint", str(SHIPPED), "--text", text, "--format", "json")
    assert code == 0
    record = json.loads(out)["inputs"][0]
    ids = tokenizer(text)["input_ids"]
    assert record["ids"] == ids and record["tokens"] == tokenizer.convert_ids_to_tokens(ids)
    with torch.no_grad():
        theirs = reference(torch.tensor([ids]), output_attentions=True).attentions
    ours = np.array(record["attention"]["encoder"])
    assert ours.shape == (6, 12, len(ids), len(ids))
    assert (
        np.abs(ours - np.stack([a[0].numpy() for a in theirs])).max() < 1e-5
    )  # 6 decimals in the JSON, within the parity bound


@pytest.fixture(scope="module")
def bert_folder(tmp_path_factory):
    return make_folder("bert-cls", tmp_path_factory.mktemp("bert") / "bert-cls")


def test_a_tokenizer_json_with_fixed_padding_and_truncation_reads_one_text_at_its_length(bert_folder, tmp_path):
    folder, _, tokenizer = bert_folder
    path = folder / "tokenizer.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["padding"] = {"strategy": {"Fixed": 40}, "direction": "Right", "pad_to_multiple_of": None, "pad_id": 0,
                       "pad_type_id": 0, "pad_token": "[PAD]"}  # fmt: skip
    data["truncation"] = {"direction": "Right", "max_length": 6, "strategy": "LongestFirst", "stride": 0}
    copy = tmp_path / "padded"
    copy.mkdir()
    for item in folder.iterdir():
        (copy / item.name).write_bytes(item.read_bytes())
    (copy / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    encoder = load_hf_folder(copy).text_encoder()
    text = "the movie was great really good and not boring at all"
    assert encoder.encode(text).ids == tokenizer(text)["input_ids"]  # neither 40 ids nor 6
    assert len(tokenizer(text)["input_ids"]) > 6


def test_a_config_pad_id_that_is_a_real_token_masks_nothing(tmp_path):
    """multilingual-e5-small's case: config.json's pad_token_id is a token the tokenizer gives for text."""
    folder, reference, tokenizer = make_folder("bert-cls", tmp_path / "bert", pad_token_id=2)  # 2 is [CLS]
    loaded = load_hf_folder(folder)
    assert loaded.config.pad_id == tokenizer.pad_token_id == 0
    text = "the movie was great"
    ids = tokenizer(text)["input_ids"]
    assert ids[0] == 2
    result = analyze(loaded, [text, "a"], calibration="none")
    with torch.no_grad():
        theirs = reference(torch.tensor([ids]), output_attentions=True)
    n = len(ids)
    for layer in range(2):
        assert np.abs(result.attention[0, layer, :, :n, :n] - theirs.attentions[layer][0].numpy()).max() < 1e-5
    assert np.abs(result.logits[0] - theirs.logits[0].numpy()).max() < 1e-5


def test_a_gpt2_text_starts_where_its_tokenizer_starts(tmp_path, capsys):
    folder, reference, tokenizer = make_folder("gpt2", tmp_path / "gpt2")
    text = "the movie was great"
    code, out, _ = run_cli(capsys, "inspect", "--checkpoint", str(folder), "--text", text, "--format", "json")
    assert code == 0
    record = json.loads(out)["inputs"][0]
    ids = tokenizer(text)["input_ids"]
    assert record["ids"] == ids and record["tokens"] == tokenizer.convert_ids_to_tokens(ids)
    assert "<|endoftext|>" not in record["tokens"]
    with torch.no_grad():
        theirs = reference(torch.tensor([ids]), output_attentions=True)
    ours = np.array(record["attention"]["decoder_self"])
    assert np.abs(ours - np.stack([a[0].numpy() for a in theirs.attentions])).max() < 1e-5
    probs = torch.softmax(theirs.logits[0, -1].double(), -1).numpy()
    assert record["prediction"]["next_tokens"][0]["id"] == int(probs.argmax())


def test_inspect_image_reads_a_hugging_face_vit_folder(tmp_path, capsys):
    transformers = pytest.importorskip("transformers")
    from PIL import Image

    config = transformers.ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=32, num_hidden_layers=2,
                                    num_attention_heads=4, intermediate_size=64, num_labels=3)  # fmt: skip
    torch.manual_seed(0)
    transformers.ViTForImageClassification(config).save_pretrained(tmp_path / "vit")
    picture = tmp_path / "cat.png"
    Image.fromarray((np.random.default_rng(0).random((32, 32, 3)) * 255).astype("uint8")).save(picture)
    code, out, err = run_cli(capsys, "inspect", "--checkpoint", str(tmp_path / "vit"), "--image", str(picture))
    assert code == 0, err
    record = json.loads(out)["inputs"][0]
    assert len(record["tokens"]) == 1 + 16
    assert np.array(record["attention"]["encoder"]).shape == (2, 4, 17, 17)
    assert set(record["prediction"]["probabilities"]) == {"LABEL_0", "LABEL_1", "LABEL_2"}
