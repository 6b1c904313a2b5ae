"""Peak memory and time of ``python -m transformer inspect`` on the first N IMDB test reviews.

Each command runs in its own child process (1 thread, output to /dev/null); its peak resident
memory is the child's ``ru_maxrss`` (getrusage), read by a fresh wrapper process so earlier
children do not count. For scale, ``python -m transformer.text.evaluate`` runs on the same reviews
(written as a small aclImdb/ folder). Reads ``../shared/data/aclImdb.tar.gz`` (or
``$ATTENTION_LAB_IMDB``)::

    nice -n 10 python bench/bench_cli.py --reviews 1000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from transformer.datasets.imdb import default_imdb_path, load_imdb  # noqa: E402

WRAPPER = """
import resource, subprocess, sys, time
start = time.perf_counter()
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
seconds = time.perf_counter() - start
peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(done.returncode, seconds, peak_kb, done.stderr.decode()[-300:].replace(chr(10), " "), sep="\\t")
"""


def measure(command: list[str]) -> dict:
    """{'seconds', 'peak_mb'} of ``command`` run alone in a child with one thread."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, *command], capture_output=True, text=True, env=env, cwd=ROOT, check=True
    )
    code, seconds, peak_kb, err = done.stdout.rstrip("\n").split("\t")
    if code != "0":
        raise RuntimeError(f"{' '.join(command)} failed ({code}): {err}")
    return {"seconds": round(float(seconds), 1), "peak_mb": round(int(peak_kb) / 1024)}


def _median(runs: list[dict]) -> dict:
    return {key: sorted(r[key] for r in runs)[len(runs) // 2] for key in runs[0]}


def write_inputs(folder: Path, count: int) -> tuple[Path, Path, int]:
    """The first ``count`` test reviews as one-per-line text and as an aclImdb/ folder; (file, folder, tokens)."""
    reviews = load_imdb(default_imdb_path(), "test")[:count]
    lines = folder / "reviews.txt"
    # IMDB reviews hold no newline; a stray \r or \n would split one review in two here
    lines.write_text("".join(r.text.replace("\r", " ").replace("\n", " ") + "\n" for r in reviews), encoding="utf-8")
    for i, review in enumerate(reviews):
        label = "pos" if review.label == 1 else "neg"
        target = folder / "aclImdb" / "test" / label / f"{i}_{7 if review.label else 2}.txt"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(review.text, encoding="utf-8")
    return lines, folder / "aclImdb", sum(len(r.text.split()) for r in reviews)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="assets/models/imdb-sentiment")
    p.add_argument("--reviews", type=int, default=1000)
    p.add_argument("--repeats", type=int, default=1, help="rounds of all commands, alternating; medians reported")
    p.add_argument("--skip-all", action="store_true", help="leave out --attention all (its JSON is GBs)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        lines, folder, words = write_inputs(Path(tmp), args.reviews)
        inspect = [sys.executable, "-m", "transformer", "inspect", "--checkpoint", args.model, "--device", "cpu"]
        runs = {
            "evaluate": [
                sys.executable,
                "-m",
                "transformer.text.evaluate",
                "--model",
                args.model,
                "--data",
                str(folder),
            ],
            "inspect --attention none": [*inspect, "--text-file", str(lines), "--attention", "none"],
        }
        if not args.skip_all:
            runs["inspect --attention all"] = [*inspect, "--text-file", str(lines), "--attention", "all"]
        started = time.time()
        rounds = [{name: measure(command) for name, command in runs.items()} for _ in range(args.repeats)]
        # alternating rounds, medians: the machine is shared, so one slow moment should not decide a ratio
        results = {name: _median([r[name] for r in rounds]) for name in runs}
    report = {"reviews": args.reviews, "words": words, "results": results, "wall_s": round(time.time() - started)}
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
