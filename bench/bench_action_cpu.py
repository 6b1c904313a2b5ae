"""Server CPU milliseconds per load-test action, before and after a change, independent of machine load.

Run: python bench/bench_action_cpu.py --before REV [--after REV] [--rounds 12] [--out FILE]
     python bench/bench_action_cpu.py --after HEAD --profile /tmp/prof [--rounds 6]   (where the CPU goes)

Each revision is extracted with ``git archive`` into a folder of its own and served by its own
Streamlit process (1 torch thread), started through this file (``--serve``): the process reports its
own CPU time (``time.process_time``: every thread of the process, nanosecond resolution, CPU not wall
time, so other jobs on the machine change it little) and each script run's thread CPU. One protocol
session per server (bench/load_protocol.py, the load test's client) does the load test's round —
``playground`` (page switch + a new sentence), ``attention`` (page switch, the sentence's heatmap),
``layer``, ``head`` (fragment reruns) — with a new sentence every round (cache misses, as in the load
test); the servers take turns round by round (interleaved), so a slow minute of the machine falls
on both. Per action: the median, quartiles and extremes of the server's CPU from the message sent to
the server falling idle again, and the share of it spent in the script thread (the rest: the
server's event loop serialising and sending the messages) and in Streamlit's full collection after
each run. ``--idle-sessions N`` first leaves N sessions connected that did one round each (what a
class keeps in the server: the collection's cost grew with them).

With ``--profile DIR`` the script threads run under cProfile (on CPU time) and the heaviest functions
per action (cumulative, summed over rounds) are printed; the profiler's own cost then inflates the
CPU per action.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import io
import json
import os
import pstats
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve()
ROOT = BENCH.parent.parent
ACTIONS = ("playground", "attention", "layer", "head")
SESSION = 7  # the load test's sentence generator, for one session number
QUIET_CPU_S = 0.0015  # the server counts as idle once it used less than this in QUIET_STEP_S
QUIET_STEP_S = 0.1


# ---------- the server side (a child process: --serve) ----------


def serve(port: int, stats_port: int, profile_dir: str | None) -> None:
    """Run the app in this folder with Streamlit, answering CPU questions on ``stats_port``."""
    state = {"script_cpu": 0.0, "gc_cpu": 0.0, "profiler": new_profiler(profile_dir)}
    time_script_runs(state)
    threading.Thread(target=answer_questions, args=(state, stats_port, profile_dir), daemon=True).start()
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", "streamlit_app.py", "--server.headless", "true",
                "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false",
                "--server.port", str(port), "--server.address", "127.0.0.1"]  # fmt: skip
    cli.main()


def new_profiler(profile_dir: str | None) -> cProfile.Profile | None:
    return cProfile.Profile(time.thread_time) if profile_dir else None  # CPU time, not wall time


def time_script_runs(state: dict) -> None:
    """Count each script run's thread CPU in ``state["script_cpu"]`` (under cProfile when profiling),
    and the runner's full collection after a run (``runner.postScriptGC``) apart in ``state["gc_cpu"]``."""
    from streamlit.runtime.scriptrunner import script_runner

    original = script_runner.ScriptRunner._run_script

    def measured_run(self, rerun_data):
        start, profiler = time.thread_time(), state["profiler"]
        if profiler is not None:
            profiler.enable()
        try:
            return original(self, rerun_data)
        finally:
            if profiler is not None:
                profiler.disable()
            state["script_cpu"] += time.thread_time() - start

    class TimedGC:  # the module ``gc`` as the runner sees it, its ``collect`` timed
        def __getattr__(self, name):
            return getattr(gc, name)

        def collect(self, *args):
            start = time.thread_time()
            try:
                return gc.collect(*args)
            finally:
                state["gc_cpu"] += time.thread_time() - start

    script_runner.ScriptRunner._run_script = measured_run
    script_runner.gc = TimedGC()


def answer_questions(state: dict, stats_port: int, profile_dir: str | None) -> None:
    """``cpu``: "process CPU s, script runs' CPU s, post-run collections' CPU s"; ``dump NAME``: the same,
    after writing the profile of the runs since the last dump to NAME.prof; ``objects``: JSON of
    :func:`tracked_objects`."""
    with socket.create_server(("127.0.0.1", stats_port)) as server:
        while True:
            conn = server.accept()[0]
            with conn:
                command = conn.recv(1024).decode().split()
                if command[:1] == ["objects"]:
                    conn.sendall(json.dumps(tracked_objects()).encode())
                    continue
                if command[:1] == ["dump"] and state["profiler"] is not None:
                    state["profiler"].dump_stats(os.path.join(profile_dir, command[1] + ".prof"))
                    state["profiler"] = new_profiler(profile_dir)
                conn.sendall(f"{time.process_time()} {state['script_cpu']} {state['gc_cpu']}".encode())


def tracked_objects(top: int = 25) -> dict:
    """How many objects the collector tracks outside the frozen generation (what a full collection
    walks), the commonest types, and the CPU of two full collections run now."""
    from collections import Counter

    objects = gc.get_objects()
    kinds = Counter(f"{type(o).__module__}.{type(o).__qualname__}" for o in objects)
    count = len(objects)
    del objects
    start = time.thread_time()
    gc.collect()
    first = time.thread_time() - start
    start = time.thread_time()
    gc.collect()
    again = time.thread_time() - start
    return {"tracked": count, "frozen": gc.get_freeze_count(), "collect_ms": [1000 * first, 1000 * again],
            "types": dict(kinds.most_common(top))}  # fmt: skip


# ---------- the client side ----------


class Server:
    """One revision's app folder, its Streamlit process and its CPU readings."""

    def __init__(self, name: str, folder: Path, profile_dir: str | None):
        from tests.browser_server import free_port

        self.name, self.folder, self.profiling = name, folder, bool(profile_dir)
        self.port, self.stats_port = free_port(), free_port()
        argv = [sys.executable, str(BENCH), "--serve", str(self.port), str(self.stats_port)]
        argv += ["--profile", profile_dir] if profile_dir else []
        env = {**os.environ, "ATTENTION_LAB_THREADS": "1", "PYTHONPATH": ""}
        with open(folder / "server.log", "wb") as log:  # read it when a server does not start
            self.process = subprocess.Popen(argv, cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{self.port}"

    def ask(self, command: str = "cpu") -> tuple[float, float, float]:
        """(process CPU seconds, script threads' CPU seconds, of which the post-run collections) now."""
        with socket.create_connection(("127.0.0.1", self.stats_port), timeout=30) as conn:
            conn.sendall(command.encode())
            return tuple(float(x) for x in conn.recv(1024).decode().split())

    def objects(self) -> dict:
        with socket.create_connection(("127.0.0.1", self.stats_port), timeout=60) as conn:
            conn.sendall(b"objects")
            data = b""
            while chunk := conn.recv(65536):
                data += chunk
        return json.loads(data)

    async def idle(self) -> tuple[float, float, float]:
        """The CPU readings once the server has stopped working (post-run clean-up included)."""
        last = self.ask()
        for _ in range(100):
            await asyncio.sleep(QUIET_STEP_S)
            now = self.ask()
            if now[0] - last[0] < QUIET_CPU_S:
                return now
            last = now
        return last

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        kb = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    return round(kb / 1024, 1)


def extract(rev: str, into: Path) -> Path:
    """``git archive`` of ``rev`` unpacked into ``into`` (the app as committed, nobody's edits in progress)."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", rev], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


async def resident(server: Server, number: int, results):
    """A session that did one round and stays connected (what a class leaves in the server's memory)."""
    from bench.bench_load_protocol import Scripted

    script = Scripted(server.url, 10 + number, argparse.Namespace(action_timeout=120, think=0))
    await script.open()
    await one_round(script, server, 0, None, results)
    return script


async def one_round(script, server: Server, round_: int, cpu: dict, results) -> None:
    from bench.bench_load_protocol import timed
    from bench.load_corpus import sentence

    for action, step in script.steps(sentence(SESSION, round_ + 1)):
        before = await server.idle()
        await timed(script, action, step, results)
        after = await server.idle()
        if cpu is not None:
            cpu.setdefault(action, []).append(tuple(a - b for a, b in zip(after, before)))
            if server.profiling:
                server.ask(f"dump {server.name}-{action}-{round_}")


def summary(samples: list[tuple[float, float, float]]) -> dict:
    total = sorted(1000 * t for t, _, _ in samples)
    script = [1000 * s for _, s, _ in samples]
    collect = [1000 * c for _, _, c in samples]
    q1, _, q3 = statistics.quantiles(total, n=4) if len(total) > 1 else (total[0],) * 3
    return {
        "n": len(total),
        "median_ms": round(statistics.median(total), 1),
        "q1_ms": round(q1, 1),
        "q3_ms": round(q3, 1),
        "min_ms": round(total[0], 1),
        "max_ms": round(total[-1], 1),
        "script_thread_median_ms": round(statistics.median(script), 1),
        "post_run_gc_median_ms": round(statistics.median(collect), 1),
    }


def print_profile(profile_dir: Path, name: str, top: int) -> None:
    for action in ACTIONS:
        files = sorted(profile_dir.glob(f"{name}-{action}-*.prof"))
        if not files:
            continue
        stats = pstats.Stats(*map(str, files), stream=(out := io.StringIO()))
        stats.sort_stats("cumulative").print_stats(top)
        stats.sort_stats("tottime").print_stats(top // 2)
        print(f"===== {name} {action}: {len(files)} rounds, cumulative, then own time =====")
        print("\n".join(line for line in out.getvalue().splitlines() if line.strip() and ".prof" not in line))


async def warmed(server: Server, args, results):
    """The measured session, once the server is up and has run ``args.warm`` rounds (imports, models
    and first figures: not measured)."""
    from bench.bench_load_protocol import Scripted
    from bench.load_server import wait_healthy

    await asyncio.to_thread(wait_healthy, server.url, 180, server.process)
    script = Scripted(server.url, SESSION, argparse.Namespace(action_timeout=120, think=0))
    await script.open()
    for warm in range(args.warm):
        await one_round(script, server, 1000 + warm, None, results)
    return script


async def measure(args) -> dict:
    """Both servers warmed, the idle sessions opened, then ``args.rounds`` rounds taking turns."""
    from bench.load_results import Results

    work = Path(tempfile.mkdtemp(prefix="action-cpu-"))
    revs = [("before", args.before), ("after", args.after)] if args.before else [("after", args.after)]
    folders = {name: extract(rev, work / name) for name, rev in revs}
    for path in args.overlay:  # this working tree's version of a file, over the --after revision
        shutil.copy2(ROOT / path, folders["after"] / path)
    servers = [Server(name, folder, args.profile) for name, folder in folders.items()]
    scripts, results, idle = {}, Results(), []
    load = [os.getloadavg()]
    try:
        for server in servers:
            scripts[server.name] = await warmed(server, args, results)
            idle.extend([await resident(server, k, results) for k in range(args.idle_sessions)])
            if args.profile:
                server.ask(f"dump {server.name}-warm")  # not counted
        cpu = {server.name: {} for server in servers}
        for round_ in range(args.rounds):
            order = servers if round_ % 2 == 0 else servers[::-1]
            for server in order:
                await one_round(scripts[server.name], server, round_, cpu[server.name], results)
            load.append(os.getloadavg())
        rss = {server.name: rss_mb(server.process.pid) for server in servers}
        tracked = {server.name: server.objects()["tracked"] for server in servers}
    finally:
        for script in [*scripts.values(), *idle]:
            await script.session.close()
        for server in servers:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)
    if args.profile:
        for server in servers:
            print_profile(Path(args.profile), server.name, args.top)
    return {
        "measured": "server process CPU (all threads, time.process_time) per action, one protocol session, "
        "new sentence every round; script_thread: the part in the script runs",
        "revisions": dict(revs),
        "overlay": args.overlay,
        "rounds": args.rounds,
        "idle_sessions": args.idle_sessions,
        "load_average_1min": [round(min(x[0] for x in load), 2), round(max(x[0] for x in load), 2)],
        "errors": results.errors + results.exceptions,
        "server_rss_mb_at_end": rss,
        "gc_tracked_objects_at_end": tracked,
        "cpu_ms": {name: {a: summary(v) for a, v in actions.items()} for name, actions in cpu.items()},
    }


def main() -> None:
    if sys.argv[1:2] == ["--serve"]:
        profile = sys.argv[sys.argv.index("--profile") + 1] if "--profile" in sys.argv else None
        serve(int(sys.argv[2]), int(sys.argv[3]), profile)
        return
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", help="revision measured first in each pair (omit: --after alone)")
    p.add_argument("--after", default="HEAD")
    p.add_argument("--overlay", nargs="*", default=[], help="files copied from this working tree over --after")
    p.add_argument("--rounds", type=int, default=12)
    p.add_argument("--warm", type=int, default=2, help="rounds per server before measuring")
    p.add_argument("--idle-sessions", type=int, default=0, help="sessions per server that did one round and stay")
    p.add_argument("--profile", help="folder for cProfile files of the script runs; prints the top functions")
    p.add_argument("--top", type=int, default=40)
    p.add_argument("--out", help="also write the JSON here")
    args = p.parse_args()
    if args.profile:
        Path(args.profile).mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(BENCH.parent))
    import shared  # noqa: F401  (the repository on sys.path)

    report = asyncio.run(measure(args))
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
