"""Every hostile input once, one after another, against one server: what the page said, how fast,
and what it cost the server's memory.

Run: python bench/bench_load_hostile.py [--url URL --pids PID,...] [--only NAME ...]

The corpus is bench/load_corpus.py's: hostile checkpoint files (the Checkpoints page's uploader),
hostile pictures (the Vision page's uploader) and bad texts (the Playground's box), each from a
fresh protocol session (bench/load_protocol.py). While each input runs, the server process's own
RSS and its whole tree's (the reader children included) are sampled every 0.5 s. Printed (JSON):
per input the outcome ("refused: <message>", "accepted", "ok", "exception", "timed out"), seconds
from the upload (or the text sent) to the finished run, and the RSS before and at its peak;
then whether anything left a trace (code that ran, a file that escaped) and the RSS at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path

from shared import ROOT  # noqa: F401  (puts the repository on sys.path)

from bench.bench_load_protocol import feed_file, feed_picture, feed_text  # noqa: E402
from bench.bench_load_uploads import wait_until_up  # noqa: E402
from bench.load_corpus import BAD_TEXTS, hostile_files, hostile_pictures, traces  # noqa: E402
from bench.load_server import alive, load_average, rss_mb, sample_rss, start_server  # noqa: E402


async def one(url: str, kind: str, item, args, pids: list[int]) -> dict:
    peaks, stop = {}, asyncio.Event()
    before = rss_mb(pids)
    sampler = asyncio.create_task(sample_rss(pids, peaks, stop))
    try:
        if kind == "picture":
            row = await feed_picture(url, item, args)
        elif kind == "file":
            row = await feed_file(url, item, args)
        else:
            row = await feed_text(url, item[0], item[1], args)
    except Exception as err:  # noqa: BLE001 - the row says what happened
        row = {"input": item.name if isinstance(item, Path) else item[0], "outcome": f"error: {err!s:.160}"}
    finally:
        stop.set()
        await sampler
    return {
        "kind": kind,
        **row,
        "outcome": row["outcome"][:200],
        "rss_mb_before": [round(x) for x in before],
        "rss_mb_peak": [round(peaks.get("own", 0)), round(peaks.get("tree", 0))],
    }


async def run(args, url: str, pids: list[int], work: Path) -> dict:
    inputs = [("file", p) for p in hostile_files(work / "hostile", work / "traces")]
    inputs += [("picture", p) for p in hostile_pictures(work / "pictures")]
    inputs += [("text", item) for item in BAD_TEXTS.items()]
    if args.only:
        inputs = [(k, i) for k, i in inputs if (i.name if isinstance(i, Path) else i[0]) in args.only]
    rows = []
    for kind, item in inputs:
        rows.append(await one(url, kind, item, args, pids))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)  # progress
    await asyncio.sleep(args.settle)
    return {
        "inputs": rows,
        "exceptions": [r["input"] for r in rows if r["outcome"] == "exception" or r["outcome"].startswith("error")],
        "traces_of_hostile_code": traces(work / "traces"),
        "server_rss_mb_end": [round(x) for x in rss_mb(pids)],
        "server_alive": alive(pids),
        "load_average": load_average(),
    }


async def main(args) -> dict:
    work = Path(tempfile.mkdtemp(prefix="bench-hostile-"))
    server = None
    if args.url is None:
        args.url = f"http://127.0.0.1:{args.port}"
        server = start_server(args.port, ROOT)
    try:
        pids = [int(p) for p in args.pids.split(",") if p] or [server.pid]
        await wait_until_up(args.url)
        return await run(args, args.url, pids, work)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--action-timeout", type=float, default=90)
    p.add_argument("--settle", type=float, default=5)
    p.add_argument("--port", type=int, default=8598)
    p.add_argument("--url", help="an app already running (then give --pids)")
    p.add_argument("--pids", default="")
    p.add_argument("--only", nargs="*", help="only these inputs (file names or bad-text names)")
    return p.parse_args()


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(parse())), indent=1))
