"""A/A benchmark for `advisor compare`: how often does it call no change a change, and does it
still find real ones?

Each scenario is measured several times back to back, every run a fresh harness run (Dynamo
reset, default mode compiled again, eager and default timed interleaved with the default
settings: adaptive sampling to a ±2% interval of the median, 30 s budget). Consecutive runs of
the same workload are A/A pairs: any "significant" change between them is a false positive.
Every pair is judged by the old rule (Mann-Whitney p < 0.05 and the bootstrap interval of the
ratio of medians excludes 1) and by the new one (also beyond the 5% minimum effect and the
run-to-run noise, see `advisor.gate.compare`).

Then real changes are injected into one scenario: its model wrapped so each call busy-waits a
fixed fraction of the time the model itself took (10%: a 10% slowdown; 100%: 2x), in eager and
compiled alike (the wrapper runs eagerly around the model compiled in place). Each slowed run is
compared with the unslowed run just before it (the same wrapper, waiting 0%).

Run from the repository root (about 20-30 minutes on 2 CPU cores):

    .venv/bin/python -m benchmarks.compare_noise
    .venv/bin/python -m benchmarks.compare_noise --runs 3 print_logging   # a quick look

Results go to a new folder reports/benchmarks/compare_noise-<time>/ (compare_noise.md, .json).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from advisor.core.model import LatencyStats, Settings, to_jsonable
from advisor.core.stats import drift
from advisor.gate.compare import Rule, mode_delta
from advisor.measure import environment, harness, torch_adapter
from advisor.measure.quiet import muted_dynamo_warnings
from advisor.measure.workload import Workload, load_target
from advisor.render import report_io
from benchmarks.fixtures.slowed import slowed_call
from benchmarks.machine import latency_summary, load1, wait_until_quiet

SCENARIOS = ("print_logging", "item_in_decode_loop", "data_dependent_branch", "clean_mlp")
INJECT_SCENARIO = "print_logging"
SLOWDOWNS = (0.10, 1.0)  # busy-wait this fraction of the model's own time: +10%, 2x
MODES = ("eager", "default")
OLD_RULE_FAILS = ("p", "interval")  # the reasons the old rule also had


@dataclass(frozen=True)
class RunRecord:
    """One harness run: per mode the median, spread, blocks and drift."""

    label: str
    load_before: float | None
    wall_s: float
    modes: dict[str, dict[str, Any]]


@dataclass(frozen=True)
class PairRecord:
    kind: str  # "A/A" or "injected +10%" / "injected 2x"
    scenario: str
    before: int  # run indices
    after: int
    mode: str
    ratio: float | None
    ci: tuple[float | None, float | None]
    p_value: float | None
    noise: float | None
    old_significant: bool
    new_significant: bool
    verdict: str
    reason: str


def slowed(workload: Workload, fraction: float) -> Workload:
    """The workload with each call busy-waiting `fraction` of its model's own time; the model
    is compiled in place, so the wait is eager in every mode."""
    model = workload.fn
    if not isinstance(model, torch.nn.Module) or workload.compiled_module is not None:
        raise SystemExit(f"{workload.name}: injecting needs a workload whose callable is a module")

    step = slowed_call(model, fraction)
    return Workload(step, workload.args, workload.kwargs, workload.name, compiled_module=model)


def measure(workload: Workload, settings: Settings, label: str) -> tuple[RunRecord, dict]:
    torch_adapter.reset_dynamo()
    load = load1()
    start = time.perf_counter()
    with muted_dynamo_warnings():
        options = harness.HarnessOptions(modes=MODES, memory=False)
        run = harness.measure(workload, settings, "cpu", options=options)
    wall = time.perf_counter() - start
    stats = {m.mode: m.latency for m in run.modes if m.latency is not None}
    summary = {mode: _summary(lat) for mode, lat in stats.items()}
    print(
        f"  {label}: "
        + ", ".join(
            f"{m} {s['median_ms']:.4f} ms ({s['blocks']} blocks)" for m, s in summary.items()
        ),
        file=sys.stderr,
        flush=True,
    )
    return RunRecord(label, load, wall, summary), stats


def _summary(lat: LatencyStats) -> dict[str, Any]:
    return {**latency_summary(lat), "drift": drift(lat.samples_ms)}


def judge(
    kind: str, scenario: str, index: tuple[int, int], before: dict, after: dict, rule: Rule
) -> list[PairRecord]:
    out = []
    for mode in MODES:
        if mode not in before or mode not in after:
            continue
        d = mode_delta(mode, before[mode], after[mode], rule)
        out.append(
            PairRecord(
                kind,
                scenario,
                *index,
                mode,
                d.ratio,
                (d.ci_low, d.ci_high),
                d.p_value,
                d.noise,
                d.reason not in OLD_RULE_FAILS,
                d.significant,
                d.verdict,
                d.reason,
            )
        )
    return out


def aa_pairs(
    scenario: str, runs: int, settings: Settings, rule: Rule, log: list[RunRecord]
) -> list[PairRecord]:
    print(f"[{scenario}] {runs} runs back to back", file=sys.stderr, flush=True)
    workload = load_target(scenario, "cpu")
    measured = []
    for i in range(runs):
        record, stats = measure(workload, settings, f"{scenario} #{i}")
        log.append(record)
        measured.append(stats)
    pairs = []
    for i in range(runs - 1):
        pairs += judge("A/A", scenario, (i, i + 1), measured[i], measured[i + 1], rule)
    return pairs


def injected_pairs(
    scenario: str, repeats: int, settings: Settings, rule: Rule, log: list[RunRecord]
) -> list[PairRecord]:
    print(f"[{scenario}] injected slowdowns", file=sys.stderr, flush=True)
    plain = load_target(scenario, "cpu")
    pairs: list[PairRecord] = []
    for r in range(repeats):
        for fraction in SLOWDOWNS:
            name = "2x" if fraction == 1.0 else f"+{fraction:.0%}"
            base_record, base = measure(slowed(plain, 0.0), settings, f"{scenario} base {r}")
            slow_record, slow = measure(slowed(plain, fraction), settings, f"{scenario} {name} {r}")
            log += [base_record, slow_record]
            index = (len(log) - 2, len(log) - 1)
            pairs += judge(f"injected {name}", scenario, index, base, slow, rule)
    return pairs


def summarise(pairs: list[PairRecord]) -> dict[str, Any]:
    aa = [p for p in pairs if p.kind == "A/A"]
    by_pair: dict[tuple[str, int], list[PairRecord]] = {}
    for p in aa:
        by_pair.setdefault((p.scenario, p.before), []).append(p)
    injected = [p for p in pairs if p.kind != "A/A"]
    return {
        "aa_pairs": len(by_pair),
        "aa_comparisons": len(aa),
        "aa_false_old": sum(p.old_significant for p in aa),
        "aa_false_new": sum(p.new_significant for p in aa),
        "aa_pairs_false_old": sum(any(p.old_significant for p in g) for g in by_pair.values()),
        "aa_pairs_false_new": sum(any(p.new_significant for p in g) for g in by_pair.values()),
        "injected": len(injected),
        "injected_found_new": sum(p.new_significant and p.verdict == "slower" for p in injected),
        "injected_found_old": sum(p.old_significant and (p.ratio or 0) > 1 for p in injected),
    }


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{(value - 1) * 100:+.1f}%"


def _rows(pairs: list[PairRecord]) -> list[list[str]]:
    return [
        [
            p.kind,
            p.scenario,
            f"{p.before}->{p.after}",
            p.mode,
            _pct(p.ratio),
            f"[{_pct(p.ci[0])}, {_pct(p.ci[1])}]",
            f"{p.p_value:.2g}" if p.p_value is not None else "-",
            f"±{p.noise * 100:.1f}%" if p.noise is not None else "-",
            "yes" if p.old_significant else "no",
            "yes" if p.new_significant else "no",
            p.reason or "significant",
        ]
        for p in pairs
    ]


PAIR_HEADERS = ("kind", "scenario", "runs", "mode", "change", "95% CI", "p",
                "run-to-run noise", "old rule", "new rule", "new rule says")  # fmt: skip


def render(
    summary: dict[str, Any], pairs: list[PairRecord], runs: list[RunRecord], header: list[str]
) -> str:
    from tabulate import tabulate

    def table(headers: tuple[str, ...], rows: list[list[str]]) -> str:
        return tabulate(rows, headers=list(headers), tablefmt="github", disable_numparse=True)

    run_rows = [
        [str(i), r.label, "-" if r.load_before is None else f"{r.load_before:.2f}",
         f"{r.wall_s:.1f}", *(_mode_cell(r.modes.get(m)) for m in MODES)]
        for i, r in enumerate(runs)
    ]  # fmt: skip
    return (
        "\n".join(
            [
                *header,
                "",
                "## Result",
                "",
                *_result_lines(summary),
                "",
                "## Comparisons",
                "",
                table(PAIR_HEADERS, _rows(pairs)),
                "",
                "## Runs",
                "",
                table(("#", "run", "load before", "wall s", *MODES), run_rows),
                "",
                "Mode cells: median ms; IQR/median; ±95% interval of the median (target met or "
                "not); blocks; drift (range of the 4 epoch medians / median).",
            ]
        )
        + "\n"
    )


def _result_lines(s: dict[str, Any]) -> list[str]:
    return [
        f"- A/A: {s['aa_pairs']} pairs ({s['aa_comparisons']} mode comparisons). Called "
        f"significant by the old rule: {s['aa_false_old']}/{s['aa_comparisons']} comparisons "
        f"({s['aa_pairs_false_old']}/{s['aa_pairs']} pairs); by the new rule: "
        f"{s['aa_false_new']}/{s['aa_comparisons']} comparisons "
        f"({s['aa_pairs_false_new']}/{s['aa_pairs']} pairs).",
        f"- Injected slowdowns found (significant and slower) by the new rule: "
        f"{s['injected_found_new']}/{s['injected']} comparisons (old rule: "
        f"{s['injected_found_old']}/{s['injected']}).",
    ]


def _mode_cell(m: dict[str, Any] | None) -> str:
    if m is None:
        return "-"
    met = {True: "met", False: "NOT met", None: "-"}[m["target_met"]]
    spread = m["iqr_over_median"] or 0.0
    reach = m["ci_half_width"] or 0.0
    moved = "-" if m["drift"] is None else f"{m['drift'] * 100:.1f}%"
    return (
        f"{m['median_ms']:.4f}; IQR {spread * 100:.1f}%; ±{reach * 100:.1f}% ({met}); "
        f"{m['blocks']}; drift {moved}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*", default=list(SCENARIOS))
    parser.add_argument("--runs", type=int, default=6, help="back-to-back runs per scenario")
    parser.add_argument("--inject-repeats", type=int, default=2)
    parser.add_argument("--min-effect", type=float, default=0.05)
    parser.add_argument("--budget", type=float, default=Settings.budget_s, help="per timing, s")
    parser.add_argument("--threads", type=int, default=None, help="as `advisor run --threads`")
    parser.add_argument("--wait", type=float, default=600.0, help="most seconds to wait for quiet")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    out = args.out or report_io.default_run_dir(Path("reports/benchmarks"), "compare_noise")
    report_io.check_writable(out, ("compare_noise.md", "compare_noise.json"))
    quiet = wait_until_quiet(args.wait)
    settings = Settings(budget_s=args.budget, threads=args.threads)
    rule = Rule(min_effect=args.min_effect)
    started = time.perf_counter()
    runs: list[RunRecord] = []
    pairs: list[PairRecord] = []
    for scenario in args.scenarios:
        pairs += aa_pairs(scenario, args.runs, settings, rule, runs)
    pairs += injected_pairs(INJECT_SCENARIO, args.inject_repeats, settings, rule, runs)
    wall = time.perf_counter() - started
    _write(out, args, quiet.note(), wall, settings, rule, pairs, runs)
    return 0


def _write(
    out: Path,
    args: argparse.Namespace,
    quiet: str,
    wall: float,
    settings: Settings,
    rule: Rule,
    pairs: list[PairRecord],
    runs: list[RunRecord],
) -> None:
    env = environment.describe("cpu")
    summary = summarise(pairs)
    header = [
        "# A/A and injected changes: `advisor compare`'s significance rule",
        "",
        f"Measured {time.strftime('%Y-%m-%d %H:%M')} on {env.device_name}, {env.cpu_threads} "
        f"threads, torch {env.torch}, Python {env.python}; {quiet}; load average at the end "
        f"{', '.join(f'{v:.2f}' for v in env.load_average)}. Wall time {wall / 60:.1f} min.",
        "",
        f"Settings: {args.runs} back-to-back runs per scenario ({', '.join(args.scenarios)}), "
        f"modes eager and default, {settings.threads or 'default'} torch thread(s)"
        f"{' pinned' if settings.threads else ''}, adaptive sampling (at least "
        f"{settings.repeats} rounds, "
        f"±{settings.target_ci:.0%} target, {settings.budget_s:g} s budget); injected into "
        f"{INJECT_SCENARIO}: +10% and 2x, {args.inject_repeats} times each. Old rule: p < "
        f"{rule.alpha} and the ratio's 95% interval excludes 1. New rule: also |change| > "
        f"{rule.min_effect:.0%} (minimum effect) and > the run-to-run noise.",
    ]
    text = render(summary, pairs, runs, header)
    payload = {
        "environment": to_jsonable(env),
        "quiet": quiet,
        "wall_s": wall,
        "settings": to_jsonable(settings),
        "rule": asdict(rule),
        "summary": summary,
        "pairs": [asdict(p) for p in pairs],
        "runs": [asdict(r) for r in runs],
    }
    report_io.write_files(
        out, {"compare_noise.md": text, "compare_noise.json": json.dumps(payload, indent=2)}
    )
    print(text)
    print(f"written to {out}/", file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())
