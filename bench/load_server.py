"""The server side of the load test: start the app, and read its process tree's CPU time and
memory from /proc (Linux), so the numbers stay the server's own when the browsers share the machine.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path


def start_server(port: int, app_dir: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    """``streamlit run`` of the app in ``app_dir`` on 127.0.0.1:``port``, one torch thread; ``env`` is added to
    this process's environment."""
    cmd = [sys.executable, "-m", "streamlit", "run", "streamlit_app.py", "--server.headless", "true",
           "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false",
           "--server.port", str(port), "--server.address", "127.0.0.1"]  # fmt: skip
    env = {**os.environ, "ATTENTION_LAB_THREADS": "1", **(env or {})}
    return subprocess.Popen(cmd, cwd=app_dir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_healthy(url: str, timeout: float = 240, server: subprocess.Popen | None = None) -> None:
    """Return once the server at ``url`` answers its health check; TimeoutError after ``timeout`` s,
    RuntimeError as soon as ``server`` (the process serving it, when given) has exited."""
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server is not None and server.poll() is not None:
            raise RuntimeError(f"streamlit exited with status {server.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=5) as reply:
                if reply.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"{url} did not answer in {timeout:.0f} s")


def _stat(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()  # fields from 3 (state) on
    except (OSError, IndexError):
        return None


def process_tree(roots: list[int]) -> list[int]:
    """``roots`` and every live descendant (the fork server and its readers included)."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (fields := _stat(int(entry))):
            parents[int(entry)] = int(fields[1])
    tree, frontier = set(roots), list(roots)
    while frontier:
        pid = frontier.pop()
        children = [c for c, p in parents.items() if p == pid and c not in tree]
        tree.update(children)
        frontier.extend(children)
    return sorted(p for p in tree if p in parents)


def cpu_seconds(roots: list[int]) -> float:
    """utime + stime (+ reaped children's) of the server processes and their descendants."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in process_tree(roots):
        if fields := _stat(pid):
            total += sum(int(v) for v in fields[11:15])  # utime stime cutime cstime
    return total / tick


def rss_mb(roots: list[int]) -> tuple[float, float]:
    """(RSS of the server processes themselves, RSS summed over their whole tree), in MB."""
    page = os.sysconf("SC_PAGE_SIZE") / 1024**2
    own = tree = 0.0
    for pid in process_tree(roots):
        if fields := _stat(pid):
            rss = int(fields[21]) * page
            tree += rss
            own += rss if pid in roots else 0.0
    return own, tree


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


async def settle_cpu(pids: list[int], quiet_s: float = 0.3, limit_s: float = 5.0) -> float:
    """The server tree's CPU seconds once it has stopped using CPU (two equal readings ``quiet_s`` apart)."""
    last, start = cpu_seconds(pids), time.monotonic()
    while time.monotonic() - start < limit_s:
        await asyncio.sleep(quiet_s)
        now = cpu_seconds(pids)
        if now == last:
            return now
        last = now
    return last


async def sample_rss(pids: list[int], peaks: dict, stop) -> None:
    while not stop.is_set():
        own, tree = rss_mb(pids)
        peaks["own"], peaks["tree"] = max(peaks.get("own", 0), own), max(peaks.get("tree", 0), tree)
        await asyncio.sleep(0.5)


def alive(pids: list[int]) -> bool:
    return all(_stat(pid) is not None for pid in pids)
