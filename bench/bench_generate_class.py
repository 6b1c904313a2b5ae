"""A class generating at once (issue 48, item 5's last part): ``--sessions`` sessions open the Generate page on
the bundled SmolLM2 at the same moment, each with a prompt of its own, and then change their prompt
``--rounds`` times; every run writes 20 new tokens (the page's default) with the key/value cache.

A real server (``streamlit run``, the app as deployed) and protocol clients (bench/load_protocol.py: each a
browser session speaking Streamlit's WebSocket protocol, in one process apart from the server). Timed per run:
BackMsg sent -> script_finished of the run that shows the continuation (server work and transfer, no browser
rendering), divided by the 20 tokens it wrote: the seconds per generated token a student waits, with the page's
own work (every step's top tokens and attention rows) included. Beside it, one session alone on the server.
Served in all: the tokens the class wrote (sessions x runs x 20) over the wall time of the class's runs.

Before and after in one run (issue 55): ``--anchor DIR`` is a copy of the code before the change (e.g.
``git archive <commit>``, its assets/ linked); the anchor's server and this tree's are measured in turn,
``--repeats`` times each, one server at a time (``--anchor-off``: this tree with batching turned off,
ATTENTION_LAB_BATCH_DECODING=0, instead). The load average before and after each phase is recorded.

    python bench/bench_generate_class.py --sessions 20 --rounds 2 --out bench/results/generate_class.json
    python bench/bench_generate_class.py --anchor /tmp/before --out bench/results/generate_class_batched.json
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import time
import urllib.parse
from pathlib import Path

from shared import ROOT, save_report  # noqa: F401  (puts the repository on sys.path)

from bench.load_protocol import ProtocolSession  # noqa: E402
from bench.load_results import percentile  # noqa: E402
from bench.load_server import cpu_seconds, load_average, start_server, wait_healthy  # noqa: E402
from ui.continuation import NEW_TOKENS_CLASS  # noqa: E402
from ui.i18n import translate  # noqa: E402

NEW_TOKENS = 20  # the Generate page's default number of steps
PROMPT_LABEL = translate("generate.prompt_english", "en")  # SmolLM2's prompt box
SUBJECTS = ["The capital of France is", "My favourite film is", "The best way to learn", "Yesterday the class",
            "A transformer reads", "The weather in Seoul", "Our teacher said", "The museum opens"]  # fmt: skip


def prompt(session: int, round_: int) -> str:
    """A prompt of its own for each session and round (no two runs can share a cached result)."""
    return f"{SUBJECTS[(session + round_) % len(SUBJECTS)]} ({session}.{round_})"


def shows(text: str):
    """The view shows the continuation of ``text`` (the Generate page writes it as HTML)."""
    marker, needle = NEW_TOKENS_CLASS.encode(), text.split(" (")[0]
    return lambda view: (
        view.contains(needle) and any(marker in element.SerializeToString() for element in view.elements.values())
    )


async def session_runs(url: str, number: int, rounds: int, timeout: float) -> list[float]:
    """Seconds per generated token of each of this session's runs (the first: opening the page)."""
    session = ProtocolSession(url, timeout)
    times = []
    try:
        text = prompt(number, 0)
        start = time.monotonic()
        await session.open("generate", urllib.parse.urlencode({"lang": "en", "gen_prompt": text}), shows(text))
        times.append((time.monotonic() - start) / NEW_TOKENS)
        for round_ in range(1, rounds + 1):
            box = session.view.widget(PROMPT_LABEL, "text_area")
            if box is None:
                raise RuntimeError("no prompt box on the Generate page")
            text = prompt(number, round_)
            times.append(await session.set_value(box, text, shows(text)) / NEW_TOKENS)
    finally:
        await session.close()
    return times


def spread(values: list[float]) -> dict:
    ordered = sorted(values)
    return {"n": len(ordered), "p50": round(percentile(ordered, 0.5), 3), "p95": round(percentile(ordered, 0.95), 3),
            "max": round(ordered[-1], 3)}  # fmt: skip


async def measure(url: str, pid: int, args) -> dict:
    await session_runs(url, 999, args.rounds, args.timeout)  # warms the model cache
    alone = await session_runs(url, 998, args.rounds, args.timeout)
    cpu0, t0, load0 = cpu_seconds([pid]), time.monotonic(), load_average()
    together = await asyncio.gather(*(session_runs(url, i, args.rounds, args.timeout) for i in range(args.sessions)))
    wall = time.monotonic() - t0
    flat = [s for runs in together for s in runs]
    served = args.sessions * (args.rounds + 1) * NEW_TOKENS
    return {
        "sessions": args.sessions,
        "runs_per_session": args.rounds + 1,
        "new_tokens_per_run": NEW_TOKENS,
        "seconds_per_token_alone": spread(alone),
        "seconds_per_token_together": spread(flat),
        "first_run_together": spread([runs[0] for runs in together]),
        "wall_s": round(wall, 1),
        "tokens_per_s_served": round(served / wall, 1),
        "server_cpu_s": round(cpu_seconds([pid]) - cpu0, 1),
        "load_before": load0,
        "load_after": load_average(),
        "cpus": os.cpu_count(),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sessions", type=int, default=20)
    p.add_argument("--rounds", type=int, default=2, help="prompt changes after opening the page")
    p.add_argument("--timeout", type=float, default=600.0)
    p.add_argument("--port", type=int, default=random.randint(8700, 8799))
    p.add_argument("--out", default="bench/results/generate_class.json")
    p.add_argument("--anchor", help="a copy of the code before the change, measured in turn with this tree")
    p.add_argument("--anchor-off", action="store_true", help="the anchor: this tree with batching off")
    p.add_argument("--repeats", type=int, default=1, help="phases of each side (alternating)")
    args = p.parse_args()
    sides = [("this", Path(ROOT), {})]
    if args.anchor or args.anchor_off:
        anchor = Path(args.anchor) if args.anchor else Path(ROOT)
        sides.insert(0, ("anchor", anchor, {"ATTENTION_LAB_BATCH_DECODING": "0"} if args.anchor_off else {}))
    phases = [side for _ in range(args.repeats) for side in sides]
    reports = []
    for name, folder, env in phases:
        reports.append({"side": name, "tree": str(folder), "env": env, **phase(folder, env, args)})
        print(reports[-1])
    report = reports[0] if len(reports) == 1 else {"phases": reports}
    report["method"] = "\n\n".join(__doc__.split("\n\n")[1:3]).strip()
    print(save_report(report, args.out))


def phase(folder: Path, env: dict, args) -> dict:
    """One server from ``folder`` (with ``env``), measured, then stopped."""
    server = start_server(args.port, folder, env)
    try:
        url = f"http://127.0.0.1:{args.port}"
        wait_healthy(url, 240, server)
        return asyncio.run(measure(url, server.pid, args))
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
