"""Patches against hand-written fixes: for each scenario a rewrite kind covers, `advisor run`
(the replicated protocol, one pinned thread) generates and measures its patch, and an
independent replicated A/B (`benchmarks.reference_ab`: fresh processes, rounds outermost, no
code shared with advisor/measure) measures the scenario's hand-written `fixed` variant against
the original. The patch's saving is compared with the hand fix's as a share of each run's own
default median (the host's speed drifts between runs), the raw ms beside.

    python -m benchmarks.patches [--names print_logging ...] [--rounds 5] [--out DIR]

Writes DIR/patches.json (every number, raw) and DIR/patches.md (the table).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tabulate import tabulate

from advisor.core.model import Report, WhatIf
from advisor.render.report_io import load_report
from benchmarks import reference_ab

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "reports" / "benchmarks" / "patches"
# target -> the pattern its break is (one per rewrite kind, two for the tensor branch); a
# built-in scenario by name, else `path.py` with `workload`-like `factory` and `fixed`
SCENARIOS = {
    "print_logging": "print in the forward (side effect)",
    "scalar_bookkeeping": ".tolist() bookkeeping in a loop",
    "data_dependent_branch": "if on a tensor value",
    "loop_frame_skip": "if ... continue on a tensor value in a loop",
    "moe_nonzero_routing": "nonzero gather feeding an expert",
    "disabled_helper": "torch.compiler.disable boundary",
    "tests/targets/late_item.py": ".item() only returned, read mid-function",
}


def targets(name: str) -> tuple[str, str, str]:
    """The advisor's target, and the reference's original and hand-fixed factories."""
    if name.endswith(".py"):
        return f"{name}:factory", f"{name}:factory", f"{name}:fixed"
    return name, f"scenarios.{name}:workload", f"scenarios.{name}:fixed"


@dataclass(frozen=True)
class Row:
    name: str
    pattern: str
    default_ms: float | None
    patch: dict[str, Any] | None  # kind, status, saving_ms, ci_ms, share, measurable, error
    knobs: list[dict[str, Any]]
    first_action: str
    reference: dict[str, Any]  # the A/B's default and fixed medians, saving and share with CIs

    @property
    def patch_share(self) -> float | None:
        return self.patch.get("share") if self.patch else None

    @property
    def within(self) -> bool | None:
        """The patch's saving share inside the hand fix's 95% interval across rounds."""
        ci = self.reference["saving"].get("ci95_share")
        if self.patch_share is None or not ci:
            return None
        return ci[0] <= self.patch_share <= ci[1]


def advisor_report(name: str, threads: int, folder: Path) -> Report:
    out = folder / Path(name).stem
    target = targets(name)[0]
    command = [sys.executable, "-m", "advisor", "run", target, "--threads", str(threads)]
    subprocess.run([*command, "--quiet", "--out", str(out)], check=True, cwd=ROOT)
    return load_report(out / "report.json")


def _what_if_numbers(w: WhatIf, default_ms: float | None) -> dict[str, Any]:
    share = w.saving_ms / w.baseline_ms if w.saving_ms is not None and w.baseline_ms else None
    ci = list(w.saving_ci_ms) if w.saving_ci_ms else None
    ci_share = [c / w.baseline_ms for c in ci] if ci and w.baseline_ms else None
    return {
        "key": w.knob,
        "status": w.status,
        "error": w.error,
        "saving_ms": w.saving_ms,
        "ci_ms": ci,
        "share": share,
        "ci_share": ci_share,
        "baseline_ms": w.baseline_ms,
        "variant_ms": w.variant_ms,
        "removed": list(w.removed),
        "targets": list(w.targets),
        "new_breaks": len(w.new_breaks),
        "matches_eager": w.matches_eager,
        "processes": w.replication.processes if w.replication else None,
        "default_ms": default_ms,
    }


def row_of(name: str, report: Report, reference: dict[str, Any]) -> Row:
    default = report.mode("default")
    default_ms = default.latency.median_ms if default and default.latency else None
    patches = [w for w in report.what_ifs if w.kind == "patch"]
    patch = None
    if patches:
        patch = _what_if_numbers(patches[0], default_ms)
        patch["kind"] = patches[0].patch.kind if patches[0].patch else None
        patch["measurable"] = any(a.kind == "patch" and a.measurable for a in report.actions)
    knobs = [_what_if_numbers(w, default_ms) for w in report.what_ifs if w.kind == "knob"]
    first = report.actions[0] if report.actions else None
    return Row(
        name,
        SCENARIOS[name],
        default_ms,
        patch,
        knobs,
        f"{first.kind}" + (f" ({first.knob})" if first and first.knob else "") if first else "-",
        {
            "default_ms": reference["variants"]["default"]["median_ms"],
            "fixed_ms": reference["variants"]["fixed"]["median_ms"],
            "saving": reference["savings"]["fixed"],
        },
    )


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:+.1f}%"


def _interval(ci: list[float] | None) -> str:
    return "-" if not ci else f"[{100 * ci[0]:+.1f}%, {100 * ci[1]:+.1f}%]"


def table(rows: list[Row]) -> str:
    body = []
    for r in rows:
        p = r.patch or {}
        knob = ", ".join(f"{k['key']} {_pct(k['share'])}" for k in r.knobs) or "-"
        saving = r.reference["saving"]
        body.append(
            (
                r.pattern,
                r.name,
                f"{_pct(p.get('share'))} {_interval(p.get('ci_share'))}" if p else "no patch",
                f"{_pct(saving['mean_share'])} {_interval(saving['ci95_share'])}",
                {True: "yes", False: "no", None: "-"}[r.within],
                knob,
                r.first_action,
            )
        )
    headers = (
        "pattern",
        "scenario",
        "patch saving (advisor, share of its default)",
        "hand fix saving (reference A/B)",
        "patch inside the hand fix's interval",
        "knob saving",
        "first action",
    )
    return tabulate(body, headers=headers, tablefmt="github", disable_numparse=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--names", nargs="*", default=list(SCENARIOS))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument(
        "--merge", action="store_true", help="keep the saved results of targets not measured now"
    )
    args = parser.parse_args(argv)
    raw = _saved(args.out) if args.merge else {}
    with tempfile.TemporaryDirectory() as folder:
        for name in args.names:
            raw[name] = measured(name, args, Path(folder))
    raw = {name: raw[name] for name in SCENARIOS if name in raw}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "patches.json").write_text(json.dumps(raw, indent=2, default=str) + "\n")
    rows = [_row(entry) for entry in raw.values()]
    inside = sum(1 for r in rows if r.within)
    text = (
        "# Patches against hand-written fixes\n\n"
        f"`python -m benchmarks.patches` ({args.rounds} reference rounds, {args.threads} "
        "thread(s)); savings as shares of each run's own default median, 95% intervals.\n\n"
        f"{table(rows)}\n\nPatch saving inside the hand fix's interval: {inside} of {len(rows)}.\n"
    )
    (args.out / "patches.md").write_text(text)
    print(text)
    return 0


def measured(name: str, args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    """One target: the advisor's run and the reference A/B, as saved."""
    report = advisor_report(name, args.threads, folder)
    _, original, hand_fixed = targets(name)
    variants = {"default": original, "fixed": hand_fixed}
    reference = reference_ab.measure(variants, args.rounds, args.threads, args.seconds, "default")
    row = row_of(name, report, reference)
    print(table([row]), file=sys.stderr)
    return {"advisor": row.__dict__ | {"within": row.within}, "reference": reference}


def _saved(folder: Path) -> dict[str, Any]:
    path = folder / "patches.json"
    return dict(json.loads(path.read_text())) if path.is_file() else {}


def _row(entry: dict[str, Any]) -> Row:
    fields = {f.name for f in dataclasses.fields(Row)}
    return Row(**{k: v for k, v in entry["advisor"].items() if k in fields})


if __name__ == "__main__":
    sys.exit(main())
