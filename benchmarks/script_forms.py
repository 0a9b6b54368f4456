"""A script and its factory form measure the same thing (#28's done-when): each example of
`examples/scripts/` run through `advisor run SCRIPT` and through `advisor run
examples/scripts/factories.py:NAME`, one after the other, alone on the machine, one pinned
thread; then each form's first action and every mode's median against the other form's
replicated 95% interval. Also the script's own wall time (`python SCRIPT`, one thread) beside
the advisor's, for the cost of a script run.

    python -m benchmarks.script_forms [--out reports/benchmarks/scripts] [--only NAME]

Writes `script_forms.json` (every number, the raw medians and intervals) and `script_forms.md`.
Only the public command line is used; the reports are read as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ("infer_loop", "train_loop", "decorated")
MODES = ("eager", "default", "fullgraph")


@dataclass(frozen=True)
class FormResult:
    """One `advisor run` of one form: its wall time, first action and mode numbers."""

    target: str
    wall_s: float
    first_action: str
    first_kind: str
    medians_ms: dict[str, float]
    intervals_ms: dict[str, list[float]]
    process_medians_ms: dict[str, list[float]]
    first_where: str = ""  # the first action's file:line ("" where it names none)
    survey: dict[str, Any] | None = None  # the script form's survey (report.json's "script")
    unit: str = ""  # the script form's timed unit
    order: int = 0  # when it ran among the runs of its example (the machine drifts)


@dataclass(frozen=True)
class Example:
    name: str
    script_alone_s: float
    script: FormResult
    factory: FormResult
    same_first_action: bool  # the same kind of action at the same place
    medians_inside: dict[str, bool | None]  # mode -> each median inside the other's interval
    ratios_inside: dict[str, bool | None]  # the same on each run's median over its own eager
    eager_ab: dict[str, float]  # both forms' eager in one process, alternating blocks


def advisor_run(target: str, out: Path) -> FormResult:
    """`advisor run TARGET --threads 1` (the replicated protocol), read back from report.json."""
    started = time.perf_counter()
    command = [sys.executable, "-m", "advisor", "run", target, "--threads", "1", "--quiet"]
    proc = subprocess.run(
        [*command, "--out", str(out)], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(f"advisor run {target} failed: {proc.stderr.strip().splitlines()[-1]}")
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    modes = {m["mode"]: m for m in report["modes"] if m["status"] == "ok" and m["latency"]}
    action = report["actions"][0] if report["actions"] else {"title": "", "kind": ""}
    where = action.get("where") or {}
    return FormResult(
        target=target,
        wall_s=time.perf_counter() - started,
        first_action=action["title"],
        first_kind=action["kind"],
        medians_ms={k: m["latency"]["median_ms"] for k, m in modes.items()},
        intervals_ms={k: list(m["latency"]["ci_ms"]) for k, m in modes.items()},
        process_medians_ms={
            k: list(m["latency"]["replication"]["process_medians_ms"]) for k, m in modes.items()
        },
        first_where=f"{Path(where['file']).name}:{where['line']}" if where.get("file") else "",
        unit=(report.get("script") or {}).get("unit", ""),
        survey=report.get("script"),
    )


def script_alone(name: str) -> float:
    """The script run plainly, one thread, as a user would: its whole wall time."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    started = time.perf_counter()
    script = ROOT / "examples" / "scripts" / f"{name}.py"
    subprocess.run(
        [sys.executable, str(script)], cwd=ROOT, env=env, check=True, capture_output=True
    )
    return time.perf_counter() - started


def inside(a: FormResult, b: FormResult, mode: str, scale: bool = False) -> bool | None:
    """Each form's median inside the other form's interval (None: the mode failed in both;
    False where it ran in one only). `scale`: both as shares of their own run's eager median,
    which cancels the host's speed between the two runs (shared/torch-facts.md section 10)."""
    if mode not in a.medians_ms and mode not in b.medians_ms:
        return None
    if mode not in a.medians_ms or mode not in b.medians_ms:
        return False
    sa = a.medians_ms["eager"] if scale else 1.0
    sb = b.medians_ms["eager"] if scale else 1.0
    (alo, ahi), (blo, bhi) = ([v / s for v in f.intervals_ms[mode]] for f, s in ((a, sa), (b, sb)))
    am, bm = a.medians_ms[mode] / sa, b.medians_ms[mode] / sb
    return blo <= am <= bhi and alo <= bm <= ahi


def measure(name: str, runs: Path, factory_first: bool) -> Example:
    """Both forms, one after the other (which goes first alternates between examples)."""
    alone = script_alone(name)
    targets = {
        "script": f"examples/scripts/{name}.py",
        "factory": f"examples/scripts/factories.py:{name}",
    }
    order = ("factory", "script") if factory_first else ("script", "factory")
    done = {
        form: replace(advisor_run(targets[form], runs / f"{name}-{form}"), order=i)
        for i, form in enumerate(order)
    }
    script, factory = done["script"], done["factory"]
    same = (script.first_kind, script.first_where) == (factory.first_kind, factory.first_where)
    return Example(
        name=name,
        script_alone_s=alone,
        script=script,
        factory=factory,
        same_first_action=same,
        medians_inside={m: inside(script, factory, m) for m in MODES},
        ratios_inside={m: inside(script, factory, m, scale=True) for m in MODES[1:]},
        eager_ab=eager_ab(name),
    )


def eager_ab(name: str) -> dict[str, float]:
    """`benchmarks.script_forms_ab`: both forms' eager calls in one process, interleaved."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    command = [sys.executable, "-m", "benchmarks.script_forms_ab", name]
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _yes(value: bool | None) -> str:
    return "n/a" if value is None else ("yes" if value else "NO")


def markdown(examples: list[Example]) -> str:
    lines = [
        "# Script and factory forms of the same workload",
        "",
        "`python -m benchmarks.script_forms`: each example run as a script and as a factory "
        "(`advisor run ... --threads 1`, the replicated protocol), one after the other, alone on "
        "this 2-core machine. n/a: the mode failed in both forms (fullgraph=True at a break).",
        "",
        "| example | unit | ran first | script alone s | advisor s (script / factory) "
        "| same first action | medians inside the other's interval (eager, default, fullgraph) "
        "| over own eager (default, fullgraph) | eager in one process, script / factory |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for e in examples:
        first = "script" if e.script.order == 0 else "factory"
        raw = ", ".join(_yes(v) for v in e.medians_inside.values())
        ratio = ", ".join(_yes(v) for v in e.ratios_inside.values())
        lines.append(
            f"| {e.name} | {e.script.unit} | {first} | {e.script_alone_s:.1f} | "
            f"{e.script.wall_s:.0f} / {e.factory.wall_s:.0f} | {_yes(e.same_first_action)} "
            f"| {raw} | {ratio} | {e.eager_ab['ratio']:.3f} |"
        )
    lines += ["", "First actions (script form / factory form):", ""]
    for e in examples:
        lines.append(f"- {e.name}: {e.script.first_action} / {e.factory.first_action}")
    lines += ["", "Mode medians, ms [95% interval] (script form / factory form):", ""]
    for e in examples:
        for m in MODES:
            if m in e.script.medians_ms and m in e.factory.medians_ms:
                lines.append(f"- {e.name} {m}: {_ms(e.script, m)} / {_ms(e.factory, m)}")
    return "\n".join(lines) + "\n"


def _ms(form: FormResult, mode: str) -> str:
    lo, hi = form.intervals_ms[mode]
    return f"{form.medians_ms[mode]:.4g} [{lo:.4g}, {hi:.4g}]"


def rejudge_ab(path: Path) -> list[Example]:
    """The examples of a saved script_forms.json with the one-process eager A/B run again
    (`--ab-only`: the runs are not repeated)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for raw in data["examples"]:
        forms = {k: FormResult(**raw[k]) for k in ("script", "factory")}
        fields = {k: v for k, v in raw.items() if k not in ("script", "factory", "eager_ab")}
        out.append(Example(**fields, **forms, eager_ab=eager_ab(raw["name"])))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "reports/benchmarks/scripts")
    parser.add_argument("--only", choices=EXAMPLES, action="append")
    parser.add_argument("--swap", action="store_true", help="the other form first")
    parser.add_argument("--ab-only", action="store_true", help="only redo the one-process A/B")
    args = parser.parse_args(argv)
    results: list[Example] = []
    if args.ab_only:
        results = rejudge_ab(args.out / "script_forms.json")
    with tempfile.TemporaryDirectory(prefix="advisor-script-forms-") as runs:
        for i, name in enumerate(() if args.ab_only else args.only or EXAMPLES):
            print(f"script_forms: {name}...", file=sys.stderr, flush=True)
            results.append(measure(name, Path(runs), factory_first=bool(i % 2) != args.swap))
    args.out.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = {"examples": [asdict(e) for e in results]}
    (args.out / "script_forms.json").write_text(json.dumps(data, indent=2) + "\n")
    (args.out / "script_forms.md").write_text(markdown(results))
    print(markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
