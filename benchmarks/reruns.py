"""Does a rerun agree? Each target of `benchmarks/manifests/reruns.toml` run three times with
`advisor run` (the replicated protocol), rounds outermost (a target's runs are a whole pass of
the list apart), then its first action measured by an independent replicated A/B
(`benchmarks.reference_ab`: fresh processes, rounds outermost, no code shared with
advisor/measure).

Per target it reports: the first action of each run (the same every time?); for each measured
action, each run's saving as a share of its own run's default median (the host's speed moves
between runs, so raw ms are beside, not compared) with its 95% interval, and whether each run's
interval covers the other runs' savings; and the first action's saving against the reference's:
within 25% of it, or inside the reference's own 95% interval across rounds.

    python -m benchmarks.reruns [--runs 3] [--names pyg_gat ...] [--rounds 5]
    python -m benchmarks.reruns --judge-only        # re-read saved runs and references

Runs go to reports/reruns-runs/ (not committed, resumable: a run folder with its report is
kept); results to reports/benchmarks/reruns/reruns.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.core.model import Action, Report
from advisor.judge.pipeline import judge
from advisor.render.report_io import load_measurements, load_report
from advisor.sweep.manifest import tomllib
from benchmarks import reference_ab
from benchmarks.machine import load1, wait_until_quiet
from benchmarks.reruns_render import TITLE, render
from benchmarks.study_output import write_study

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "benchmarks" / "manifests" / "reruns.toml"
RUNS = ROOT / "reports" / "reruns-runs"
OUT = ROOT / "reports" / "benchmarks" / "reruns"
TOLERANCE = 0.25  # a saving share within 25% of the reference's...
MIN_STEP_SHARE = 0.10  # ...checked where the saving is at least 10% of the step


@dataclass(frozen=True)
class Target:
    set: str
    name: str
    half: str
    target: str  # for reference_ab: module:factory or path.py:factory
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def advisor_target(self) -> str:
        """A built-in scenario by its name; anything else as it is."""
        if self.target.startswith("scenarios."):
            return self.target.removeprefix("scenarios.").partition(":")[0]
        return self.target


def load_manifest(path: Path = MANIFEST) -> tuple[str, dict[str, Any], list[Target]]:
    """The manifest's title (the results' heading), its `advisor run` options and targets;
    raises ValueError (one line) for a file that is missing or is not such a manifest."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        targets = [Target(**t) for t in data.get("targets", [])]
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, TypeError) as exc:
        raise ValueError(f"{path}: not a reruns manifest ({exc})") from None
    return data.get("title", TITLE), dict(data.get("defaults", {})), targets


def load_saved(path: Path) -> dict[str, Any]:
    """The results saved by an earlier run (a part re-measured keeps the rest beside it), or an
    empty set; raises ValueError (one line) for a file that is not such results, which is then
    left as it is."""
    if not path.is_file():
        return {"targets": {}}
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not saved reruns results ({exc})") from None
    if not isinstance(saved, dict) or not isinstance(saved.get("targets", {}), dict):
        raise ValueError(f"{path}: not saved reruns results (no targets table)")
    return saved


def advisor_command(t: Target, options: dict[str, Any], out: Path) -> list[str]:
    command = [sys.executable, "-m", "advisor", "run", t.advisor_target, "--quiet"]
    for key, value in t.params.items():
        command += ["--param", f"{key}={value}"]
    for key, value in options.items():
        command += [f"--{key.replace('_', '-')}", str(value)]
    return [*command, "--out", str(out)]


def run_advisor(t: Target, options: dict[str, Any], index: int, runs_dir: Path = RUNS) -> None:
    out = runs_dir / f"{t.name}-{index}"
    if (out / "report.json").is_file():
        return
    started = time.monotonic()
    print(f"{t.name} run {index} (load {load1():.2f}) ...", file=sys.stderr, flush=True)
    proc = subprocess.run(advisor_command(t, options, out), cwd=ROOT, check=False)
    print(f"  {time.monotonic() - started:.0f} s, exit {proc.returncode}", file=sys.stderr)


# --- reading the runs --------------------------------------------------------------------------


def action_key(a: Action) -> str:
    """What makes two runs' actions the same action."""
    if a.knob:
        return f"{a.kind}:{a.knob}"
    if a.where is not None:
        return f"{a.kind}:{Path(a.where.file).name}:{a.where.line}"
    if a.subjects:
        return f"{a.kind}:" + ",".join(s.path for s in a.subjects)
    return a.kind


def default_ms(report: Report) -> float | None:
    mode = report.mode("default")
    return mode.latency.median_ms if mode and mode.latency else None


def first_action(report: Report) -> str:
    return action_key(report.actions[0]) if report.actions else "none"


def run_actions(report: Report) -> dict[str, dict[str, Any]]:
    """Each measured action: its saving, its interval (where a rerun would put it) and the one
    its run's waves alone give, all also as shares of the default median."""
    level = default_ms(report)
    out: dict[str, dict[str, Any]] = {}
    for a in report.actions:
        if not a.measured or a.saving_ms is None or not level:
            continue
        ci, own = a.saving_ci_ms, a.run_ci_ms
        out.setdefault(action_key(a), {
            "saving_ms": a.saving_ms,
            "ci_ms": list(ci) if ci else None,
            "share": a.saving_ms / level,
            "ci_share": [ci[0] / level, ci[1] / level] if ci else None,
            "run_ci_share": [own[0] / level, own[1] / level] if own else None,
            "measurable": a.measurable,
            "processes": a.processes,
            "first_call_s": a.first_call_s,
        })  # fmt: skip
    return out


def coverage(runs: list[dict[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """For each action measured (and measurable) in a run and measured in another: whether the
    first run's interval covers the second's saving share (ordered pairs), and whether the
    interval of its waves alone (no run-level spread) would have."""
    out = []
    for i, mine in enumerate(runs):
        for key, saving in mine.items():
            if not saving["measurable"] or saving["ci_share"] is None:
                continue
            own = saving.get("run_ci_share")
            for j, theirs in enumerate(runs):
                other = theirs.get(key)
                if j == i or other is None:
                    continue
                lo, hi = saving["ci_share"]
                out.append({
                    "action": key, "run": i, "other": j, "share": saving["share"],
                    "ci_share": saving["ci_share"], "other_share": other["share"],
                    "covered": lo <= other["share"] <= hi,
                    "run_ci_share": own,
                    "covered_by_waves": own is not None and own[0] <= other["share"] <= own[1],
                })  # fmt: skip
    return out


def share_spread(targets: dict[str, Any]) -> dict[str, Any]:
    """How far a saving's share moves from run to run beyond what its runs' waves show: for
    each action measured in two runs, d = the difference of their shares and se each run's
    standard error (the 95% half-width of its waves' interval over t(0.975, processes - 1));
    the run-level standard deviation is sqrt(mean(d^2 - se_1^2 - se_2^2) / 2) (method of
    moments). What `policy.SAVING_RUN_SPREAD` is set from."""
    from scipy.stats import t as student

    terms = []
    for target in targets.values():
        runs = target["actions"]
        for i in range(len(runs)):
            for j in range(i + 1, len(runs)):
                for key in set(runs[i]) & set(runs[j]):
                    a, b = runs[i][key], runs[j][key]
                    if not a.get("run_ci_share") or not b.get("run_ci_share"):
                        continue
                    se = [
                        (x["run_ci_share"][1] - x["run_ci_share"][0])
                        / 2
                        / float(student.ppf(0.975, max(1, (x["processes"] or 2) - 1)))
                        for x in (a, b)
                    ]
                    terms.append((a["share"] - b["share"]) ** 2 - se[0] ** 2 - se[1] ** 2)
    if not terms:
        return {"pairs": 0, "run_sd": None}
    return {"pairs": len(terms), "run_sd": math.sqrt(max(0.0, sum(terms) / len(terms) / 2))}


def first_call_spread(targets: dict[str, Any]) -> dict[str, Any]:
    """How far an action's first call (its workers' compile, median worker) moves from run to
    run: the standard deviation of its log over the runs that measured it, pooled over actions
    by degrees of freedom. What `policy.FIRST_CALL_RUN_SPREAD` is set from."""
    squares, dof, actions = 0.0, 0, 0
    for target in targets.values():
        keys = {k for run in target["actions"] for k in run}
        for key in keys:
            logs = [
                math.log(run[key]["first_call_s"])
                for run in target["actions"]
                if (run.get(key) or {}).get("first_call_s")
            ]
            if len(logs) < 2:
                continue
            mean = sum(logs) / len(logs)
            squares += sum((x - mean) ** 2 for x in logs)
            dof += len(logs) - 1
            actions += 1
    return {"actions": actions, "log_sd": math.sqrt(squares / dof) if dof else None}


# --- the reference -----------------------------------------------------------------------------


def reference_variant(key: str) -> str | None:
    """The reference A/B's variant suffix for an action key; None where the action has no
    independent form (a placement, a patch, a no-op)."""
    kind, _, rest = key.partition(":")
    if kind in ("eager", "fullgraph"):
        return f"@{kind}"
    if kind == "knob" and "=" in rest:
        name, _, value = rest.partition("=")
        value = {"True": "true", "False": "false"}.get(value, value)
        return f"@default+{name}={value}"
    return None


def measure_reference(t: Target, key: str, rounds: int, threads: int) -> dict[str, Any] | None:
    suffix = reference_variant(key)
    if suffix is None:
        return None
    variants = {"default": f"{t.target}@default", "action": f"{t.target}{suffix}"}
    data = reference_ab.measure(variants, rounds, threads, 1.0, "default", t.params)
    return {"action": key, **data["savings"]["action"], "default_ms": data["variants"]}


def reference_check(share: float, reference: dict[str, Any]) -> dict[str, Any]:
    ref, ci = reference.get("mean_share"), reference.get("ci95_share")
    if ref is None:
        return {"within": None, "inside": None, "error": None}
    error = share / ref - 1 if ref else None
    within = error is not None and abs(error) <= TOLERANCE
    inside = ci is not None and ci[0] <= share <= ci[1]
    return {"within": within, "inside": inside, "error": error}


# --- one target, then all ----------------------------------------------------------------------


def judged_report(folder: Path) -> Report:
    """The run judged by today's rules from its saved measurements (its report.json where the
    measurements are not there)."""
    if (folder / "measurements.json").is_file():
        return judge(load_measurements(folder))
    return load_report(folder)


def judge_target(
    t: Target, runs: int, reference: dict[str, Any] | None, runs_dir: Path = RUNS
) -> dict[str, Any]:
    reports = [judged_report(runs_dir / f"{t.name}-{i}") for i in range(runs)
               if (runs_dir / f"{t.name}-{i}" / "report.json").is_file()]  # fmt: skip
    actions = [run_actions(r) for r in reports]
    firsts = [first_action(r) for r in reports]
    first = Counter(firsts).most_common(1)[0][0] if firsts else "none"
    checks = []
    if reference is not None:
        for i, measured in enumerate(actions):
            saving = measured.get(reference["action"])
            if saving is not None:
                check = reference_check(saving["share"], reference)
                checks.append({"run": i, "share": saving["share"], **check})
    return {
        "set": t.set, "name": t.name, "half": t.half, "runs": len(reports),
        "default_ms": [default_ms(r) for r in reports],
        "wall_s": [r.wall_s for r in reports],
        "first_actions": firsts, "same_first": len(set(firsts)) == 1 and len(firsts) == runs,
        "first": first, "actions": actions, "coverage": coverage(actions),
        "reference": reference, "reference_checks": checks,
    }  # fmt: skip


def _command(saved: str | None, args: argparse.Namespace, argv: list[str] | None) -> str:
    """How the results were made: this command, or the saved one with a partial re-measure
    (`--names`) after it; a re-judging (`--judge-only`) keeps the saved one."""
    command = " ".join(["python -m benchmarks.reruns", *(argv or sys.argv[1:])])
    if saved and args.judge_only:
        return saved
    return f"{saved}, then {command}" if saved and args.names else command


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--names", nargs="*")
    parser.add_argument("--rounds", type=int, default=5, help="reference rounds")
    parser.add_argument("--judge-only", action="store_true")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--manifest", type=Path, default=MANIFEST)
    parser.add_argument("--runs-dir", type=Path, default=RUNS, help="where the runs are kept")
    args = parser.parse_args(argv)
    try:
        title, options, targets = load_manifest(args.manifest)
        saved = load_saved(args.out / "reruns.json")
    except ValueError as exc:
        print(f"benchmarks.reruns: {exc}", file=sys.stderr)
        return 2
    targets = [t for t in targets if not args.names or t.name in args.names]
    started, quiet = time.time(), None
    if not args.judge_only:
        quiet = wait_until_quiet(600)
        for index in range(args.runs):
            for t in targets:
                run_advisor(t, options, index, args.runs_dir)
    results = dict(saved.get("targets", {}))
    for t in targets:
        reference = (results.get(t.name) or {}).get("reference")
        judged = judge_target(t, args.runs, reference, args.runs_dir)
        if (
            not args.judge_only
            and judged["runs"]
            and (reference is None or reference.get("action") != judged["first"])
        ):
            reference = measure_reference(t, judged["first"], args.rounds, options["threads"])
            judged = judge_target(t, args.runs, reference, args.runs_dir)
        results[t.name] = judged
    machine = saved.get("machine", "")
    if quiet is not None:
        when = (
            f"measured from {time.strftime('%Y-%m-%d %H:%M', time.gmtime(started))} UTC, "
            f"{quiet.note()}; wall time {(time.time() - started) / 60:.0f} min"
        )
        # a part of the list measured again keeps the rest's record beside its own
        part = args.names and machine
        machine = f"{machine}; {', '.join(args.names)} {when}" if part else when
    result = {
        "title": title,
        "command": _command(saved.get("command"), args, argv),
        "machine": machine,
        "options": options,
        "targets": results,
        "share_spread": share_spread(results),
        "first_call_spread": first_call_spread(results),
    }
    write_study(args.out, "reruns", result, render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
