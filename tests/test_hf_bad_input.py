"""Bad Hugging Face folders get one message naming the file and what to do; nothing runs, nothing
is built beyond what the checks allow. The Hub path is tested offline against a cache in its layout."""

from __future__ import annotations

import json
import os
import pickle
import shutil

import pytest

from tests.hf_models import make_folder
from transformer.checkpoints.errors import CheckpointError
from transformer.hf import download, load_hf_folder
from transformer.loader import load_model


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    return make_folder("bert-cls", tmp_path_factory.mktemp("hf") / "bert")[0]


@pytest.fixture
def folder(good, tmp_path):
    copy = tmp_path / "model"
    shutil.copytree(good, copy)
    return copy


def edit_config(folder, **changes) -> None:
    config = json.loads((folder / "config.json").read_text())
    config.update(changes)
    (folder / "config.json").write_text(json.dumps(config))


def test_missing_weights_name_the_files_to_add(folder):
    (folder / "model.safetensors").unlink()
    with pytest.raises(CheckpointError, match=r"no weights: expected model\.safetensors or pytorch_model\.bin"):
        load_hf_folder(folder)


def test_missing_tokenizer_names_the_files(folder):
    (folder / "tokenizer.json").unlink()
    with pytest.raises(CheckpointError, match=r"no tokenizer: expected tokenizer\.json, vocab\.txt"):
        load_hf_folder(folder)


def test_unsupported_model_type_names_what_is_supported(folder):
    edit_config(folder, model_type="mamba")
    with pytest.raises(CheckpointError, match=r"model_type 'mamba'.*Supported: BERT \(bert\), RoBERTa"):
        load_hf_folder(folder)


def test_config_that_lies_about_sizes_is_caught_before_reading(folder, monkeypatch):
    edit_config(folder, hidden_size=64, intermediate_size=128)
    monkeypatch.setattr("transformer.hf.importer.read_weights", lambda *a: pytest.fail("weights were read"))
    with pytest.raises(CheckpointError, match=r"model\.safetensors holds .* of shape \(.*32\).*config\.json describes"):
        load_hf_folder(folder)


def test_config_with_more_layers_than_the_weights(folder):
    edit_config(folder, num_hidden_layers=3)
    with pytest.raises(CheckpointError, match=r"lacks bert\.encoder\.layer\.2\..*config\.json"):
        load_hf_folder(folder)


def test_config_beyond_the_apps_caps(folder):
    edit_config(folder, num_hidden_layers=10_000)
    with pytest.raises(CheckpointError, match=r"config\.json describes a model this app cannot build: num_layers"):
        load_hf_folder(folder)


def test_tokenizer_of_another_model(folder, tmp_path):
    other = make_folder("roberta-cls", tmp_path / "other")[0]
    shutil.copy(other / "tokenizer.json", folder / "tokenizer.json")  # 300 tokens, embedding has fewer rows
    with pytest.raises(CheckpointError, match=r"tokenizer\.json has 300 tokens but the token embedding .* rows"):
        load_hf_folder(folder)


def test_missing_shard_is_named(folder):
    index = {"metadata": {}, "weight_map": {"a.weight": "model-00001-of-00002.safetensors"}}
    index["weight_map"]["b.weight"] = "model-00002-of-00002.safetensors"
    (folder / "model.safetensors").rename(folder / "model-00001-of-00002.safetensors")
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(CheckpointError, match=r"model-00002-of-00002\.safetensors is missing"):
        load_hf_folder(folder)


def test_oversized_file_is_refused_by_its_size(folder):
    big = folder / "model.safetensors"
    big.unlink()
    with open(big, "wb") as f:  # sparse: 2 GB on paper, nothing written
        f.truncate(2 * 1024**3)
    with pytest.raises(CheckpointError, match=r"model\.safetensors is 2,048 MB; this app opens models up to"):
        load_hf_folder(folder)


class RunsCode:
    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_pickle_that_would_run_code_is_refused_and_does_not_run(folder, tmp_path):
    marker = tmp_path / "ran"
    payload = RunsCode()
    payload.marker = marker
    (folder / "model.safetensors").unlink()
    with open(folder / "pytorch_model.bin", "wb") as f:
        pickle.dump({"bert.embeddings.word_embeddings.weight": payload}, f)
    with pytest.raises(CheckpointError, match=r"Refused pytorch_model\.bin: .*nothing in it ran"):
        load_hf_folder(folder)
    assert not marker.exists()


def test_not_json_config(folder):
    (folder / "config.json").write_text("{not json")
    with pytest.raises(CheckpointError, match=r"config\.json is not valid JSON"):
        load_hf_folder(folder)


def test_cli_loader_opens_a_hugging_face_folder(folder):
    loaded = load_model(folder)
    assert loaded.format == "hugging-face" and loaded.config.label_names == ("NEG", "NEUTRAL", "POS")


def hub_cache(root, name: str, source) -> None:
    """A Hugging Face cache holding ``name`` in the hub's layout: models--org--name/snapshots/<rev>/, refs/main."""
    revision = "0123456789abcdef0123456789abcdef01234567"
    repo = root / ("models--" + name.replace("/", "--"))
    shutil.copytree(source, repo / "snapshots" / revision)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(revision)


def offline(monkeypatch) -> None:
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)


def test_hub_name_opens_the_cached_folder_offline(good, tmp_path, monkeypatch):
    offline(monkeypatch)
    hub_cache(tmp_path, "someone/tiny-bert", good)
    folder = download("someone/tiny-bert", cache_dir=tmp_path)
    assert (folder / "config.json").is_file()
    assert load_hf_folder(folder).config.num_layers == 2


def test_hub_offline_without_the_model_says_how_to_import_a_folder(tmp_path, monkeypatch):
    offline(monkeypatch)
    with pytest.raises(CheckpointError, match=r"No internet connection .* --checkpoint path/to/folder"):
        download("someone/not-cached", cache_dir=tmp_path)


def test_cli_inspect_opens_a_folder_and_the_hub_name_offline(good, tmp_path, monkeypatch, capsys):
    from transformer.cli.main import main

    assert main(["inspect", "--checkpoint", str(good), "--text", "the movie was great"]) == 0
    record = json.loads(capsys.readouterr().out)["inputs"][0]
    assert record["tokens"][0] == "[CLS]" and record["prediction"]["label"] in ("NEG", "NEUTRAL", "POS")
    assert len(record["attention"]["encoder"]) == 2 and len(record["attention"]["encoder"][0]) == 4
    offline(monkeypatch)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path))
    assert main(["inspect", "--hub", "someone/not-cached", "--text", "hi"]) == 2
    assert "No internet connection" in capsys.readouterr().err
