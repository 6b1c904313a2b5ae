"""Bad Hugging Face folders on the Checkpoints page: each gets one message, in English or Korean,
translated by the error's code (never by matching its English words), with the file names and numbers
of this folder; the code and its values survive the isolated reader's child process."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from tests.test_page_checkpoints_hf import checkpoints_page, shown, upload_zip, zipped
from transformer.checkpoints.errors import CodedError
from transformer.checkpoints.isolation import run_isolated
from ui.checkpoint_text import HF_ERROR_KEYS, Problem, problem_of, problem_text

pytest.importorskip("transformers")
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    from tests.hf_models import make_folder

    return make_folder("bert-cls", tmp_path_factory.mktemp("hf") / "tiny-bert")


@pytest.fixture
def copy(bert, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(bert[0], folder)
    return folder


def only_error(at) -> str:
    assert not at.exception, [e.value for e in at.exception]
    errors = shown(at.error)
    assert len(errors) == 1, errors
    assert at.session_state["uploaded_models"] == {} and not at.metric  # nothing was opened
    return errors[0]


@pytest.mark.parametrize(
    "lang, expected",
    [
        ("en", ("config.json says model_type 'mamba', which this app cannot open", "Supported: BERT (bert)")),
        ("ko", ("config.json의 model_type이 'mamba'인데", "지원하는 종류: BERT (bert)")),
    ],
)
def test_an_unsupported_model_type_names_what_is_supported(copy, lang, expected):
    config = copy / "config.json"
    config.write_text(config.read_text().replace('"bert"', '"mamba"'))
    message = only_error(upload_zip(checkpoints_page(lang), "mamba.zip", zipped(copy)))
    assert all(part in message for part in expected), message
    assert "GPT-2 (gpt2)" in message and "ViT (vit)" in message


@pytest.mark.parametrize(
    "lang, expected",
    [
        ("en", "model.safetensors.index.json lists weight shards that are missing ({shard})"),
        ("ko", "model.safetensors.index.json에 적힌 가중치 샤드가 없습니다({shard})"),
    ],
)
def test_a_missing_shard_is_named(bert, copy, lang, expected):
    (copy / "model.safetensors").unlink()
    bert[1].save_pretrained(copy, max_shard_size="40KB")
    shards = sorted(copy.glob("model-*-of-*.safetensors"))
    assert len(shards) >= 2 and (copy / "model.safetensors.index.json").is_file()
    shards[-1].unlink()
    message = only_error(upload_zip(checkpoints_page(lang), "sharded.zip", zipped(copy)))
    assert expected.format(shard=shards[-1].name) in message, message


@pytest.mark.parametrize(
    "lang, expected",
    [
        ("en", "vocab.txt has {tokens} tokens but the weights' token embedding has {rows} rows"),
        ("ko", "vocab.txt에는 토큰이 {tokens}개 있지만 가중치의 토큰 임베딩은 {rows}행입니다"),
    ],
)
def test_a_tokenizer_larger_than_the_embedding_is_refused(bert, copy, lang, expected):
    rows = bert[1].config.vocab_size
    tokens = sorted(bert[2].get_vocab(), key=bert[2].get_vocab().get) + [f"extra{i}" for i in range(40)]
    (copy / "tokenizer.json").unlink()  # a WordPiece vocab.txt of 40 more tokens is read instead
    (copy / "vocab.txt").write_text("".join(token + "\n" for token in tokens), encoding="utf-8")
    message = only_error(upload_zip(checkpoints_page(lang), "other-tokenizer.zip", zipped(copy)))
    assert expected.format(tokens=rows + 40, rows=rows) in message, message


def _refuse(name: str) -> None:
    raise CodedError("no_weights", f"{name} has no weights.", name=name)


def test_the_code_and_values_cross_the_isolated_reader():
    with pytest.raises(CodedError, match="folder-x has no weights") as caught:
        run_isolated(_refuse, "folder-x")
    assert (caught.value.code, caught.value.values) == ("no_weights", {"name": "folder-x"})
    problem = problem_of(caught.value)
    assert "folder-x에 가중치가 없습니다" in problem_text(problem, "ko")
    assert problem_text(problem, "en").startswith("folder-x has no weights: add model.safetensors")


def test_an_error_without_a_known_code_is_shown_as_it_is():
    assert problem_text(problem_of(ValueError("Something odd.")), "ko") == "Something odd."
    assert problem_text(Problem("Said in English.", "a-code-nobody-knows"), "ko") == "Said in English."


def _codes_raised() -> set[str]:
    """Every code a CodedError(...) in transformer/hf (and the pickle refusal) is raised with; a GGUF refusal,
    ``gguf_error("code", ...)``, raises "gguf_<code>"."""
    codes = set()
    for path in [*sorted((ROOT / "transformer" / "hf").glob("*.py")), ROOT / "transformer/checkpoints/safe_load.py"]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            called = getattr(node.func, "id", None) if isinstance(node, ast.Call) else None
            if called == "CodedError" and isinstance(node.args[0], ast.Constant):
                codes.add(node.args[0].value)
            elif called == "gguf_error":
                codes.add(f"gguf_{node.args[0].value}")
    return codes


def test_every_code_raised_has_a_translation_and_every_translation_a_code():
    assert _codes_raised() == set(HF_ERROR_KEYS)
