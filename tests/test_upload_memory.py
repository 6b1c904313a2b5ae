"""Uploads count against a per-session budget (weights, vocabulary, tokenizer, analyses) and are
released when their session ends: the registry's byte count and the process's memory come back."""

from __future__ import annotations

import gc
import os

import pytest
import torch

from tests.test_page_checkpoints import UPLOAD_KEY, files, open_page, upload  # noqa: F401 - fixture
from transformer.bundle import LoadedModel
from transformer.core.config import ModelConfig
from transformer.core.model import build_model
from transformer.core.tokenizer import Vocab
from ui import upload_memory
from ui.upload_memory import UploadRegistry, held_bytes, state_bytes
from ui.work_slots import give_memory_back


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def big_upload(words: int = 200_000, d_model: int = 64) -> LoadedModel:
    """A model whose embedding and vocabulary are large (``words`` rows)."""
    vocab = Vocab(["<unk>", "<pad>", *(f"word{i}" for i in range(words - 2))])
    config = ModelConfig(vocab_size=words, d_model=d_model, num_heads=2, num_layers=1, d_ff=64)
    return LoadedModel(build_model(config).eval(), config, vocab)


def test_held_bytes_counts_weights_vocabulary_and_each_storage_once():
    loaded = big_upload()
    weights = sum(p.numel() * 4 for p in loaded.model.parameters())
    strings = sum(len(w) + 49 for w in loaded.vocab.itos)  # a short ASCII str is 49 + len bytes
    counted = held_bytes(loaded)
    assert weights + 2 * strings < counted < 1.5 * (weights + 2 * strings) + 64 * 200_000  # itos, stoi, ids
    shared = torch.zeros(1_000_000)
    assert held_bytes({"a": shared, "b": shared[10:], "c": [shared]}) < 4_100_000  # one storage, counted once
    assert held_bytes({"x": big_upload(1000)}) < held_bytes({"x": big_upload(100_000)})


class FakeRuntime:
    def __init__(self) -> None:
        self.live: set[str] = set()
        self.now = 0.0
        self.removed: list[str] = []


def registry_for(runtime: FakeRuntime, release_after_s: float = 30) -> UploadRegistry:
    return UploadRegistry(
        is_active=runtime.live.__contains__,
        release_after_s=release_after_s,
        clock=lambda: runtime.now,
        remove_files=runtime.removed.append,
    )


def test_sessions_that_end_have_their_uploads_released_and_memory_comes_back():
    runtime = FakeRuntime()
    registry = registry_for(runtime)
    gc.collect()
    give_memory_back()  # a long test run leaves free heap that new objects would reuse without growing the process
    before = rss_mb()
    states = {}
    for k in range(3):  # three sessions, each with a ~100 MB model and a 200,000-word vocabulary
        session = f"s{k}"
        runtime.live.add(session)
        states[session] = {"uploaded_models": {"upload: big.pt": big_upload(200_000, 120)}, "other": 1}
        registry.note(session, states[session])
    held = registry.total_bytes()
    assert held > 3 * 96e6 and rss_mb() - before > 0.8 * held / 1e6
    runtime.live.discard("s0")
    runtime.live.discard("s1")
    assert registry.prune() == 0  # just gone: a reconnect may still come
    runtime.now += 10
    runtime.live.add("s1")  # s1 came back within the grace period
    assert registry.prune() == 0
    runtime.live.discard("s1")
    registry.prune()  # s1 gone from t=10
    runtime.now += 25  # t=35: s0 gone for 35 s, s1 for 25 s
    assert registry.prune() == 1 and registry.sessions() == ["s1", "s2"] and runtime.removed == ["s0"]
    assert states["s0"] == {"other": 1}  # only the upload keys go
    runtime.live.clear()
    runtime.now += 10  # t=45: s1 gone for 35 s, s2 just now
    assert registry.prune() == 1 and registry.sessions() == ["s2"]
    runtime.now += 30
    assert registry.prune() == 1 and registry.total_bytes() == 0 and registry.released_sessions == 3
    gc.collect()  # the states themselves are still held (as Streamlit holds a closed tab's), their uploads not
    assert all(state == {"other": 1} for state in states.values())
    assert rss_mb() - before < 0.15 * held / 1e6, (before, rss_mb(), held / 1e6)


def test_the_checkpoints_page_counts_its_upload_and_a_released_session_falls_back(files, monkeypatch):  # noqa: F811
    at = upload(open_page(), files)
    at.button(key="ckpt_use").click().run()
    assert not at.exception and at.session_state["model"] == UPLOAD_KEY
    registry = upload_memory.REGISTRY
    (session,) = [s for s in registry.sessions() if s == "test session id"]
    counted = registry.session_bytes(session)
    model = at.session_state["uploaded_models"][UPLOAD_KEY]
    assert counted >= held_bytes(model) + len(files[0]) > 0  # the uploader's bytes count too
    monkeypatch.setattr(registry, "is_active", lambda _: False)
    monkeypatch.setattr(registry, "release_after_s", 0.0)
    registry.prune()
    registry.prune()
    assert session not in registry.sessions() and "uploaded_models" not in at.session_state
    assert "ckpt_file" not in at.session_state and "ckpt_vocab" not in at.session_state  # nor the files' bytes
    at.switch_page("pages/playground.py").run()
    assert not at.exception
    assert UPLOAD_KEY not in at.selectbox(key="model").options


def test_an_upload_over_the_session_budget_is_refused_with_a_message(files, monkeypatch):  # noqa: F811
    monkeypatch.setattr(upload_memory, "SESSION_UPLOAD_BYTES", 1000)
    checkpoint, vocab = files
    at = open_page()
    at.file_uploader(key="ckpt_file").set_value(("course.pt", checkpoint, "application/octet-stream")).run()
    assert not at.exception
    assert any("this session's uploads already hold" in e.value for e in at.error), [e.value for e in at.error]
    assert not any(b.key == "ckpt_use" for b in at.button)


def test_state_bytes_reads_only_the_upload_keys():
    state = {"uploaded_models": {"m": torch.zeros(250_000)}, "selection": torch.zeros(10_000_000)}
    assert 1_000_000 <= state_bytes(state) < 1_100_000


@pytest.fixture(autouse=True)
def _fresh_registry(monkeypatch):
    """Each test starts from an empty process-wide registry (AppTest sessions share one id)."""
    monkeypatch.setattr(upload_memory, "REGISTRY", UploadRegistry(is_active=lambda _: True))
    yield


GB = 1_000_000_000
SMOLLM2_FILE, SMOLLM2_WEIGHTS = 98 * upload_memory.MB, 550 * upload_memory.MB  # the published GGUF, dequantised


@pytest.mark.parametrize("machine", [4 * GB, 8 * GB, 24 * GB, 64 * GB, 512 * GB])
def test_default_budgets_fit_the_published_smollm2_gguf_on_any_machine(machine):
    session_bytes, server_bytes = upload_memory.default_budgets(machine)
    assert SMOLLM2_FILE + SMOLLM2_WEIGHTS <= session_bytes <= server_bytes
    assert session_bytes <= max(machine // 4, 1_000 * upload_memory.MB)  # a session never gets most of the machine
    assert server_bytes <= 8_000 * upload_memory.MB


def test_the_operator_sets_the_budgets_in_mb(monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_SESSION_UPLOAD_MB", "250.5")
    assert upload_memory._budget("ATTENTION_LAB_SESSION_UPLOAD_MB", 1) == 250_500_000
    monkeypatch.delenv("ATTENTION_LAB_SESSION_UPLOAD_MB")
    assert upload_memory._budget("ATTENTION_LAB_SESSION_UPLOAD_MB", 7) == 7


def test_smollm2_sized_upload_is_within_the_default_budgets_and_a_third_is_refused(monkeypatch):
    """On 24 GB: this session already holds the file (98 MB), the dequantised weights (550 MB) fit; with
    two such models held, a third is refused."""
    session_bytes, server_bytes = upload_memory.default_budgets(24 * GB)
    monkeypatch.setattr(upload_memory, "SESSION_UPLOAD_BYTES", session_bytes)
    monkeypatch.setattr(upload_memory, "SERVER_UPLOAD_BYTES", server_bytes)
    monkeypatch.setattr(upload_memory, "note_this_session", lambda: "s")
    monkeypatch.setattr(upload_memory.REGISTRY, "session_bytes", lambda s, skip=(): SMOLLM2_FILE)
    monkeypatch.setattr(upload_memory.REGISTRY, "total_bytes", lambda skip_session=None: 0)
    assert upload_memory.over_budget(SMOLLM2_WEIGHTS) is None
    held = 2 * (SMOLLM2_FILE + SMOLLM2_WEIGHTS)
    monkeypatch.setattr(upload_memory.REGISTRY, "session_bytes", lambda s, skip=(): held)
    assert upload_memory.over_budget(SMOLLM2_WEIGHTS + SMOLLM2_FILE) == ("session", held, session_bytes)
