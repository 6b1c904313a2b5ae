"""What the load test (bench/bench_load.py) feeds the app: each session's own sentences and upload,
and the bad texts and hostile checkpoint files that other sessions feed it meanwhile.

Each file is built here, from scratch, in a folder the caller gives. Two of them would leave a trace
if anything in them ran or escaped: ``runs_code.pt`` and ``exec_pickle.pt`` try to create the
``ran_marker`` file, and ``traversal.zip`` names paths outside any folder it is unpacked into.
:func:`traces` lists what exists afterwards (it must be empty).
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import pickle
import random
import struct
import time
import zipfile
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
NOUNS = "plot acting music story ending script cast camera dialogue pacing".split()
ADJECTIVES = "great awful boring funny brilliant dull charming terrible moving silly".split()


def sentence(session: int, round_: int) -> str:
    """A sentence of known words, unique per (session, round); 'the <noun> was <adj>' names the session."""
    noun, adj = NOUNS[session // 10 % 10], ADJECTIVES[session % 10]
    return f"the {noun} was {adj} and the {NOUNS[round_ % 10]} felt {ADJECTIVES[(round_ // 10) % 10]}"


def signature(session: int) -> str:
    return sentence(session, 0).split(" and ")[0]


def expected_labels(text: str) -> list[str]:
    """The heatmap's row labels: every word of these sentences is in the bundled vocabulary."""
    return [f"{i}:{tok}" for i, tok in enumerate(text.lower().split())]


def upload_bundle(folder: Path, session: int, app_dir: Path = ROOT) -> Path:
    """The app's own bundled model, zipped under a name of this session's (``loadtest-s<session>.zip``):
    a valid upload for whatever version of the app is being measured."""
    name = f"loadtest-s{session}"
    path = folder / f"{name}.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for file in sorted((app_dir / "assets" / "models" / "imdb-sentiment").iterdir()):
            archive.write(file, f"{name}/{file.name}")
    return path


BAD_TEXTS: dict[str, str] = {
    "one_mb_line": "great " * 175_000,  # ~1 MB on one line
    "control_chars": "".join(map(chr, range(32))) + "\u202e\u200b\ufeff\u0000the movie\x7f\x1b[31m was good",
    "markup": "<script>alert(1)</script> **bold** [x](javascript:alert(1)) $$\\frac{a}{b}$$ `code` | a | b |",
    "not_english": "영화가 정말 재미있었다 😀🎬 фильм был хорош 映画",
    "many_lines": "\n".join(f"line {i} was fine" for i in range(3000)),
    "one_long_token": "a" * 100_000,
    "only_punctuation": ".,;:!?" * 5_000,
}


class _SystemCall:
    """Unpickling this would run a shell command that creates the marker file."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _safetensors_bytes(header: dict, data: bytes = b"") -> bytes:
    raw = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack("<Q", len(raw)) + raw + data


def _valid_safetensors() -> bytes:
    header = {"encoder.weight": {"dtype": "F32", "shape": [64, 64], "data_offsets": [0, 64 * 64 * 4]}}
    return _safetensors_bytes(header, bytes(64 * 64 * 4))


def million_empty_tensors(n: int = 1_000_000) -> bytes:
    """A ~60 MB safetensors header listing ``n`` empty tensors (cheap to write, costly to parse naively)."""
    entries = ",".join(f'"t{i}":{{"dtype":"F32","shape":[0],"data_offsets":[0,0]}}' for i in range(n))
    raw = ("{" + entries + "}").encode()
    return struct.pack("<Q", len(raw)) + raw


def _lying_safetensors() -> bytes:
    """The header promises a 1 GB tensor; the file holds 16 bytes."""
    header = {"w": {"dtype": "F32", "shape": [16384, 16384], "data_offsets": [0, 16384 * 16384 * 4]}}
    return _safetensors_bytes(header, bytes(16))


def _exec_pickle(marker: str) -> bytes:
    """A hand-written protocol-2 pickle calling builtins.exec (what a malicious .pt would hold)."""
    code = f"open({marker!r}, 'w').write('ran')"
    return b"\x80\x02cbuiltins\nexec\nq\x00X" + struct.pack("<I", len(code)) + code.encode() + b"\x85R."


def _zip_bomb(unpacked_mb: int = 512) -> bytes:
    """A bundle zip whose model.safetensors unpacks to ``unpacked_mb`` MB of zeros (~0.5 MB packed)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("bomb/config.json", json.dumps({"kind": "classifier", "d_model": 16}))
        with archive.open("bomb/model.safetensors", "w", force_zip64=True) as member:
            zeros = bytes(1024**2)
            for _ in range(unpacked_mb):
                member.write(zeros)
    return out.getvalue()


def _traversal_zip(marker_dir: str) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("../../../../../../" + marker_dir.lstrip("/") + "/escaped.txt", "escaped")
        archive.writestr(marker_dir + "/absolute.txt", "escaped")
        archive.writestr("x/../../config.json", "{}")
        archive.writestr("config.json", json.dumps({"kind": "classifier"}))
    return out.getvalue()


def _torch_bytes(value: object) -> bytes:
    buffer = io.BytesIO()
    torch.save(value, buffer)
    return buffer.getvalue()


def hostile_files(folder: str | Path, marker_dir: str | Path) -> list[Path]:
    """Write the hostile checkpoints into ``folder``; traces of code running go to ``marker_dir``."""
    folder, marker_dir = Path(folder), Path(marker_dir)
    folder.mkdir(parents=True, exist_ok=True)
    marker_dir.mkdir(parents=True, exist_ok=True)
    ran = str(marker_dir / "ran_marker")
    valid = _valid_safetensors()
    files = {
        "runs_code.pt": _torch_bytes({"encoder.weight": torch.zeros(2), "x": _SystemCall(ran)}),
        "exec_pickle.pt": _exec_pickle(ran),
        "plain_pickle.pt": pickle.dumps({"a": [1, 2, 3]}),
        "truncated.safetensors": valid[: len(valid) // 2],
        "lying.safetensors": _lying_safetensors(),
        "huge_header_length.safetensors": struct.pack("<Q", 2**60) + b"{}",
        "million_empty.safetensors": million_empty_tensors(),
        "zip_bomb.zip": _zip_bomb(),
        "traversal.zip": _traversal_zip(str(marker_dir)),
        "random_bytes.pt": random.Random(0).randbytes(65_536),
        "text_named.pt": b"this is a text file, not a checkpoint\n" * 100,
        "empty.safetensors": b"",
        "many_tensors.pt": _torch_bytes({f"t{i}": torch.zeros(1) for i in range(50_000)}),
        # a 1.7 kB file whose one tensor claims 14,000 x 14,000 half floats (a stride-0 view)
        "stride0_fp16_bomb.pt": _torch_bytes(
            {"w": torch.zeros(1, dtype=torch.float16).as_strided((14000, 14000), (0, 0))}
        ),
    }
    paths = []
    for name, data in files.items():
        path = folder / name
        path.write_bytes(data)
        paths.append(path)
    return paths


def hostile_pictures(folder: str | Path) -> list[Path]:
    """Pictures for the Vision page's uploader (tests/test_hostile_pictures.py builds them): 1-bit
    decompression bombs of 30,000 and 15,000 pixels a side, a single-colour RGBA and a 16-bit
    5,000 x 5,000, a truncated and an animated PNG."""
    from tests.test_hostile_pictures import ATTACKS

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, (make, _, _) in ATTACKS.items():
        paths.append(folder / name)
        paths[-1].write_bytes(make())
    return paths


def traces(marker_dir: str | Path) -> list[str]:
    """Files that code from a hostile upload (or an escaping zip member) left behind: must be empty."""
    marker_dir = Path(marker_dir)
    return sorted(p.name for p in marker_dir.rglob("*") if p.is_file()) if marker_dir.exists() else []


# ---------- sessions that feed them to the app while others work ----------

OUTCOME = """() => {
  const main = document.querySelector('[data-testid=stMain]');
  if (!main) return null;
  if (main.querySelector('[data-testid=stException]')) return 'exception';
  const error = main.querySelector('[data-testid=stAlertContentError], [data-testid=stAlertContentWarning]');
  if (error) return 'refused: ' + error.innerText.slice(0, 160);
  if (main.querySelector('[data-testid=stBaseButton-primary]')) return 'accepted';
  return null; }"""
SETTLED = """() => !document.querySelector('[data-testid=stStatusWidget] [data-testid=stStatusWidgetRunningIcon]')
  && !!document.querySelector('[data-testid=stMain] textarea')"""


async def feed_file(context, url: str, path: Path, args) -> dict:
    """A new tab (a new server session) uploads one hostile file; what the page said, and how fast."""
    page = await context.new_page()
    page.set_default_timeout(args.action_timeout * 1000)
    try:
        await page.goto(f"{url}/checkpoints?lang=en", wait_until="domcontentloaded")
        chooser = page.locator("[data-testid=stMain] [data-testid=stFileUploader] input[type=file]").first
        await chooser.wait_for(state="attached")
        start = time.monotonic()
        await chooser.set_input_files(str(path))
        outcome = None
        while outcome is None and time.monotonic() - start < args.action_timeout:
            await asyncio.sleep(0.2)
            outcome = await page.evaluate(OUTCOME)
        return {"input": path.name, "outcome": outcome or "timed out", "s": round(time.monotonic() - start, 2)}
    finally:
        await page.close()


async def feed_text(context, url: str, name: str, text: str, args) -> dict:
    page = await context.new_page()
    page.set_default_timeout(args.action_timeout * 1000)
    try:
        await page.goto(f"{url}/playground?lang=en", wait_until="domcontentloaded")
        box = page.locator("[data-testid=stMain] textarea").first
        await box.fill(text)
        start = time.monotonic()
        await box.press("Control+Enter")
        await asyncio.sleep(1.0)
        await page.wait_for_function(SETTLED)
        shown = await page.locator("[data-testid=stException]").count()
        outcome = "exception" if shown else "ok"
        return {"input": name, "outcome": outcome, "s": round(time.monotonic() - start, 2)}
    finally:
        await page.close()


async def hostile_session(browser, url: str, number: int, args, rows: list[dict], files: list[Path], stop) -> None:
    """Feeds every hostile file and bad text, again and again, until the normal sessions are done."""
    context = await browser.new_context(viewport={"width": 1366, "height": 768})
    checkpoints = [p for p in files if p.suffix != ".png"]  # pictures: the protocol client's Vision page only
    inputs = [("file", p) for p in checkpoints] + [("text", item) for item in BAD_TEXTS.items()]
    step = number  # hostile sessions start at different inputs
    try:
        while not stop.is_set():
            kind, item = inputs[step % len(inputs)]
            step += 1
            try:
                if kind == "file":
                    row = await feed_file(context, url, item, args)
                else:
                    row = await feed_text(context, url, item[0], item[1], args)
            except Exception as err:
                row = {"input": str(item[0] if kind == "text" else item.name), "outcome": f"error: {err!s:.120}"}
            rows.append({"session": number, **row})
    finally:
        await context.close()


def hostile_summary(rows: list[dict]) -> dict:
    by_input: dict[str, dict] = {}
    for row in rows:
        entry = by_input.setdefault(row["input"], {"n": 0, "outcomes": {}, "max_s": 0.0})
        entry["n"] += 1
        outcome = row["outcome"].split(":")[0]
        entry["outcomes"][outcome] = entry["outcomes"].get(outcome, 0) + 1
        entry["max_s"] = max(entry["max_s"], row.get("s", 0.0))
        entry["example"] = row["outcome"][:160]
    return by_input
