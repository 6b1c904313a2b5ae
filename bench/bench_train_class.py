"""A class presses Start on the Train page at once (issue 50, item 7): does another student's Playground wait?

A real server (``streamlit run``, the app as deployed) and protocol clients (bench/load_protocol.py: each
one a browser session speaking Streamlit's WebSocket protocol). One student session types a new sentence
into the Playground about once a second and times it (BackMsg sent -> the run that shows its result:
server work and transfer, no browser rendering), before, while and after ``--sessions`` other sessions
press the induction preset at once; each of those refreshes its live view every 1.5 s as a browser does
(the fragment's ``run_every``); those sessions run in a process of their own, as a class's browsers run on
their own machines. Then the training sessions close their tabs, and the bench watches the
server's process tree until no training worker is left, and opens a new session whose preset must start
at once (no run left in the queue: every queued run ended with its session too).

    python bench/bench_train_class.py --sessions 10 --during 90 --out bench/results/train_class.json

Reported: the Playground's times (p50/p95/max) before/while/after, the workers seen (at most the pool's
limit at once), their CPU priority, how long after the tabs closed the last worker ended, the server's and
the workers' CPU seconds, and the load average (on a shared machine it says how much the machine gave).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import random
import statistics
import time
from pathlib import Path

from shared import ROOT, save_report  # noqa: F401  (puts the repository on sys.path)

from bench.bench_load_protocol import Scripted  # noqa: E402
from bench.load_corpus import sentence  # noqa: E402
from bench.load_protocol import ProtocolSession  # noqa: E402
from bench.load_server import cpu_seconds, load_average, process_tree, start_server, wait_healthy  # noqa: E402
from ui.i18n import translate  # noqa: E402

PRESET = translate("train.preset_induction")
REFRESH_S = 1.5  # pages/train.py's live view: run_every


def workers(server_pid: int) -> list[int]:
    """The server's training worker processes (transformer.lab.runner.WORKER_BOOT)."""
    found = []
    for pid in process_tree([server_pid]):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"transformer.lab.worker" in command:
            found.append(pid)
    return found


def nice_of(pid: int) -> int | None:
    try:
        return os.getpriority(os.PRIO_PROCESS, pid)
    except OSError:
        return None


def summary(times: list[float]) -> dict:
    if not times:
        return {"n": 0}
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"n": len(times), "p50": round(statistics.median(times), 3), "p95": round(p95, 3),
            "max": round(max(times), 3)}  # fmt: skip


async def refresh(session: ProtocolSession, stop: asyncio.Event, counts: dict) -> None:
    """The live view's own reruns, as a browser sends them while a training is drawn."""
    while not stop.is_set():
        fragments = set(session.view.fragments.values())
        if fragments and session.closed is None:
            try:
                await session.run(lambda v: True, fragment_id=next(iter(fragments)))
                counts["refreshes"] += 1
            except Exception:  # a refresh that timed out is not the measured action
                counts["refresh_errors"] += 1
        await asyncio.sleep(REFRESH_S)


async def trainers(url: str, args, press, close, replies) -> None:
    """The training sessions: open the Train page, press the preset when told (all at once), refresh their
    live view as browsers do until told to close their tabs."""
    sessions = [ProtocolSession(url, args.action_timeout) for _ in range(args.sessions)]
    await asyncio.gather(*(s.open("train", "lang=en", lambda v: v.widget(PRESET, "button") is not None)
                           for s in sessions))  # fmt: skip
    replies.put("open")
    await asyncio.to_thread(press.wait)
    presses = await asyncio.gather(*(s.click(s.view.widget(PRESET, "button"), lambda v: True) for s in sessions))
    stop, counts = asyncio.Event(), {"refreshes": 0, "refresh_errors": 0}
    refreshers = [asyncio.create_task(refresh(s, stop, counts)) for s in sessions if not args.no_refresh]
    await asyncio.to_thread(close.wait)
    stop.set()
    await asyncio.gather(*refreshers)
    await asyncio.gather(*(s.close() for s in sessions))
    replies.put({"press_seconds": summary(list(presses)), **counts})


def trainer_process(url: str, args, press, close, replies) -> None:
    asyncio.run(trainers(url, args, press, close, replies))


async def typing(student: Scripted, label: str, seconds: float, times: list[float], start: int) -> None:
    """The student types a new sentence about once a second for ``seconds``."""
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        times.append(await student.playground(sentence(0, start + len(times))))
        print(f"{label} {times[-1]:.2f} s (load {load_average()[0]})", flush=True)
        await asyncio.sleep(1.0)


async def bench(args, url: str, server_pid: int) -> dict:
    report: dict = {"sessions": args.sessions, "during_s": args.during, "refresh": not args.no_refresh,
                    "load_at_start": load_average()}  # fmt: skip
    student = Scripted(url, 0, args)
    await student.open()
    before: list[float] = []
    await typing(student, "before", args.before, before, 0)

    # the training sessions live in a process of their own, as a class's browsers live on their own machines:
    # their clients' work (reading every refresh's figures) does not delay the student's client
    ctx = multiprocessing.get_context("spawn")
    press, close, replies = ctx.Event(), ctx.Event(), ctx.Queue()
    child = ctx.Process(target=trainer_process, args=(url, args, press, close, replies))
    child.start()
    assert replies.get(timeout=30 * args.action_timeout) == "open"
    cpu0, pressed = cpu_seconds([server_pid]), time.monotonic()
    press.set()
    stop, seen, during = asyncio.Event(), {}, []

    async def watch() -> None:
        while not stop.is_set():
            for pid in workers(server_pid):  # its priority as last seen: a worker lowers it once it has started
                seen.setdefault(pid, {"first_s": round(time.monotonic() - pressed, 1)})["nice"] = nice_of(pid)
            report["most_at_once"] = max(report.get("most_at_once", 0), len(workers(server_pid)))
            await asyncio.sleep(0.5)

    watcher = asyncio.create_task(watch())
    await typing(student, "during", args.during, during, 1000)
    report["load_during"] = load_average()
    tree = process_tree([server_pid])
    report["cpu_s_during"] = {"server": round(cpu_seconds([server_pid]) - cpu0, 1),
                              "server_and_workers": round(cpu_seconds(tree), 1)}  # fmt: skip
    stop.set()
    await watcher
    report.update(workers_seen=len(seen), worker_nice=sorted({w["nice"] for w in seen.values()} - {None}))

    closed = time.monotonic()
    close.set()
    report.update(await asyncio.to_thread(replies.get, True, 300))  # the presses' times and the refreshes
    child.join(60)
    left = workers(server_pid)
    while left and time.monotonic() - closed < args.gone_wait:
        await asyncio.sleep(0.5)
        left = workers(server_pid)
    report["workers_left_after_close"] = len(left)
    report["last_worker_ended_s_after_close"] = round(time.monotonic() - closed, 1)

    # a new session's preset starts at once: no run of the closed sessions holds a place or waits in the queue
    await asyncio.sleep(args.queue_wait)
    late = ProtocolSession(url, args.action_timeout)
    await late.open("train", "lang=en", lambda v: v.widget(PRESET, "button") is not None)
    await late.click(late.view.widget(PRESET, "button"), lambda v: True)
    queued = translate("train.status_queued", ahead=0, running=0).split(":")[0]
    report["new_session_queued"] = late.view.contains(queued)
    await late.close()

    after: list[float] = []
    await typing(student, "after", args.before, after, 2000)
    await student.session.close()
    report["playground"] = {"before": summary(before), "during": summary(during), "after": summary(after)}
    report["load_at_end"] = load_average()
    return report


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sessions", type=int, default=10)
    p.add_argument("--during", type=float, default=90.0, help="seconds the student types while they train")
    p.add_argument("--before", type=float, default=15.0, help="seconds the student types before and after")
    p.add_argument("--gone-wait", type=float, default=120.0, help="seconds to wait for the workers to end")
    p.add_argument("--queue-wait", type=float, default=5.0)
    p.add_argument("--action-timeout", type=float, default=120.0)
    p.add_argument("--no-refresh", action="store_true", help="the training sessions do not rerun their live view")
    p.add_argument("--port", type=int, default=random.randint(8600, 8699))
    p.add_argument("--out", default="bench/results/train_class.json")
    args = p.parse_args()
    server = start_server(args.port, ROOT)
    url = f"http://127.0.0.1:{args.port}"
    try:
        wait_healthy(url, server=server)
        report = asyncio.run(bench(args, url, server.pid))
    finally:
        server.terminate()
        server.wait(30)
    report["method"] = __doc__.split("\n\n")[1].replace("\n", " ")
    save_report(report, args.out)
    print(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
