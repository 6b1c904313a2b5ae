"""What a load run measured and its JSON summary, shared by the browser client (bench/bench_load.py)
and the protocol client (bench/bench_load_protocol.py), so the two summaries compare field for field."""

from __future__ import annotations

from dataclasses import dataclass, field

from bench.load_corpus import hostile_summary


@dataclass
class Results:
    times: dict[str, list[float]] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)
    rounds: dict[str, int] = field(default_factory=lambda: {"ok": 0, "failed": 0, "timed_out": 0, "not_run": 0})
    exceptions: list[str] = field(default_factory=list)
    crosstalk: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    hostile: list[dict] = field(default_factory=list)
    cpu_marks: list[float] = field(default_factory=list)

    def record(self, action: str, seconds: float) -> None:
        self.times.setdefault(action, []).append(seconds)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


def summarize_times(results: Results) -> dict:
    out = {}
    for action in sorted(set(results.times) | set(results.failed)):
        values = results.times.get(action, [])
        row = {"n": len(values), "failed": results.failed.get(action, 0)}
        if values:
            row.update(p50_s=round(percentile(values, 0.5), 3), p95_s=round(percentile(values, 0.95), 3))
            row["max_s"] = round(max(values), 3)
        out[action] = row
    return out


def load_summary(results: Results, seconds: float, cpu: float | None, rss_before, peaks: dict) -> dict:
    """The JSON summary of a load run, the same fields for the browser and the protocol client."""
    actions = sum(len(v) for v in results.times.values())
    return {
        "wall_s": round(seconds, 1),
        "actions": summarize_times(results),
        "rounds": results.rounds,
        "exceptions": results.exceptions,
        "crosstalk": results.crosstalk,
        "errors": results.errors[:40],
        "server": {
            "cpu_s": round(cpu, 2) if cpu is not None else None,
            "cpu_s_per_action": round(cpu / actions, 3) if cpu is not None and actions else None,
            "rss_mb_before": [round(x) for x in rss_before],
            "rss_mb_peak": [round(peaks.get("own", 0)), round(peaks.get("tree", 0))],
        },
        "hostile": hostile_summary(results.hostile),
    }
