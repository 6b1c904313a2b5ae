"""Server memory when many sessions paste long reviews at once, and after they leave.

Run: python bench/bench_long_reviews.py [--sessions 40] [--words 1000] [--settle 30]

Starts its own server (one streamlit process, 1 torch thread), then opens ``--sessions`` protocol
sessions (bench/load_protocol.py: Streamlit's own websocket protocol, no browser), each with a
different ~``--words``-word text made of IMDB test reviews (``../shared/data/aclImdb.tar.gz``;
without it, words drawn from the bundled vocabulary). Each session opens the Playground with its
text, then the Attention page, and waits for its heatmap. Reported (JSON): server RSS before, peak
while the sessions are open, right after they close and ``--settle`` seconds later; sessions that
finished and failed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import tarfile
import time
import urllib.parse

from shared import ROOT  # noqa: F401  (puts the repository on sys.path)

from bench.load_protocol import ProtocolSession  # noqa: E402
from bench.load_server import rss_mb, sample_rss, start_server, wait_healthy  # noqa: E402
from tests.browser_server import free_port  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "aclImdb.tar.gz"


def imdb_texts(count: int, words: int) -> list[str]:
    """``count`` different texts of about ``words`` words, each a run of consecutive test reviews."""
    texts, current = [], []
    with tarfile.open(DATA, "r:gz") as archive:
        for member in archive:
            if not (member.isfile() and "/test/" in member.name and member.name.endswith(".txt")):
                continue
            review = archive.extractfile(member).read().decode("utf-8", "replace").replace("<br />", " ")
            current.extend(review.split())
            if len(current) >= words:
                texts.append(" ".join(current[:words]))
                current = []
                if len(texts) == count:
                    return texts
    return texts


def vocabulary_texts(count: int, words: int) -> list[str]:
    vocab = (ROOT / "assets" / "models" / "imdb-sentiment" / "vocab.txt").read_text(encoding="utf-8").split("\n")
    rng = random.Random(0)
    return [" ".join(rng.choice(vocab[2:5000]) for _ in range(words)) for _ in range(count)]


async def one_session(url: str, text: str, timeout: float) -> str:
    """Playground with the text, then Attention until its heatmap: 'ok' or what failed."""
    session = ProtocolSession(url, timeout)
    try:
        query = urllib.parse.urlencode({"lang": "en", "text": text})
        await session.open("playground", query, lambda v: v.widget("text", "text_area") is not None)
        await session.switch("attention", lambda v: v.heatmap() is not None)
        return "ok"
    except Exception as err:  # noqa: BLE001 - reported, not raised
        return f"{type(err).__name__}: {err}"[:200]
    finally:
        await session.close()


async def run(args) -> dict:
    port = free_port()
    server, url = start_server(port, ROOT), f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, 180, server)
        pids = [server.pid]
        texts = imdb_texts(args.sessions, args.words) if DATA.exists() else []
        source = "IMDB test reviews" if len(texts) == args.sessions else "bundled vocabulary"
        if source != "IMDB test reviews":
            texts = vocabulary_texts(args.sessions, args.words)
        await one_session(url, "the film was fine", args.timeout)  # a warm server: models loaded
        before = rss_mb(pids)[0]
        peaks, stop = {}, asyncio.Event()
        sampler = asyncio.create_task(sample_rss(pids, peaks, stop))
        start = time.monotonic()

        async def delayed(i: int, text: str) -> str:
            await asyncio.sleep(args.ramp * i / max(1, args.sessions))
            return await one_session(url, text, args.timeout)

        outcomes = await asyncio.gather(*(delayed(i, text) for i, text in enumerate(texts)))
        wall = time.monotonic() - start
        closed = rss_mb(pids)[0]
        await asyncio.sleep(args.settle)
        stop.set()
        await sampler
        return {
            "sessions": args.sessions,
            "words_per_text": args.words,
            "texts": source,
            "ok": outcomes.count("ok"),
            "failed": [o for o in outcomes if o != "ok"][:10],
            "wall_s": round(wall, 1),
            "rss_mb": {
                "before": round(before),
                "peak": round(peaks.get("own", 0)),
                "just_after_close": round(closed),
                f"after_{args.settle:g}s": round(rss_mb(pids)[0]),
            },
        }
    finally:
        server.terminate()
        server.wait(timeout=30)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sessions", type=int, default=40)
    p.add_argument("--words", type=int, default=1000)
    p.add_argument("--ramp", type=float, default=20, help="seconds over which the sessions open")
    p.add_argument("--settle", type=float, default=30, help="seconds to wait after the sessions close")
    p.add_argument("--timeout", type=float, default=300, help="seconds one session may wait for a run")
    print(json.dumps(asyncio.run(run(p.parse_args())), indent=1))


if __name__ == "__main__":
    main()
