"""The Checkpoints page opens Hugging Face model folders (AppTest): a zip of the folder or its files
selected together go through the isolated reader, the page shows what was read from which file and
the largest difference against ``transformers``, and the model is used on the other pages with the
reference's numbers. Bad folders and an offline Hub name get one message each, in English and Korean."""

from __future__ import annotations

import io
import os
import pickle
import shutil
import zipfile

import numpy as np
import pytest
import torch

from tests.app_helpers import array, figures, open_app
from tests.hf_models import make_folder

SENTENCE = "the movie was great"


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return make_folder("bert-cls", tmp_path_factory.mktemp("hf") / "tiny-bert")


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    return make_folder("gpt2", tmp_path_factory.mktemp("hf") / "tiny-gpt2")


def zipped(folder, top: str | None = "model", skip: tuple[str, ...] = ()) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(folder.iterdir()):
            if path.name not in skip:
                archive.write(path, f"{top}/{path.name}" if top else path.name)
    return buffer.getvalue()


def checkpoints_page(lang: str = "en"):
    return open_app("checkpoints", **({"lang": lang} if lang != "en" else {}))


def upload_zip(at, name: str, data: bytes):
    at.file_uploader(key="ckpt_file").set_value((name, data, "application/zip"))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def use(at):
    at.button(key="ckpt_use").click().run()
    assert not at.exception, [e.value for e in at.exception]
    at.run()  # the entry script's sidebar picks the new model up
    return at


def shown(elements) -> list[str]:
    return [e.value.replace("\\", "") for e in elements]


def test_a_zipped_bert_shows_what_was_read_and_equals_the_reference(bert):
    folder, _, _ = bert
    at = upload_zip(checkpoints_page(), "tiny-bert.zip", zipped(folder))
    assert not at.error, shown(at.error)
    assert "Hugging Face model: BERT" in [h.value for h in at.subheader]
    files = at.dataframe[0].value
    read = dict(zip(files["File"], files["Read as"]))
    assert read["config.json"].startswith("settings") and read["model.safetensors"] == "weights"
    assert read["tokenizer.json"] == "tokenizer"
    metrics = {m.label: float(m.value) for m in at.metric}
    assert metrics["Largest attention difference"] < 1e-5 and metrics["Largest logits difference"] < 1e-5
    assert any("BertForSequenceClassification" in c for c in shown(at.caption))
    assert any("Equal within 1e-5" in s for s in shown(at.success))


def test_the_imported_classifier_runs_on_the_playground_with_the_references_probabilities(bert):
    folder, reference, tokenizer = bert
    at = use(upload_zip(checkpoints_page(), "tiny-bert.zip", zipped(folder)))
    assert at.sidebar.selectbox(key="model").value == "upload: tiny-bert.zip"
    at.session_state["text"] = SENTENCE
    at.switch_page("pages/playground.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    frame = at.dataframe[0].value
    with torch.no_grad():
        logits = reference(**tokenizer(SENTENCE, return_tensors="pt")).logits
    theirs = torch.softmax(logits, -1)[0].numpy()
    assert frame["prediction"].tolist() == [reference.config.id2label[int(theirs.argmax())]]
    np.testing.assert_allclose(frame["probability"], [theirs.max()], atol=1e-5)
    bars = figures(at)["probability-bars"]["data"][0]
    assert list(bars["y"]) == ["NEG", "NEUTRAL", "POS"]
    np.testing.assert_allclose(array(bars["x"]), theirs, atol=1e-5)  # every class, as the user sees it
    chips = [m.value for m in at.markdown if "background[" in m.value and "known word" not in m.value]
    assert chips[0].startswith(":violet-background[\\[CLS\\]]") and chips[0].endswith(":violet-background[\\[SEP\\]]")
    for page in ("attention", "masks", "classifier", "positional_encoding"):
        at.switch_page(f"pages/{page}.py")
        at.run()
        assert not at.exception, (page, [e.value for e in at.exception])
    at.switch_page("pages/classifier.py")
    at.run()
    assert any("not calibrated" in c.lower() for c in shown(at.caption))
    at.switch_page("pages/positional_encoding.py")
    at.run()
    learned = figures(at)["pe-learned-map"]
    assert "pe-heatmap" in figures(at)  # the sinusoid lab on every model (issue 59), BERT's own map beside
    assert array(learned["data"][0]["z"]).shape == (64, 64)  # BERT's 64 positions


def test_files_selected_together_open_gpt2_whose_attention_is_look_ahead(gpt2):
    folder, _, _ = gpt2
    at = checkpoints_page()
    at.file_uploader(key="ckpt_hf_files").set_value(
        [(p.name, p.read_bytes(), "application/octet-stream") for p in sorted(folder.iterdir())]
    )
    at.run()
    assert not at.exception and not at.error, shown(at.error)
    assert "Hugging Face model: GPT-2" in [h.value for h in at.subheader]
    assert float(next(m.value for m in at.metric if m.label == "Largest attention difference")) < 1e-5
    use(at)
    at.session_state["text"] = SENTENCE
    at.switch_page("pages/attention.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    heatmaps = [f for name, f in figures(at).items() if f["data"] and f["data"][0].get("type") == "heatmap"]
    assert heatmaps
    weights = array(heatmaps[0]["data"][0]["z"]).astype(float)
    assert weights.shape[0] == weights.shape[1] > 2
    # the look-ahead mask is drawn as masked (no weight: NaN, grey), never as zeros that look like attention
    assert np.isnan(weights[np.triu_indices(len(weights), 1)]).all()
    assert np.allclose(np.nansum(weights, axis=1), 1, atol=1e-3) and not np.isnan(np.tril(weights)).any()
    for page in ("playground", "masks", "positional_encoding", "classifier"):
        at.switch_page(f"pages/{page}.py")
        at.run()
        assert not at.exception, (page, [e.value for e in at.exception])


@pytest.fixture
def broken(bert, tmp_path):
    copy = tmp_path / "model"
    shutil.copytree(bert[0], copy)
    return copy


class RunsCode:
    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_bad_folders_get_one_translated_message_each(broken, tmp_path, lang):
    expected = {
        "en": ("has no weights", "model_type 'mamba'", "Refused pytorch_model.bin", "Nothing in it ran"),
        "ko": (
            "가중치가 없습니다",
            "model_type이 'mamba'",
            "pytorch_model.bin을 거부했습니다",  # the particle is resolved for the file name
            "실행되지 않았습니다",
        ),
    }[lang]
    at = checkpoints_page(lang)
    upload_zip(at, "no-weights.zip", zipped(broken, skip=("model.safetensors",)))
    assert len(at.error) == 1 and expected[0] in shown(at.error)[0]
    config = (broken / "config.json").read_text().replace('"bert"', '"mamba"')
    (broken / "config.json").write_text(config)
    upload_zip(at, "mamba.zip", zipped(broken))
    assert len(at.error) == 1 and expected[1] in shown(at.error)[0] and "BERT (bert)" in shown(at.error)[0]
    (broken / "config.json").write_text(config.replace('"mamba"', '"bert"'))
    marker, payload = tmp_path / "ran", RunsCode()
    payload.marker = marker
    (broken / "model.safetensors").unlink()
    (broken / "pytorch_model.bin").write_bytes(pickle.dumps({"bert.embeddings.word_embeddings.weight": payload}))
    upload_zip(at, "pickle.zip", zipped(broken))
    assert len(at.error) == 1 and expected[2] in shown(at.error)[0] and expected[3] in shown(at.error)[0]
    assert not marker.exists()
    assert at.session_state["uploaded_models"] == {}


def test_a_zip_with_a_path_outside_the_folder_is_refused(bert):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(bert[0].iterdir()):
            archive.write(path, path.name)
        archive.writestr("../../evil.json", "{}")
    at = upload_zip(checkpoints_page(), "evil.zip", buffer.getvalue())
    assert len(at.error) == 1 and "a path outside the folder" in shown(at.error)[0]


def test_a_hub_name_offline_says_how_to_import_a_folder_in_korean(tmp_path, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    at = checkpoints_page("ko")
    assert any("1,024 MB" in c for c in shown(at.caption))  # the size limit is stated beside the field
    at.text_input(key="ckpt_hub_name").input("someone/not-cached")
    at.button(key="ckpt_hub_open").click().run()
    assert not at.exception
    assert len(at.error) == 1
    message = shown(at.error)[0]
    assert "인터넷에 연결되어 있지 않고" in message and "someone/not-cached" in message


def test_special_tokens_and_word_starts_are_shown_readably():
    from ui.markdown import token_chips

    chips = token_chips(["<s>", "▁movie", "Ġgreat", "##ing", "</s>", "<|endoftext|>", "[MASK]"], [False] * 7)
    assert chips.split(" ") == [
        ":violet-background[\\<s\\>]",
        ":blue-background[␣movie]",
        ":blue-background[␣great]",
        ":blue-background[\\#\\#ing]",
        ":violet-background[\\<\\/s\\>]",
        ":violet-background[\\<\\|endoftext\\|\\>]",
        ":violet-background[\\[MASK\\]]",
    ]


def test_read_upload_gives_a_zipped_folder_as_a_ready_model(bert):
    """The CLI's and tests' reader: a zipped Hugging Face folder comes back loaded, as a zipped bundle does."""
    from transformer.checkpoints import read_upload

    folder = bert[0]
    loaded = read_upload("tiny-bert.zip", zipped(folder))
    assert loaded.config.num_layers == 2 and loaded.text_encoder().encode("hello world")
