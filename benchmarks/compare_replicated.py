"""A/A and injected slowdowns for `advisor compare` on replicated runs (the default protocol).

Every run is a plain `advisor run TARGET --no-what-if` (profile process, then eager, default and
fullgraph each in its own worker processes, 4 waves, interleaved round by round), saved; every
comparison is `advisor.gate.compare.compare_reports` of two saved reports, as `advisor compare`
makes it. Nothing here times anything itself.

- A/A: each scenario run `--runs` times back to back; consecutive runs are pairs in which
  nothing changed, so any "significant" row is a false positive. The pair counts as a false
  positive when any of its rows (each mode, each mode over eager) is called significant: that
  is what a user reading `advisor compare` would see.
- Injected: `benchmarks/fixtures/slowed.py` wraps a scenario's model in a busy-wait of a fixed
  fraction of the model's own time (10%: every mode 10% slower), run alternately with the same
  wrapper waiting 0%; each slowed run is compared with the unslowed run just before it, and it
  is found when a mode's row is significant and slower. Consecutive unslowed runs are A/A pairs
  too. (A uniform slowdown leaves each mode over eager unchanged, so only the modes' own rows
  can find it.)

    python -m benchmarks.compare_replicated --threads 1        # about 25 minutes here
    python -m benchmarks.compare_replicated --threads 0        # torch's default threads
    python -m benchmarks.compare_replicated --threads 1 --judge-only   # re-judge saved runs

Runs go to reports/compare-runs-threads<T>/ (not committed); the comparisons to
reports/benchmarks/compare_replicated/threads<T>.{json,md}, with each pair's raw numbers.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from tabulate import tabulate

from advisor.core.model import Report
from advisor.gate.baseline import baseline_from_report
from advisor.gate.check import Thresholds, check
from advisor.gate.compare import ModeDelta, compare_reports
from advisor.render.report_io import load_report
from benchmarks.machine import load1, wait_until_quiet

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "reports" / "benchmarks" / "compare_replicated"
SLOWED = "benchmarks/fixtures/slowed.py:workload"
AA_SCENARIOS = ("item_in_decode_loop", "data_dependent_branch", "clean_mlp")
INJECT_SCENARIO = "print_logging"


@dataclass(frozen=True)
class Run:
    label: str  # the run folder's name
    target: str
    params: tuple[str, ...]  # --param values


@dataclass(frozen=True)
class Row:
    kind: str  # "A/A" or "injected +10%"
    scenario: str
    before: str
    after: str
    mode: str
    before_ms: float | None
    after_ms: float | None
    ratio: float | None
    ci: tuple[float | None, float | None]
    p_value: float | None
    method: str
    significant: bool
    verdict: str
    reason: str


def plan(scenarios: tuple[str, ...], runs: int, inject_pairs: int, fraction: float) -> list[Run]:
    out = [Run(f"{s}-{i}", s, ()) for s in scenarios for i in range(runs)]
    for i in range(inject_pairs):
        for frac, tag in ((0.0, "base"), (fraction, "slow")):
            params = (f"scenario={INJECT_SCENARIO}", f"fraction={frac}")
            out.append(Run(f"{INJECT_SCENARIO}-{tag}-{i}", SLOWED, params))
    return out


def measure(run: Run, folder: Path, threads: int) -> None:
    out = folder / run.label
    if (out / "report.json").is_file():
        return  # measured by an earlier invocation: resumable
    command = [sys.executable, "-m", "advisor", "run", run.target, "--no-what-if", "--quiet"]
    command += [x for p in run.params for x in ("--param", p)]
    command += ["--threads", str(threads)] if threads > 0 else []
    started = time.monotonic()
    print(f"{run.label} (load {load1():.2f}) ...", file=sys.stderr, flush=True)
    subprocess.run([*command, "--out", str(out)], check=True, cwd=ROOT)
    print(f"  {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)


def pairs(
    scenarios: tuple[str, ...], runs: int, inject_pairs: int, fraction: float
) -> list[tuple[str, str, str, str]]:
    """(kind, scenario, before label, after label)."""
    out = [("A/A", s, f"{s}-{i}", f"{s}-{i + 1}") for s in scenarios for i in range(runs - 1)]
    base = [f"{INJECT_SCENARIO}-base-{i}" for i in range(inject_pairs)]
    out += [("A/A", INJECT_SCENARIO, a, b) for a, b in itertools.pairwise(base)]
    kind = f"injected {fraction:+.0%}"
    out += [
        (kind, INJECT_SCENARIO, f"{INJECT_SCENARIO}-base-{i}", f"{INJECT_SCENARIO}-slow-{i}")
        for i in range(inject_pairs)
    ]
    return out


# How each run's process levels are read before Welch's t (see advisor.gate.compare):
# "round": each block over the machine reference's block of the same round (what advisor does);
# "wave": each process median over the reference's median in its wave; "raw": as they are.
METHODS = ("round", "wave", "raw")


@functools.cache
def saved_run(run: Path) -> Report:
    """A run folder's report, read once: every pair, reading and summary uses the same runs."""
    return load_report(run / "report.json")


def as_read(report: Report, method: str) -> Report:
    """The report with the machine reference hidden as `method` asks, to compare the methods
    on the same runs."""
    if method == "round":
        return report
    modes = []
    for mode in report.modes:
        lat = mode.latency
        if lat is not None and lat.replication is not None:
            rep = replace(lat.replication, over_machine=())
            rep = rep if method == "wave" else replace(rep, machine_ms=())
            mode = replace(mode, latency=replace(lat, replication=rep))
        modes.append(mode)
    return replace(report, modes=tuple(modes))


def rows_of(
    kind: str, scenario: str, before: str, after: str, folder: Path, method: str = "round"
) -> list[Row]:
    first = as_read(saved_run(folder / before), method)
    second = as_read(saved_run(folder / after), method)
    return [_row(kind, scenario, before, after, d) for d in compare_reports(first, second).modes]


def _row(kind: str, scenario: str, before: str, after: str, d: ModeDelta) -> Row:
    return Row(
        kind, scenario, before, after, d.mode, d.before_ms, d.after_ms, d.ratio,
        (d.ci_low, d.ci_high), d.p_value, d.method, d.significant, d.verdict, d.reason,
    )  # fmt: skip


CHECK_LIMIT = 0.05  # `advisor check --max-slowdown`: compare's own minimum effect


def check_slower(before: str, after: str, folder: Path) -> bool:
    """Whether `advisor check` of the second run against a baseline made from the first finds
    the default mode slower (its other findings do not concern timing)."""
    first, second = saved_run(folder / before), saved_run(folder / after)
    root = str(ROOT)
    result = check(
        baseline_from_report(first, root), second, Thresholds(max_slowdown=CHECK_LIMIT), root
    )
    return any(f.kind == "slower" for f in result.findings)


def found(rows: list[Row]) -> bool:
    """An injected slowdown is found when a mode's own row calls it significant and slower."""
    return any(r.significant and r.verdict == "slower" and "/" not in r.mode for r in rows)


def summary(by_pair: dict[tuple[str, str, str, str], list[Row]]) -> dict[str, object]:
    aa = [rows for key, rows in by_pair.items() if key[0] == "A/A"]
    injected = [rows for key, rows in by_pair.items() if key[0] != "A/A"]
    return {
        "aa_pairs": len(aa),
        "aa_pairs_significant": sum(any(r.significant for r in rows) for rows in aa),
        "aa_rows": sum(len(rows) for rows in aa),
        "aa_rows_significant": sum(r.significant for rows in aa for r in rows),
        "injected_pairs": len(injected),
        "injected_found": sum(found(rows) for rows in injected),
        "injected_mode_rows": sum(1 for rows in injected for r in rows if "/" not in r.mode),
        "injected_mode_rows_found": sum(
            1
            for rows in injected
            for r in rows
            if "/" not in r.mode and r.significant and r.verdict == "slower"
        ),
    }


def machine_speed(folder: Path) -> dict[str, object]:
    """How far the metronome's speed moved between the waves of each run (max / min - 1 of its
    wave medians, from the eager arm's record), over every run in the folder."""
    moved = []
    for report_file in sorted(folder.glob("*/report.json")):
        eager = saved_run(report_file.parent).mode("eager")
        rep = eager.latency.replication if eager and eager.latency else None
        if rep is not None and len(rep.machine_ms) > 1 and min(rep.machine_ms) > 0:
            moved.append(max(rep.machine_ms) / min(rep.machine_ms) - 1)
    ordered = sorted(moved)
    return {
        "runs": len(moved),
        "median": ordered[len(ordered) // 2] if ordered else None,
        "max": ordered[-1] if ordered else None,
        "per_run": moved,
    }


def runs_span(folder: Path) -> str:
    """When the saved runs were made and how busy the machine was, from their own reports."""
    reports = [saved_run(f.parent) for f in sorted(folder.glob("*/report.json"))]
    if not reports:
        return ""
    times = sorted(r.created_at for r in reports if r.created_at)
    loads = [r.environment.load_average[0] for r in reports if r.environment.load_average]
    return (
        f"{len(reports)} runs made from {times[0]} to {times[-1]} (their reports' times); "
        f"one-minute load average at their starts {min(loads):.2f}-{max(loads):.2f}."
    )


def level_spread(folder: Path) -> dict[str, object]:
    """The noise the comparison works against, from the eager and default arms' levels over
    the machine reference: the spread between the processes of one run (coefficient of
    variation, the median over runs) and between runs of one target (the CV of the runs' mean
    levels), by scenario."""
    by_target: dict[str, dict[str, list[list[float]]]] = {}
    for report_file in sorted(folder.glob("*/report.json")):
        run = report_file.parent.name.rsplit("-", 1)[0]
        report = saved_run(report_file.parent)
        for name in ("eager", "default"):
            mode = report.mode(name)
            rep = mode.latency.replication if mode and mode.latency else None
            if rep is not None and len(rep.over_machine) > 1:
                by_target.setdefault(run, {}).setdefault(name, []).append(list(rep.over_machine))
    out: dict[str, object] = {}
    for run, modes in by_target.items():
        for name, runs in modes.items():
            within = sorted(statistics.stdev(v) / statistics.fmean(v) for v in runs)
            means = [statistics.fmean(v) for v in runs]
            out[f"{run} {name}"] = {
                "runs": len(runs),
                "within_run_cv": within[len(within) // 2],
                "between_runs_cv": statistics.stdev(means) / statistics.fmean(means)
                if len(means) > 1
                else None,
            }
    return out


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x - 1:+.1%}"


def table(rows: list[Row]) -> str:
    body = [
        [
            r.kind, r.scenario, f"{r.before} -> {r.after}", r.mode,
            "-" if r.before_ms is None else f"{r.before_ms:.4g}",
            "-" if r.after_ms is None else f"{r.after_ms:.4g}",
            _pct(r.ratio), f"[{_pct(r.ci[0])}, {_pct(r.ci[1])}]",
            "-" if r.p_value is None else f"{r.p_value:.2g}", r.method,
            "yes" if r.significant else "no", r.reason or r.verdict,
        ]
        for r in rows
    ]  # fmt: skip
    headers = ["kind", "scenario", "runs", "row", "before", "after", "change", "95% CI", "p",
               "method", "significant", "why not / verdict"]  # fmt: skip
    return tabulate(body, headers, tablefmt="github")


def render(args: argparse.Namespace, result: dict[str, object], rows: list[Row]) -> str:
    s = result["summary"]
    assert isinstance(s, dict)
    threads = f"{args.threads} pinned thread(s)" if args.threads > 0 else "torch's default threads"
    return (
        f"# `advisor compare` on replicated runs: A/A and injected {args.fraction:+.0%}\n\n"
        f"`python -m benchmarks.compare_replicated --threads {args.threads}`: every run a plain "
        f"`advisor run TARGET --no-what-if` ({threads}, the default replicated protocol), every "
        "comparison `compare_reports` of two saved reports, as `advisor compare` makes it. "
        f"{result['machine']}\n\n"
        f"- A/A: {s['aa_pairs_significant']} of {s['aa_pairs']} pairs called significant "
        f"(any row); {s['aa_rows_significant']} of {s['aa_rows']} rows.\n"
        f"- Injected {args.fraction:+.0%}: found (a mode's row significant and slower) in "
        f"{s['injected_found']} of {s['injected_pairs']} pairs; "
        f"{s['injected_mode_rows_found']} of {s['injected_mode_rows']} mode rows.\n\n"
        f"`advisor check --max-slowdown {CHECK_LIMIT}` on the same pairs (a baseline from the "
        f"first run): A/A called slower {result['check']['aa_slower']} of "
        f"{result['check']['aa_pairs']}; injected found {result['check']['injected_found']} of "
        f"{result['check']['injected_pairs']}.\n\n"
        "The same runs, each process's level read three ways before Welch's t: over the "
        "machine reference block by block (`round`, what advisor does), over its median in "
        "the wave (`wave`), or as it is (`raw`):\n\n"
        f"{methods_table(result)}\n\n"
        "Every comparison (`round`):\n\n"
        f"{table(rows)}\n"
    )


def methods_table(result: dict[str, object]) -> str:
    methods = result["methods"]
    assert isinstance(methods, dict)
    body = [
        [m, f"{s['aa_pairs_significant']} of {s['aa_pairs']}",
         f"{s['aa_rows_significant']} of {s['aa_rows']}",
         f"{s['injected_found']} of {s['injected_pairs']}",
         f"{s['injected_mode_rows_found']} of {s['injected_mode_rows']}"]
        for m, s in methods.items()
    ]  # fmt: skip
    headers = ["read", "A/A pairs significant", "A/A rows significant", "injected found",
               "injected mode rows found"]  # fmt: skip
    return tabulate(body, headers, tablefmt="github")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1, help="0: torch's default threads")
    parser.add_argument("--runs", type=int, default=6, help="back-to-back runs per A/A scenario")
    parser.add_argument("--scenarios", nargs="*", default=list(AA_SCENARIOS))
    parser.add_argument("--inject-pairs", type=int, default=6)
    parser.add_argument("--fraction", type=float, default=0.10)
    parser.add_argument("--judge-only", action="store_true", help="measure nothing")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    tag = f"threads{args.threads}"
    folder = ROOT / "reports" / f"compare-runs-{tag}"
    scenarios = tuple(args.scenarios)
    started = time.time()
    machine = ""
    if not args.judge_only:
        quiet = wait_until_quiet(600)
        for run in plan(scenarios, args.runs, args.inject_pairs, args.fraction):
            measure(run, folder, args.threads)
        machine = (
            f"Measured {time.strftime('%Y-%m-%d %H:%M', time.gmtime(started))} UTC, "
            f"{quiet.note()}; load at the end {load1():.2f}; "
            f"wall time {(time.time() - started) / 60:.1f} min; "
            f"{os.cpu_count()} CPUs."
        )
    keys = pairs(scenarios, args.runs, args.inject_pairs, args.fraction)
    by_method = {m: {key: rows_of(*key, folder, m) for key in keys} for m in METHODS}
    by_pair = by_method["round"]
    rows = [r for rs in by_pair.values() for r in rs]
    saved = args.out / f"{tag}.json"
    if args.judge_only and saved.is_file():
        machine = str(json.loads(saved.read_text()).get("machine", ""))
    machine = machine or runs_span(folder)
    checks = {key: check_slower(key[2], key[3], folder) for key in keys}
    result = {
        "machine": machine,
        "machine_speed": machine_speed(folder),
        "level_spread": level_spread(folder),
        "check": {
            "max_slowdown": CHECK_LIMIT,
            "aa_pairs": sum(k[0] == "A/A" for k in keys),
            "aa_slower": sum(v for k, v in checks.items() if k[0] == "A/A"),
            "injected_pairs": sum(k[0] != "A/A" for k in keys),
            "injected_found": sum(v for k, v in checks.items() if k[0] != "A/A"),
        },
        "summary": summary(by_pair),
        "methods": {m: summary(by_method[m]) for m in METHODS},
        "rows": [asdict(r) for r in rows],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    saved.write_text(json.dumps(result, indent=1) + "\n")
    text = render(args, result, rows)
    (args.out / f"{tag}.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
