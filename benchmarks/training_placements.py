"""Where torch.compile goes in a training step: the placements each training target of a sweep
measured, read from its saved report (nothing here measures).

    advisor sweep benchmarks/manifests/training_placements.toml --out reports/sweeps/tp-runs
    python -m benchmarks.training_placements reports/sweeps/tp-runs

writes reports/benchmarks/training_placements/placements.{json,md}: per target the step's parts
(forward / backward / optimizer, from the profile's ledger), each placement's measured saving
as a share of the default step with its interval (where a rerun would put it), the calls after
which its extra compile pays, and the first action.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from tabulate import tabulate

from advisor.core.model import TRAINING_PLACEMENTS, Report
from advisor.render.report_io import load_report
from benchmarks.study_output import write_study

OUT = Path("reports/benchmarks/training_placements")
PLACEMENTS = (*TRAINING_PLACEMENTS, "split", "regional", "allocator")


def target_row(name: str, report: Report) -> dict[str, Any]:
    ledger = report.ledger
    step = ledger.step_ms if ledger else None
    eager, default = report.mode("eager"), report.mode("default")
    placements = {}
    for action in report.actions:
        if action.kind in PLACEMENTS and action.measured and step and action.saving_ms is not None:
            ci = action.saving_ci_ms
            placements.setdefault(action.kind, {
                "share": action.saving_ms / step,
                "ci_share": [ci[0] / step, ci[1] / step] if ci else None,
                "measurable": action.measurable,
                "break_even_calls": action.break_even_calls,
            })  # fmt: skip
    first = report.actions[0] if report.actions else None
    return {
        "name": name,
        "default_ms": default.latency.median_ms if default and default.latency else None,
        "eager_ms": eager.latency.median_ms if eager and eager.latency else None,
        "parts": _parts(report),
        "placements": placements,
        "first_action": first.kind if first else "none",
        "first_knob": first.knob if first else None,
    }


def _parts(report: Report) -> dict[str, float] | None:
    ledger = report.ledger
    if ledger is None or not ledger.step_ms or ledger.optimizer_ms is None:
        return None
    backward = ledger.backward_ms or 0.0
    optimizer = ledger.optimizer_ms
    return {
        "forward": (ledger.step_ms - backward - optimizer) / ledger.step_ms,
        "backward": backward / ledger.step_ms,
        "optimizer": optimizer / ledger.step_ms,
    }


def render(rows: list[dict[str, Any]]) -> str:
    def saving(row: dict[str, Any], kind: str) -> str:
        p = row["placements"].get(kind)
        if p is None:
            return "-"
        ci = p["ci_share"]
        text = f"{p['share']:+.1%}" + (f" [{ci[0]:+.1%}, {ci[1]:+.1%}]" if ci else "")
        if not p["measurable"]:
            slower = ci is not None and ci[1] < 0
            return f"{'slower' if slower else 'no measurable effect'} ({text})"
        if p["break_even_calls"]:
            text += f", pays after {p['break_even_calls']:,.0f} calls"
        return text

    table = []
    for row in rows:
        parts = row["parts"]
        split = (
            f"{parts['forward']:.0%} / {parts['backward']:.0%} / {parts['optimizer']:.0%}"
            if parts
            else "-"
        )
        first = row["first_action"] + (f" ({row['first_knob']})" if row["first_knob"] else "")
        table.append([
            row["name"], f"{row['eager_ms']:.3g}" if row["eager_ms"] else "-",
            f"{row['default_ms']:.3g}" if row["default_ms"] else "-", split,
            saving(row, "optimizer"), saving(row, "fused"), saving(row, "eager_fused"),
            saving(row, "step"),
            saving(row, "module"), saving(row, "split"), saving(row, "regional"),
            saving(row, "allocator"), first,
        ])  # fmt: skip
    headers = [
        "target", "eager ms", "default ms", "forward / backward / optimizer",
        "opt.step compiled too", "optimizer built fused=True",
        "nothing compiled, optimizer fused", "whole step compiled",
        "model alone compiled", "model and opt.step apart", "break-free modules compiled",
        "allocator keeping freed memory", "first",
    ]  # fmt: skip
    return (
        "# Where torch.compile goes in a training step\n\n"
        "`python -m benchmarks.training_placements` over a sweep of "
        "`benchmarks/manifests/training_placements.toml` (replicated runs, one pinned thread). "
        "Savings are shares of the default mode's step, with the 95% interval of where a rerun "
        "would put them; the parts are the profile's.\n\n"
        + tabulate(table, headers, tablefmt="github")
        + "\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sweep", type=Path, help="the sweep folder")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    folders = sorted(p.parent for p in args.sweep.glob("*/report.json"))
    if not folders:
        print(f"training_placements: no report.json under {args.sweep}", file=sys.stderr)
        return 2
    rows = [target_row(f.name, load_report(f)) for f in folders]
    write_study(args.out, "placements", {"targets": rows}, render(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
