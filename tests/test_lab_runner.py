"""Trainings in background threads (transformer.lab.runner): pause / resume / step give the same
model as an uninterrupted run; one run per owner; a queue past the server's limit; the caps."""

import os
import time

import pytest
import torch

from transformer.lab.runner import (
    CPU_CAP,
    DONE,
    FINISHED,
    PAUSED,
    QUEUED,
    RUNNING,
    SESSION_GONE,
    LabRefused,
    Limits,
    RunPool,
    estimated_bytes,
)
from transformer.lab.trainer import LabSettings, Trainer

SMALL = LabSettings(task="reverse", length=4, symbols=6, d_model=16, heads=2, batch=16)


def weights(model) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def wait_for(condition, timeout=300.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.fixture
def pool():
    made = RunPool(Limits(max_running=1, snapshot_every=0.05, nice=0))
    yield made
    for run in list(made._owners.values()) + list(made._queue):
        run.stop()
        run.wait(10)


def test_paused_resumed_and_stepped_run_matches_an_uninterrupted_one(pool):
    run = pool.start("a", SMALL, budget=600)
    wait_for(lambda: run.status().steps >= 5)
    run.pause()
    assert run.wait_idle(300)
    assert run.status().state == PAUSED
    run.step(3)
    assert run.wait_idle(300)
    run.resume()
    at_resume = run.status().steps
    wait_for(lambda: run.status().steps >= at_resume + 5)
    run.pause()
    assert run.wait_idle(300)
    model, _, steps = run.export()
    # the same settings trained the same number of steps without a stop (on one thread, as the worker
    # trains: sums over two threads round differently)
    torch.set_num_threads(1)
    plain = Trainer(SMALL)
    for _ in range(steps):
        plain.step()
    assert torch.equal(weights(model), weights(plain.model))
    snaps = run.snapshots()
    assert snaps[0].step == 0 and snaps[-1].step == steps
    assert [s.step for s in snaps] == sorted(s.step for s in snaps)


def test_a_second_training_of_the_same_owner_is_refused_while_the_first_lives(pool):
    first = pool.start("a", SMALL, budget=600)
    with pytest.raises(LabRefused, match="already has a training") as refused:
        pool.start("a", SMALL, budget=600)
    assert refused.value.code == "busy"
    first.stop()
    assert first.wait(300)
    assert first.status().state == DONE
    second = pool.start("a", SMALL, budget=600)  # once it is done, a new one may start
    assert second is not first


def test_past_the_servers_limit_runs_wait_in_a_queue_first_come_first_served(pool):
    a = pool.start("a", SMALL, budget=600)
    b = pool.start("b", SMALL, budget=600)
    c = pool.start("c", SMALL, budget=600)
    wait_for(lambda: a.status().state == RUNNING)
    assert b.status().state == QUEUED and c.status().state == QUEUED
    assert (b.status().ahead, c.status().ahead) == (0, 1)
    assert pool.counts() == (1, 2)
    time.sleep(0.3)
    assert b.status().steps == 0  # a queued run does not train
    a.pause()  # a paused run gives its place to the first in the queue
    wait_for(lambda: b.status().state == RUNNING)
    assert c.status().ahead == 0
    a.resume()
    assert a.status().state == QUEUED and a.status().ahead == 1


def test_a_run_ends_when_its_training_time_is_spent(pool):
    run = pool.start("a", SMALL, budget=0.5)
    assert run.wait(300)
    status = run.status()
    assert status.state == DONE and status.reason == FINISHED and status.seconds >= 0.5
    assert run.snapshots()[-1].step == status.steps
    assert pool.counts() == (0, 0)


def test_a_run_stops_at_its_cpu_time_cap():
    capped = RunPool(Limits(cpu_seconds=0.3, nice=0))
    run = capped.start("a", SMALL, budget=600)
    assert run.wait(300)
    status = run.status()
    assert status.reason == CPU_CAP and 0.3 <= status.cpu_seconds < 5


def test_a_run_stops_when_its_session_is_gone():
    pool = RunPool(Limits(gone_grace=0.2, nice=0))
    here = {"alive": True}
    run = pool.start("a", SMALL, budget=600, alive=lambda: here["alive"])
    wait_for(lambda: run.status().steps > 0)
    here["alive"] = False
    assert run.wait(300)
    assert run.status().reason == SESSION_GONE
    # a paused run of a gone session stops too
    here["alive"] = True
    paused = pool.start("a", SMALL, budget=600, alive=lambda: here["alive"])
    paused.pause()
    here["alive"] = False
    assert paused.wait(300)
    assert paused.status().reason == SESSION_GONE


def process_ended(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with open(f"/proc/{pid}/stat") as stat:  # a zombie not yet reaped counts as ended
        return stat.read().split(")")[-1].split()[0] == "Z"


def test_a_training_runs_in_a_worker_process_at_lower_priority_and_ends_with_its_run():
    pool = RunPool(Limits(max_running=1, nice=7, gone_grace=0.2))
    here = {"alive": True}
    run = pool.start("a", SMALL, budget=600, alive=lambda: here["alive"])
    wait_for(lambda: run.snapshots())  # the first snapshot streams back from the worker
    pid = run.worker_pid
    assert pid is not None and pid != os.getpid()
    assert os.getpriority(os.PRIO_PROCESS, pid) == os.getpriority(os.PRIO_PROCESS, 0) + 7
    assert run.snapshots()[0].step == 0
    here["alive"] = False  # the browser session closed
    assert run.wait(300)
    assert run.status().reason == SESSION_GONE and process_ended(pid)
    model, task, steps = run.export()  # its last weights came back before it ended
    assert steps == run.status().steps and task.name == "reverse"
    assert torch.isfinite(weights(model)).all()


def test_the_default_leaves_a_core_for_the_pages(monkeypatch):
    cores = len(os.sched_getaffinity(0))
    assert Limits().max_running == max(1, cores - 1)
    monkeypatch.setenv("ATTENTION_LAB_TRAININGS", "3")
    monkeypatch.setenv("ATTENTION_LAB_TRAIN_NICE", "5")
    assert (Limits.from_env().max_running, Limits.from_env().nice) == (3, 5)


def test_settings_needing_more_memory_than_allowed_are_refused():
    big = LabSettings(task="induction", length=32, symbols=60, layers=4, heads=4, d_model=128, batch=128)
    need = estimated_bytes(big)
    assert need > 10 * 1024**2
    with pytest.raises(LabRefused, match="MB") as refused:
        RunPool(Limits(memory_bytes=need - 1)).start("a", big, budget=1)
    assert refused.value.code == "too-large"
    assert estimated_bytes(SMALL) < Limits().memory_bytes
    # the default allows the largest model the page offers (rows of 16 symbols, batch 64)
    offered = big.replace(length=16, batch=64)
    assert estimated_bytes(offered) < Limits().memory_bytes < need
