"""A course-notebook ViT uploaded on the Checkpoints page runs on the Vision page, for that session only."""

from __future__ import annotations

import io

import numpy as np
import torch
from PIL import Image

from tests.app_helpers import figures, open_app
from tests.test_vision_course import CourseViT


def course_vit_bytes() -> bytes:
    torch.manual_seed(0)
    model = CourseViT(image_size=16, patch_size=4, num_classes=3, d_model=16, num_heads=2, num_layers=2)
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    return buffer.getvalue()


def png(size: int = 20) -> bytes:
    picture = np.zeros((size, size, 3), dtype=np.uint8)
    picture[4:12, 6:14] = (200, 40, 40)
    buffer = io.BytesIO()
    Image.fromarray(picture).save(buffer, "PNG")
    return buffer.getvalue()


def test_course_vit_upload_is_recognised_asked_for_and_runs_on_the_vision_page():
    at = open_app("checkpoints")
    at.file_uploader(key="ckpt_file").set_value(("course_vit.pt", course_vit_bytes(), "application/octet-stream"))
    at.run()
    assert not at.exception and not at.error
    assert any("Vision Transformer" in s.value for s in at.success)
    assert any("16×16 pixels in patches of 4×4, 2 encoder layers" in c.value for c in at.caption)
    assert at.selectbox(key="vu_heads").options == ["1", "2", "4", "8", "16"]
    at.selectbox(key="vu_heads").set_value(2)
    at.text_input(key="vu_labels").set_value("cat, dog")
    at.run()
    assert any("2 class names were given; the head has 3 classes" in e.value for e in at.error)
    at.text_input(key="vu_labels").set_value("red, green, blue").run()
    at.button(key="vu_use").click().run()
    assert any("upload: course_vit.pt" in s.value for s in at.success)

    at.switch_page("pages/vision.py").run()
    assert not at.exception
    assert "upload: course_vit.pt" in at.selectbox(key="vmodel").options
    at.selectbox(key="vmodel").set_value("upload: course_vit.pt").run()
    sources = at.radio(key="vsource").options  # an uploaded model has no test set: its own pictures only
    assert "Upload" in sources and "Test picture" not in sources and "Random" not in sources
    assert any("batch-first" in c.value for c in at.caption)
    at.file_uploader(key="vupload").upload("red.png", png(), "image/png").run()
    assert not at.exception and not at.error
    shown = figures(at)
    assert "vision-overlay" in shown
    probabilities = shown["vision-probabilities"]["data"][0]
    assert list(probabilities["y"] if "y" in probabilities else probabilities["x"])  # three classes drawn


def test_another_session_does_not_see_the_upload():
    at = open_app("vision")
    assert not any(o.startswith("upload: ") for o in at.selectbox(key="vmodel").options)
