"""Heavy uploads on one server, then their sessions close: does the server's memory come back?

Run: python bench/bench_load_uploads.py [--sessions 3] [--words 1000000] [--d-model 20] [--settle 75]

Starts the app (bench/load_server.py), builds one valid heavy upload (a zipped bundle whose embedding
and vocabulary have ``--words`` rows: 1,000,000 × 20 float32 is 80 MB of weights plus a
1,000,000-word vocab.txt, as issue 28 measured), and lets ``--sessions`` protocol sessions
(bench/load_protocol.py) each upload it on the Checkpoints page and use it. Then every session
closes its stream (a closed tab) and the server's RSS is sampled every 5 s for ``--settle`` seconds.
A session beyond the budgets (ui/upload_memory.py) is told so; that is counted, not failed.

``--cycles`` rounds of this show whether the memory left after a release is reused by the next class
(bounded) or adds up (a leak). Printed (JSON): RSS idle (after one plain session); per cycle the RSS
after each upload and every 5 s after the close, the time it fell below idle + 25 % of what the
uploads added, and each session's outcome.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
import zipfile
from pathlib import Path
from types import SimpleNamespace

from shared import ROOT  # noqa: F401  (puts the repository on sys.path)

from bench.bench_load_protocol import Scripted  # noqa: E402
from bench.load_protocol import MAIN, SIDEBAR  # noqa: E402
from bench.load_server import load_average, rss_mb, start_server, wait_healthy  # noqa: E402


def heavy_bundle(folder: Path, words: int, d_model: int) -> Path:
    """A zipped bundle (config, weights, vocab.txt) with a ``words``-row embedding and vocabulary."""
    import torch

    from transformer.bundle import save_bundle
    from transformer.core.config import ModelConfig
    from transformer.core.model import build_model
    from transformer.core.tokenizer import Vocab

    torch.manual_seed(0)
    vocab = Vocab(["<unk>", "<pad>", *(f"w{i}" for i in range(words - 2))])
    config = ModelConfig(vocab_size=words, d_model=d_model, num_heads=2, num_layers=1, d_ff=32, max_len=128)
    bundle = save_bundle(folder / "heavy", build_model(config), config, vocab)
    path = folder / "heavy.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for file in sorted(bundle.iterdir()):
            archive.write(file, f"heavy/{file.name}")
    return path


async def upload_and_use(session: Scripted, path: Path) -> str:
    """Open the app, upload ``path`` on the Checkpoints page, use it; 'used', 'refused: ...' or 'failed: ...'."""
    await session.open()
    view = session.session.view
    await session.session.switch("checkpoints", lambda v: any(w.kind == "file_uploader" for w in v.widgets()))
    uploader = next(w for w in view.widgets() if w.kind == "file_uploader" and w.root == MAIN)
    await session.session.upload(uploader, path, lambda v: v.primary_button() is not None or v.alert_error())
    if (error := view.alert_error()) is not None:
        return f"refused: {error[:160]}"

    def selected(v) -> bool:
        model = v.widget("Model", "selectbox", root=SIDEBAR)
        return (model is not None and path.stem in model.value) or v.alert_error() is not None

    await session.session.click(view.primary_button(), selected)
    return "used" if view.alert_error() is None else f"refused: {view.alert_error()[:160]}"


async def measure(args, path: Path, pids: list[int]) -> dict:
    options = SimpleNamespace(action_timeout=args.action_timeout)
    warm = Scripted(args.url, 99, options)  # one plain session first: the app imported, the bundled model loaded
    await warm.open()
    await warm.session.close()
    await asyncio.sleep(5)
    idle = rss_mb(pids)[0]
    cycles = [await one_cycle(args, path, pids, options, idle, k) for k in range(args.cycles)]
    return {
        "sessions": args.sessions,
        "upload_mb": round(path.stat().st_size / 1e6, 1),
        "words": args.words,
        "rss_idle_mb": round(idle),
        "cycles": cycles,
        "load_average": load_average(),
    }


async def one_cycle(args, path: Path, pids: list[int], options, idle: float, cycle: int) -> dict:
    """``--sessions`` sessions upload and use the model, then all close; RSS sampled until ``--settle``."""
    sessions, outcomes, after_each = [], [], []
    for number in range(args.sessions):
        session = Scripted(args.url, 100 * cycle + number, options)
        sessions.append(session)
        try:
            outcomes.append(await upload_and_use(session, path))
        except Exception as err:  # noqa: BLE001 - reported, the next session still runs
            outcomes.append(f"failed: {type(err).__name__}: {str(err)[:160]}")
        after_each.append(round(rss_mb(pids)[0]))
    for session in sessions:
        await session.session.close()
    closed, samples, back_at = time.monotonic(), [], None
    target = idle + 0.25 * max(0.0, max(after_each, default=idle) - idle)
    while time.monotonic() - closed < args.settle:
        await asyncio.sleep(5)
        own = rss_mb(pids)[0]
        samples.append([round(time.monotonic() - closed), round(own)])
        if back_at is None and own <= target:
            back_at = samples[-1][0]
    return {
        "outcomes": outcomes,
        "rss_after_each_upload_mb": after_each,
        "rss_after_close_mb": samples,
        "seconds_until_back_within_25pct": back_at,
    }


async def main(args) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-uploads-") as work:
        path = heavy_bundle(Path(work), args.words, args.d_model)
        server = None
        if args.url is None:
            args.url = f"http://127.0.0.1:{args.port}"
            server = start_server(args.port, ROOT)
        try:
            pids = [int(p) for p in args.pids.split(",") if p] or [server.pid]
            await asyncio.to_thread(wait_healthy, args.url, 120)
            return await measure(args, path, pids)
        finally:
            if server is not None:
                server.terminate()
                server.wait(timeout=30)


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sessions", type=int, default=3)
    p.add_argument("--cycles", type=int, default=2, help="rounds of uploads then closes (is freed memory reused?)")
    p.add_argument("--words", type=int, default=1_000_000)
    p.add_argument("--d-model", type=int, default=20)
    p.add_argument("--settle", type=float, default=75, help="seconds of RSS samples after the sessions close")
    p.add_argument("--action-timeout", type=float, default=180)
    p.add_argument("--port", type=int, default=8597)
    p.add_argument("--url", help="an app already running (then give --pids)")
    p.add_argument("--pids", default="")
    return p.parse_args()


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(parse())), indent=2))
