"""The Checkpoints page in AppTest: upload, see what was recognised, use it on other pages; bad files
give a message; another browser session never sees the upload."""

import io

import pytest
import torch
from streamlit.testing.v1 import AppTest

from tests.app_helpers import open_app
from tests.checkpoint_references import CourseClassifier
from transformer.core.tokenizer import Vocab

WORDS = "the movie was great bad not good plot acting film boring loved it a and".split()
UPLOAD_KEY = "upload: course.pt"


@pytest.fixture(scope="module")
def files() -> tuple[bytes, bytes]:
    """A course-notebook checkpoint (2 heads) and its vocab.txt, as bytes."""
    vocab = Vocab.build([WORDS])
    torch.manual_seed(0)
    model = CourseClassifier(len(vocab), embedding_dim=16, feed_forward_dim=32, num_heads=2).eval()
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    return buffer.getvalue(), "".join(t + "\n" for t in vocab.itos).encode()


def open_page() -> AppTest:
    return open_app("checkpoints")


def upload(at: AppTest, files) -> AppTest:
    checkpoint, vocab = files
    at.file_uploader(key="ckpt_file").set_value(("course.pt", checkpoint, "application/octet-stream"))
    at.file_uploader(key="ckpt_vocab").set_value(("vocab.txt", vocab, "text/plain"))
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    return at


def shown(element) -> str:
    """A message's text as the user reads it (the page escapes markdown in text from files)."""
    return element.value.replace("\\", "")


def widget(at: AppTest, kind: str, label: str):
    return next(w for w in getattr(at, kind) if w.label.startswith(label))


def test_upload_shows_what_was_recognised_and_asks(files):
    at = upload(open_page(), files)
    table = at.dataframe[0].value
    rows = dict(zip(table.iloc[:, 0], table.iloc[:, 1]))
    assert rows["Architecture"].startswith("Course notebook encoder")
    assert (rows["Vocabulary size"], rows["d_model"], rows["Encoder layers"]) == ("17", "16", "2")
    assert rows["Head"].startswith("MLP") and "16 → 16 → 1" in rows["Head"]
    assert widget(at, "selectbox", "Number of attention heads").options == ["1", "2", "4", "8", "16"]
    assert widget(at, "selectbox", "Score of blocked cells").value == -1e10
    assert "why" not in widget(at, "toggle", "Embeddings").help  # the help is the sentence, not a placeholder
    assert "√d_model" in widget(at, "toggle", "Embeddings").help


def use_it(at: AppTest) -> AppTest:
    widget(at, "selectbox", "Number of attention heads").select(2)
    at.run()
    at.button(key="ckpt_use").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    return at


def whole_app(at: AppTest) -> AppTest:
    """Run again: the entry script (navigation, the shared sidebar) runs first, then the page."""
    at.run()
    assert not at.exception
    return at


def test_use_it_everywhere_and_only_in_this_session(files):
    at = use_it(upload(open_page(), files))
    assert at.success and UPLOAD_KEY in shown(at.success[0])
    model = whole_app(at).sidebar.selectbox(key="model")
    assert model.value == UPLOAD_KEY and UPLOAD_KEY in model.options
    assert at.session_state["selection"].model_key == UPLOAD_KEY
    for page in ("pages/checkpoints.py", "pages/positional_encoding.py", "pages/classifier.py"):
        at.switch_page(page)
        at.run()
        assert not at.exception, (page, at.exception)
    at.switch_page("pages/checkpoints.py")
    at.run()
    assert at.metric[0].label == "Prediction" and at.metric[0].value in ("negative", "positive")
    other = open_app("playground", model=UPLOAD_KEY)  # the Start page has no model picker
    assert UPLOAD_KEY not in other.sidebar.selectbox(key="model").options
    assert other.sidebar.selectbox(key="model").value != UPLOAD_KEY


def test_remove_frees_the_upload(files):
    at = use_it(upload(open_page(), files))
    at.button(key=f"ckpt_remove_{UPLOAD_KEY}").click().run()
    assert not at.exception
    assert at.session_state["uploaded_models"] == {}
    assert UPLOAD_KEY not in whole_app(at).sidebar.selectbox(key="model").options


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("broken.pt", b"not a checkpoint at all", "not a PyTorch checkpoint"),
        ("empty.safetensors", b"", "is empty"),
        ("weird.zip", b"PK\x03\x04 garbage", "zip"),
    ],
)
def test_a_bad_file_gives_a_message_and_the_app_keeps_working(name, content, message):
    at = open_page()
    at.file_uploader(key="ckpt_file").set_value((name, content, "application/octet-stream"))
    at.run()
    assert not at.exception
    assert at.error and message in shown(at.error[0])
    assert whole_app(at).sidebar.selectbox(key="model").value == "imdb-sentiment"


def test_a_vocabulary_that_does_not_fit_is_explained(files):
    at = upload(open_page(), files)
    too_big = "".join(f"{t}\n" for t in ["<unk>", "<pad>"] + [f"word{i}" for i in range(30)]).encode()
    at.file_uploader(key="ckpt_vocab").set_value(("vocab.txt", too_big, "text/plain"))
    at.run()
    at.button(key="ckpt_use").click().run()
    assert not at.exception
    assert at.error and "upload the vocabulary this model was trained with" in shown(at.error[0])


def test_without_a_vocabulary_the_page_asks_for_one(files):
    at = open_page()
    at.file_uploader(key="ckpt_file").set_value(("course.pt", files[0], "application/octet-stream"))
    at.run()
    assert not at.exception and at.warning
    assert "Upload the vocabulary" in at.warning[0].value
    assert not any(b.key == "ckpt_use" for b in at.button)


def test_a_zipped_bundle_is_used_as_it_is(tiny_bundle, tmp_path):
    import zipfile

    archive = tmp_path / "tiny.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for file in tiny_bundle.iterdir():
            z.write(file, f"tiny/{file.name}")
    at = open_page()
    at.file_uploader(key="ckpt_file").set_value(("tiny.zip", archive.read_bytes(), "application/zip"))
    at.run()
    assert not at.exception and "bundled model" in at.info[0].value
    at.button(key="ckpt_use").click().run()
    assert "upload: tiny.zip" in at.session_state["uploaded_models"]
    assert whole_app(at).sidebar.selectbox(key="model").value == "upload: tiny.zip"


def course_bytes(extra: dict | None = None, nan: bool = False, rows: int | None = None) -> bytes:
    """A course-notebook checkpoint as bytes: with values saved beside it, a NaN weight, or ``rows`` embedding rows."""
    vocab = Vocab.build([WORDS])
    torch.manual_seed(0)
    state = CourseClassifier(
        rows if rows is not None else len(vocab), embedding_dim=16, feed_forward_dim=32
    ).state_dict()
    if nan:
        state["encoder.encoder_layers.0.multi_head_attention.Wq.weight"][0, 0] = float("nan")
    buffer = io.BytesIO()
    torch.save(state if extra is None else {"model": state, **extra}, buffer)
    return buffer.getvalue()


def test_a_nan_checkpoint_names_the_tensor_and_the_page_keeps_working(files):
    at = upload(open_page(), (course_bytes(nan=True), files[1]))
    use_it(at)
    assert len(at.success) == 1  # one message after the import, not two
    warnings = " ".join(shown(w) for w in at.warning)
    assert "encoder.encoder_layers.0.multi_head_attention.Wq.weight" in warnings and "NaN" in warnings
    whole_app(at)
    assert not at.exception and not at.metric  # no prediction from NaN probabilities
    assert any("not finite" in shown(w) for w in at.warning)
    for page in ("pages/playground.py", "pages/attention.py", "pages/classifier.py", "pages/masks.py"):
        at.switch_page(page).run()
        assert not at.exception, (page, [e.value for e in at.exception])


def test_a_saved_max_len_of_5000_is_offered(files):
    at = upload(open_page(), (course_bytes({"max_len": 5000}), files[1]))
    assert widget(at, "number_input", "Maximum length").value == 5000
    use_it(at)
    assert at.session_state["uploaded_models"][UPLOAD_KEY].config.max_len == 5000


def test_an_embedding_without_rows_gives_a_message():
    at = open_page()
    at.file_uploader(key="ckpt_file").set_value(("empty.pt", course_bytes(rows=0), "application/octet-stream"))
    at.run()
    assert not at.exception and at.error and "0 rows" in shown(at.error[0])
    assert not any(b.key == "ckpt_use" for b in at.button)


def test_the_positional_and_scaling_questions_and_the_assumptions(files):
    at = upload(open_page(), files)
    assert widget(at, "selectbox", "Positional encoding").value == "sinusoidal"
    assert widget(at, "toggle", "Embeddings").value is False
    widget(at, "selectbox", "Positional encoding").select("none")
    at.run()
    use_it(at)
    loaded = at.session_state["uploaded_models"][UPLOAD_KEY]
    assert loaded.config.positional == "none"
    table = next(d.value for d in at.dataframe if list(d.value.columns) == ["Setting", "Value used", "From"])
    rows = dict(zip(table.iloc[:, 0], zip(table.iloc[:, 1], table.iloc[:, 2])))
    assert rows["Positional encoding"] == ("none", "your answer")
    assert rows["Number of attention heads"] == ("2", "your answer")
    assert rows["Score of blocked cells"] == ("-1e+10", "the family's default")
