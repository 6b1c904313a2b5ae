"""An upload is read once (one isolated child) and comes back as one tagged kind; what was recognised
is codes and values that the page shows in English and Korean."""

from __future__ import annotations

import io
import zipfile

import pytest
import torch

import transformer.checkpoints.isolation as isolation
from tests.app_helpers import open_app
from tests.checkpoint_references import CourseClassifier
from tests.test_page_vision_upload import course_vit_bytes
from transformer.checkpoints import (
    BundleUpload,
    CourseViTUpload,
    TextCheckpoint,
    findings,
    inspect_checkpoint,
    recognise_upload,
    summary,
)
from transformer.checkpoints.families import FAMILIES
from transformer.checkpoints.findings import ENGLISH, ROW_ENGLISH, Finding
from transformer.core.tokenizer import Vocab
from ui.checkpoint_text import FAMILY_KEYS, FINDING_KEYS, ROW_KEYS, finding_text, row_text

WORDS = "the movie was great bad not good plot acting film boring loved it a and".split()


@pytest.fixture
def isolated_reads(monkeypatch) -> list[str]:
    """The names of the functions run in an isolated child, in order, while the test runs."""
    calls: list[str] = []
    real = isolation._run

    def counting(func, *args, **kwargs):
        calls.append(func.__name__)
        return real(func, *args, **kwargs)

    monkeypatch.setattr(isolation, "_run", counting)
    return calls


def course_classifier_bytes(**changes) -> bytes:
    torch.manual_seed(0)
    model = CourseClassifier(len(Vocab.build([WORDS])), embedding_dim=16, feed_forward_dim=32, **changes)
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    return buffer.getvalue()


def test_a_course_vit_upload_is_read_once_and_tagged(isolated_reads):
    found = recognise_upload("course_vit.pt", course_vit_bytes())
    assert isinstance(found, CourseViTUpload) and found.kind == "course-vit"
    assert tuple(found.state["patch_embedding.weight"].shape) == (16, 48)  # d_model 16, 3 × 4 × 4 pixels
    assert isolated_reads == ["read_in_child"]


def test_a_text_checkpoint_and_a_bundle_are_each_read_once(isolated_reads, tiny_bundle, tmp_path):
    text = recognise_upload("course.pt", course_classifier_bytes())
    assert isinstance(text, TextCheckpoint) and text.detection.d_model == 16
    archive = tmp_path / "tiny.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for file in tiny_bundle.iterdir():
            z.write(file, f"tiny/{file.name}")
    bundle = recognise_upload("tiny.zip", archive.read_bytes())
    assert isinstance(bundle, BundleUpload) and bundle.loaded.config.d_model == 16
    assert isolated_reads == ["read_in_child", "read_in_child"]


def test_the_checkpoints_page_reads_a_course_vit_upload_once(isolated_reads):
    at = open_app("checkpoints")
    at.file_uploader(key="ckpt_file").set_value(("course_vit.pt", course_vit_bytes(), "application/octet-stream"))
    at.run()
    assert not at.exception and any("Vision Transformer" in s.value for s in at.success)
    at.run()  # a rerun reads nothing again
    assert len(isolated_reads) == 1


def test_every_finding_code_has_a_catalogue_entry_and_every_family_a_title():
    assert set(FINDING_KEYS) == set(ENGLISH) - {"family"}
    assert set(ROW_KEYS) == set(ROW_ENGLISH)
    assert set(FAMILY_KEYS) == {family.name for family in FAMILIES}


def test_findings_read_in_english_as_the_summary_and_in_korean(tmp_path):
    path = tmp_path / "course.pt"
    path.write_bytes(course_classifier_bytes())
    detection = inspect_checkpoint(path)
    rows = findings(detection)
    english = [(row_text(row, "en"), finding_text(value, "en")) for row, value in rows]
    assert english == summary(detection)  # the page's English is the command line's
    korean = dict((row_text(row, "ko"), finding_text(value, "ko")) for row, value in rows)
    assert korean["구조"] == "강의 노트북의 인코더 분류기 (Wq/Wk/Wv/Wo, W1/W2)"
    assert korean["최대 길이"] == "저장되지 않음 (아래에서 묻습니다)"
    assert korean["분류 헤드"] == "ReLU로 이은 MLP (Linear 레이어 2개) 16 → 16 → 1 (로짓 하나 → 시그모이드)"
    assert korean["파라미터 수"] == "5,009"
    assert [finding_text(n, "ko") for n in detection.notes] == [
        "위치 인코딩 표가 저장되어 있지 않아 논문의 사인/코사인(밑 10000)을 쓴다고 가정합니다."
    ]


def test_a_nested_finding_is_translated_inside_its_sentence():
    note = Finding("note_head_unmapped", {"problem": Finding("head_missing")})
    assert note.english().startswith("The classifier head could not be mapped: no classifier head was found")
    assert finding_text(note, "ko").startswith("분류 헤드를 옮길 수 없었습니다: 분류 헤드가 없습니다")


def test_the_page_shows_what_was_recognised_in_korean():
    at = open_app("checkpoints", lang="ko")
    at.file_uploader(key="ckpt_file").set_value(("course.pt", course_classifier_bytes(), "application/octet-stream"))
    at.run()
    assert not at.exception
    table = at.dataframe[0].value
    rows = dict(zip(table.iloc[:, 0], table.iloc[:, 1]))
    assert rows["종류"] == "인코더 + 분류 헤드" and rows["위치 인코딩"] == "사인/코사인 공식"
    assert rows["레이어 정규화 (LayerNorm)"] == "nn.LayerNorm, eps 1e-05"
    assert any("논문의 사인/코사인" in c.value for c in at.caption)
