"""The Train page in AppTest: presets start a training, the live view draws its curves, every head's
attention and the head scores; pause / step / resume / stop; a second training of the session is
refused; the model opens on the other pages; another session sees nothing of it; both languages."""

import dataclasses
import json
import os
import time

import pytest

from tests.app_helpers import array, figures, open_app, texts
from transformer.lab.presets import PRESETS
from transformer.lab.runner import DONE
from ui import train_runs
from ui.i18n import translate

# the page's tests check the page, not the workers' priority (tests/test_lab_runner.py does): on a test machine
# shared with other jobs a worker at a lower priority waits behind all of them
os.environ.setdefault("ATTENTION_LAB_TRAIN_NICE", "0")


def wait_for_snapshots(at, count: int, timeout: float = 240.0):
    run = at.session_state["_train_run"]
    deadline = time.monotonic() + timeout
    while len(run.snapshots()) < count:
        assert time.monotonic() < deadline, run.status()
        time.sleep(0.1)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return run


@pytest.fixture
def stop_runs():
    made = []
    yield made
    for at in made:
        if "_train_run" in at.session_state:
            run = at.session_state["_train_run"]
            run.stop()
            run.wait(10)


def test_reverse_preset_trains_and_draws_curves_attention_and_head_scores(stop_runs):
    at = open_app("train")
    stop_runs.append(at)
    assert translate("train.nothing_yet") in texts(at.info)
    at.button(key="train_preset_reverse").click().run()
    assert at.session_state["train_task"] == translate("train.task_reverse") and at.session_state["train_length"] == 12
    run = wait_for_snapshots(at, 2)
    assert run.settings.task == "reverse" and run.budget == PRESETS["reverse"].seconds
    # what to watch for, and about when (the bench's CPU seconds of the jump)
    watch = translate("train.watch_reverse", at=f"{PRESETS['reverse'].watch_at:.0f}")
    assert watch in texts(at.caption)
    shown = figures(at)
    assert {"train-curves", "train-attention", "train-head-scores"} <= set(shown)
    heatmaps = [trace for trace in shown["train-attention"]["data"] if trace["type"] == "heatmap"]
    assert len(heatmaps) == 2 * 4  # every head of both layers
    weights = array(heatmaps[0]["z"])
    assert weights.shape == (26, 26) and abs(weights.sum(-1) - 1).max() < 1e-3
    assert shown["train-curves"]["data"][0]["x"]  # the loss curve has points

    # a second training in the same session is refused with a message, the first one untouched
    at.button(key="train_start").click().run()
    assert translate("train.refused_busy") in texts(at.error)
    assert at.session_state["_train_run"] is run

    at.button(key="train_pause").click().run()
    paused = run.status()
    assert paused.state == "paused"
    assert any(f"{paused.steps:,}" in m for m in texts(at.info))
    at.button(key="train_step").click().run()
    assert run.status().steps == paused.steps + 10
    assert run.snapshots()[-1].step == paused.steps + 10

    at.button(key="train_open").click().run()
    key = f"upload: lab-reverse-step{paused.steps + 10}"
    uploads = at.session_state["uploaded_models"]
    assert key in uploads and uploads[key].lm_tokenizer is not None
    assert at.session_state["model"] == key  # chosen in the sidebar: Generate and the atlas offer it first
    assert any(key in m for m in texts(at.success))

    at.button(key="train_resume").click().run()
    assert run.status().state in ("running", "queued")
    at.button(key="train_stop").click().run()
    assert run.status().state == DONE
    assert translate("train.status_done_stopped", steps=f"{run.status().steps:,}", seconds="0").split()[0] in "".join(
        texts(at.success)
    )


def test_another_session_sees_nothing_of_a_training_and_waits_in_the_queue(stop_runs):
    pool = train_runs.pool()
    kept = pool.limits
    pool.limits = dataclasses.replace(kept, max_running=1)
    try:
        first = open_app("train")
        stop_runs.append(first)
        first.button(key="train_preset_reverse").click().run()
        wait_for_snapshots(first, 1)
        second = open_app("train")
        stop_runs.append(second)
        assert translate("train.nothing_yet") in texts(second.info)  # not the first session's run
        assert not figures(second)
        second.session_state["_train_owner"] = "another session"  # AppTest gives every session the same id
        second.button(key="train_start").click().run()
        assert second.session_state["_train_run"] is not first.session_state["_train_run"]
        waiting = translate("train.status_queued", ahead=0, running=1)
        assert waiting in texts(second.warning)
    finally:
        pool.limits = kept


def test_korean_page(stop_runs):
    at = open_app("train", lang="ko")
    stop_runs.append(at)
    assert at.title[0].value == translate("train.title", "ko")
    labels = [b.label for b in at.button]
    assert translate("train.preset_induction", "ko") in labels and translate("train.start", "ko") in labels
    at.button(key="train_preset_positions").click().run()
    assert at.session_state["train_positional"] == translate("train.positional_none", "ko")
    wait_for_snapshots(at, 1)
    spec = figures(at)["train-curves"]
    assert translate("train.fig_loss", "ko") in json.dumps(spec, ensure_ascii=False)
    assert translate("train.watch_positions", "ko", at="") in texts(at.caption)  # what to watch for, in Korean
    # the curves come before the settings: the main figure first on the screen (measured: test_browser_first_screen)
    assert at.expander[0].label == translate("train.settings", "ko") and not at.expander[0].proto.expanded
    at.button(key="train_preset_reverse").click().run()
    assert translate("train.refused_busy", "ko") in texts(at.error)


@pytest.mark.parametrize("page", ["generate", "head_atlas"])
def test_a_trained_lab_model_opens_on_generate_and_the_head_atlas(page):
    from tests.app_helpers import open_app
    from transformer.lab.export import to_loaded
    from transformer.lab.trainer import LabSettings, Trainer

    trainer = Trainer(LabSettings(task="copy", length=4, symbols=6, d_model=16, heads=2))
    for _ in range(3):
        trainer.step()
    key = "upload: lab-copy-step3"
    loaded = to_loaded(trainer.model, trainer.task, "lab-copy-step3")
    state = {"gen_prompt": "1 2 3 4 >"} if page == "generate" else {}
    at = open_app(page, uploads={key: loaded}, chosen=key, state=state)
    assert not at.exception, [e.value for e in at.exception]
    if page == "generate":
        assert at.radio(key="gen_model").value == key  # the lab model is offered first
    else:
        assert at.selectbox(key="atlas_model").value == key
        assert figures(at)  # its heads are scored and drawn


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_settings_that_leave_too_few_held_out_sequences_are_refused_before_a_run(lang):
    # 4 symbols at length 2 once started and failed mid-run ("too few held-out sequences")
    at = open_app("train", lang=lang, state={"train_task": "reverse", "train_length": 2, "train_symbols": 4})
    fields = {"symbols": 4, "length": 2, "total": 16, "held_out": 0, "need": 8}
    message = translate("train.refused_held_out", lang, **fields)
    assert message in texts(at.warning)  # said before Start is pressed
    at.button(key="train_start").click().run()
    assert message in texts(at.error)
    assert "_train_run" not in at.session_state  # nothing started
    at.slider(key="train_symbols").set_value(20).run()  # 20 symbols at length 2: 400 sequences, enough held out
    assert message not in texts(at.warning)
