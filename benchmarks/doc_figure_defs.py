"""The figures the docs quote (see benchmarks/doc_figures.py), each from one committed JSON.

A figure is a JSON file under reports/ and either a path into it with a format
(`at("modes[mode=eager].latency.median_ms", "{:.4f} ms")`) or a function of the parsed JSON,
for counts and ranges over many records. Nothing here measures: it only reads what a benchmark,
a sweep or an example run committed.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import doc_figure_replication, doc_figure_reruns, doc_figure_training
from benchmarks.doc_figure_base import Block, Figure, Make, at, of, resolve, span

# --- infer_loop: the committed example report the README walks through ---------------------

EXAMPLE = "reports/examples/infer_loop/report.json"


def _speedup(report: dict[str, Any]) -> str:
    eager = resolve(report, "modes[mode=eager].latency.median_ms")
    default = resolve(report, "modes[mode=default].latency.median_ms")
    return f"{eager / default:.2f}x"


def _pooled_iqr(report: dict[str, Any]) -> str:
    """Each mode's IQR of its pooled blocks, a share of its median."""
    shares = []
    for mode in report["modes"]:
        latency = mode.get("latency") or {}
        if latency.get("median_ms") and latency.get("iqr_ms") is not None:
            shares.append(f"{mode['mode']} {latency['iqr_ms'] / latency['median_ms']:.0%}")
    return ", ".join(shares)


EXCERPT_WIDTH = 80  # columns the console excerpt is rendered in
# The paragraphs of `advisor show` quoted, by their first words, each cut before a line that
# matches its stop pattern (None: whole).
EXCERPT = (("compile is", None), ("What to do first:", r"^2\s"), ("Graph breaks", None))


# A script's report: its header (the script, the measured callable, the survey) first.
SCRIPT_EXCERPT = (("advisor:", None), ("compile is", None), ("Tried, not worth it:", None))


def console_excerpt(path: Path, excerpt: tuple[tuple[str, str | None], ...] = EXCERPT) -> str:
    """Paragraphs of `advisor show REPORT` at EXCERPT_WIDTH columns, as a fenced block."""
    env = {**os.environ, "COLUMNS": str(EXCERPT_WIDTH)}
    out = subprocess.run(
        [sys.executable, "-m", "advisor", "show", str(path)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=Path(__file__).resolve().parent.parent,
    ).stdout
    paragraphs = [p.strip("\n") for p in out.split("\n\n")]
    quoted = []
    for start, stop in excerpt:
        hits = [p for p in paragraphs if p.startswith(start)]
        if len(hits) != 1:
            raise ValueError(f"`advisor show` has {len(hits)} paragraphs starting {start!r}")
        lines = hits[0].splitlines()
        cut = [i for i, line in enumerate(lines) if stop and re.match(stop, line)]
        if cut:
            lines = [*lines[: cut[0]], "[...]"]
        quoted.append("\n".join(lines))
    return "```text\n" + "\n\n".join(quoted) + "\n```\n"


# --- benchmarks -----------------------------------------------------------------------------

ISOLATION = "reports/benchmarks/isolation/isolation.json"


def _isolated_runs(data: dict[str, Any]) -> str:
    walls = sorted(r["wall_s"] for r in data["runs"] if r["isolate"])
    return " and ".join(f"{w:.1f} s" for w in walls)


def _run_count(data: dict[str, Any]) -> str:
    counts = Counter(r["isolate"] for r in data["runs"])
    return f"{counts[False]} runs in-process, {counts[True]} isolated"


def _isolation_medians(data: dict[str, Any]) -> str:
    values = [
        v for r in data["runs"] for v in r["median_ms"].values() if isinstance(v, (int, float))
    ]
    return span(values, "{:.2f}", " ms")


ENGINES = "reports/benchmarks/sweep_engines/sweep_engines.json"


def _engine_ratios(data: dict[str, Any]) -> str:
    """Each target's eager and default median against the one-at-a-time run's."""
    engines = data["engines"]
    base = {t["name"]: t for t in engines["local, 1 worker"]["targets"]}
    ratios = [
        t[key] / base[t["name"]][key]
        for name, run in engines.items()
        if name != "local, 1 worker"
        for t in run["targets"]
        for key in ("eager_ms", "default_ms")
    ]
    return span(ratios, "{:.2f}", "x")


ACCURACY = "reports/benchmarks/accuracy/accuracy.json"


def _checked(cases: list[dict[str, Any]], key: str = "within") -> str:
    checked = [c for c in cases if c[key] is not None]
    return of(sum(bool(c[key]) for c in checked), len(checked))


def _within(case_set: str | None, key: str = "within") -> Make:
    def make(data: dict[str, Any]) -> str:
        cases = [c for c in data["cases"] if case_set is None or c["set"] == case_set]
        return _checked(cases, key)

    return make


def _first_right(half: str | None) -> Make:
    def make(data: dict[str, Any]) -> str:
        judged = [c for c in data["cases"] if c["first_action_ok"] is not None]
        judged = [c for c in judged if half is None or c["half"] == half]
        return of(sum(bool(c["first_action_ok"]) for c in judged), len(judged))

    return make


def _accuracy_wall(data: dict[str, Any]) -> str:
    return f"{sum(p['wall_s'] for p in data['merged_from']) / 60:.0f} minutes"


def _default_ratio(data: dict[str, Any]) -> str:
    """The advisor run's default median against the reference A/B's, over the cases with
    both (the same compiled code, two processes minutes apart)."""
    pairs = [
        (c["default_ms"] / c["reference_default_ms"], c["name"])
        for c in data["cases"]
        if c.get("default_ms") and c.get("reference_default_ms") and c["set"] != "upstream"
    ]
    ratios = sorted(r for r, _ in pairs)
    q1, _, q3 = statistics.quantiles(ratios, n=4)
    top = max(pairs)
    return (
        f"the middle half of {len(ratios)} cases within {q1:.2f}-{q3:.2f}x, "
        f"all within {ratios[0]:.2f}-{top[0]:.0f}x (the highest: {top[1]})"
    )


# --- sweeps ---------------------------------------------------------------------------------

ZOOS = {
    "tzoo": "reports/sweeps/transformers-zoo",
    "libzoo": "reports/sweeps/library-zoo",
    "trainzoo": "reports/sweeps/training-zoo",
}

# How a top action's kind reads in a list of counts ("a knob on 3").
ACTION_WORDS = {
    "keep": "nothing to fix",
    "knob": "a Dynamo config knob",
    "eager": "run it eagerly",
    "fullgraph": "`fullgraph=True`",
    "disable": "a measured `torch.compiler.disable` placement",
    "regional": "a measured regional placement",
    "upstream": "a library change",
    "guards": "skipping guard evaluation",
    "isolate": "isolating a call (estimated)",
    "code": "a code change (estimated)",
}


def _ok(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in data["models"] if m["status"] == "ok"]


def _first_actions(data: dict[str, Any]) -> str:
    kinds = Counter(
        m["top_action"]["action"]["kind"] if m["top_action"] else "none" for m in _ok(data)
    )
    ranked = sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{ACTION_WORDS.get(kind, kind)} on {n}" for kind, n in ranked)


def _count(pred: Callable[[dict[str, Any]], bool]) -> Make:
    return lambda data: str(sum(bool(pred(m)) for m in _ok(data)))


def _model_step(name: str) -> Make:
    """A model's default median and the step after its top action."""

    def make(data: dict[str, Any]) -> str:
        model = resolve(data, f"models[name={name}]")
        return f"{model['default_ms']:.2f} -> {model['top_action']['action']['step_ms']:.2f} ms"

    return make


def _guard_shares(data: dict[str, Any]) -> str:
    shares = [
        m["top_action"]["action"]["saving_ms"] / m["step_ms"]
        for m in _ok(data)
        if m["top_action"] and m["top_action"]["action"]["kind"] == "guards"
    ]
    return span([s * 100 for s in shares], "{:.0f}", "%")


def _top_root_causes(data: dict[str, Any], n: int = 5) -> str:
    top = data["root_causes"][:n]
    models = ", ".join(f"`{m}`" for r in top for m in r["models"])
    return f"{models} ({span([r['total_share'] * 100 for r in top], '{:.0f}', '%')} of the step)"


def _sweep_minutes(index: dict[str, Any]) -> str:
    walls = [t["wall_s"] for t in index["targets"] if t.get("wall_s") is not None]
    return f"{sum(walls) / 60:.0f} minutes over {len(walls)} targets"


def _zoo_figures(key: str, folder: str) -> dict[str, Figure]:
    sweep, index = f"{folder}/sweep.json", f"{folder}/index.json"
    return {
        f"{key}.targets": Figure(sweep, lambda d: str(len(d["models"]))),
        f"{key}.broken": Figure(sweep, _count(lambda m: m["n_breaks"] > 0)),
        f"{key}.slower": Figure(
            sweep, _count(lambda m: m["speedup_default"] is not None and m["speedup_default"] < 1)
        ),
        f"{key}.first_actions": Figure(sweep, _first_actions),
        f"{key}.minutes": Figure(index, _sweep_minutes),
    }


TZOO = f"{ZOOS['tzoo']}/sweep.json"


def _example_figures(name: str, report: str) -> dict[str, Figure]:
    """The figures the README quotes from a committed example report."""
    return {
        f"{name}.eager_ms": Figure(report, at("modes[mode=eager].latency.median_ms", "{:.4f} ms")),
        f"{name}.default_ms": Figure(
            report, at("modes[mode=default].latency.median_ms", "{:.4f} ms")
        ),
        f"{name}.speedup": Figure(report, _speedup),
        f"{name}.pooled_iqr": Figure(report, _pooled_iqr),
        f"{name}.wall_s": Figure(report, at("wall_s", "{:.1f} s")),
    }


FIGURES: dict[str, Figure] = {
    **_example_figures("infer_loop", EXAMPLE),
    "isolation.in_process_s": Figure(ISOLATION, at("summary.wall_in_process_s", "{:.1f} s")),
    "isolation.isolated_s": Figure(ISOLATION, at("summary.wall_isolated_s", "{:.1f} s")),
    "isolation.extra_s": Figure(ISOLATION, at("summary.extra_s", "+{:.1f} s")),
    "isolation.ratio": Figure(ISOLATION, at("summary.ratio", "{:.2f}x")),
    "isolation.processes": Figure(ISOLATION, at("summary.processes")),
    "isolation.runs": Figure(ISOLATION, _run_count),
    "isolation.isolated_runs": Figure(ISOLATION, _isolated_runs),
    "isolation.medians": Figure(ISOLATION, _isolation_medians),
    "engines.one_s": Figure(ENGINES, at("engines.local, 1 worker.wall_s", "{:.0f} s")),
    "engines.two_s": Figure(ENGINES, at("engines.local, 2 workers.wall_s", "{:.0f} s")),
    "engines.ray_s": Figure(ENGINES, at("engines.ray.wall_s", "{:.0f} s")),
    "engines.ratios": Figure(ENGINES, _engine_ratios),
    "accuracy.runs": Figure(ACCURACY, lambda d: str(len(d["merged_from"]))),
    "accuracy.minutes": Figure(ACCURACY, _accuracy_wall),
    "accuracy.within_raw": Figure(ACCURACY, _within(None)),
    "accuracy.within_shares": Figure(ACCURACY, _within(None, "within_share")),
    "accuracy.scenarios_raw": Figure(ACCURACY, _within("scenarios")),
    "accuracy.scenarios_shares": Figure(ACCURACY, _within("scenarios", "within_share")),
    "accuracy.training_raw": Figure(ACCURACY, _within("training")),
    "accuracy.first_right": Figure(ACCURACY, _first_right(None)),
    "accuracy.tuning_right": Figure(ACCURACY, _first_right("tuning")),
    "accuracy.heldout_right": Figure(ACCURACY, _first_right("held-out")),
    "accuracy.default_ratio": Figure(ACCURACY, _default_ratio),
    "tzoo.ran": Figure(f"{ZOOS['tzoo']}/index.json", at("counts.ok")),
    "tzoo.ok": Figure(TZOO, at("counts.ok")),
    "libzoo.default_failed": Figure(
        f"{ZOOS['libzoo']}/sweep.json", _count(lambda m: m["default_ms"] is None)
    ),
    "tzoo.missing": Figure(TZOO, at("counts.missing")),
    "tzoo.dbrx": Figure(TZOO, _model_step("dbrx")),
    "tzoo.tapas": Figure(TZOO, _model_step("tapas")),
    "tzoo.guard_shares": Figure(TZOO, _guard_shares),
    "tzoo.top_root_causes": Figure(TZOO, _top_root_causes),
}
for _key, _folder in ZOOS.items():
    FIGURES.update(_zoo_figures(_key, _folder))


FIGURES.update(doc_figure_replication.figures())
FIGURES.update(doc_figure_reruns.figures())
FIGURES.update(doc_figure_training.figures())

BLOCKS: dict[str, Block] = {
    "infer_loop.console": Block(EXAMPLE, lambda p: console_excerpt(p, SCRIPT_EXCERPT)),
}
