"""Where to compile, measured: every placement what-if of saved runs, in one table.

Reads saved runs (sweep folders, the accuracy benchmark's runs/ folder, single run folders: any
folder holding NAME/measurements.json or measurements.json itself) and lists, per run, eager, the
default mode and each placement the advisor measured (not compiling; compiling only the
sub-modules whose own capture has no break; `torch.compiler.disable` on the functions holding the
breaks; the model and the optimizer step compiled apart): its step, its saving against default
with the 95% interval, its output against eager's beside default's own, and whether it beats
default (the interval above zero and the output accepted). Nothing is measured here.

    .venv/bin/python -m benchmarks.placements reports/sweeps/library-zoo \\
        reports/benchmarks/accuracy-<time>/runs --out reports/benchmarks/placements
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tabulate import tabulate

from advisor.core.artifacts import Measurements
from advisor.core.model import ModeResult, WhatIf
from advisor.judge.numerics import mode_output, what_if_accepted, what_if_output
from advisor.render import report_io
from advisor.render.actions import what_if_label

PLACEMENT_KINDS = ("regional", "disable", "split")


@dataclass(frozen=True)
class Row:
    run: str
    eager_ms: float | None
    default_ms: float | None
    what: str
    status: str
    saving_ms: float | None = None
    saving_ci_ms: tuple[float, float] | None = None
    step_ms: float | None = None  # the default median less the saving
    diff: float | None = None  # its output's largest difference from eager's
    default_diff: float | None = None
    accepted: bool | None = None

    @property
    def beats_default(self) -> bool:
        ci = self.saving_ci_ms
        return self.status == "measured" and ci is not None and ci[0] > 0 and bool(self.accepted)

    @property
    def beats_eager(self) -> bool:
        return (
            self.beats_default
            and self.step_ms is not None
            and self.eager_ms is not None
            and self.step_ms < self.eager_ms
        )


def saved_runs(folders: list[Path]) -> Iterator[tuple[str, Path]]:
    for folder in folders:
        if (folder / "measurements.json").is_file():
            yield folder.name, folder / "measurements.json"
            continue
        for child in sorted(folder.iterdir()) if folder.is_dir() else ():
            if (child / "measurements.json").is_file():
                yield child.name, child / "measurements.json"


def rows_of(name: str, m: Measurements) -> list[Row]:
    modes = {mode.mode: mode for mode in m.modes}
    eager, default = _median(modes.get("eager")), _median(modes.get("default"))
    base = Row(name, eager, default, "", "")
    rows = []
    for w in m.what_ifs:
        if w.kind not in PLACEMENT_KINDS:
            continue
        rows.append(_row(base, w, modes.get("default")))
    return rows


def _row(base: Row, w: WhatIf, default: ModeResult | None) -> Row:
    output = what_if_output(w)
    reference = w.baseline_output or mode_output(default)
    step = None
    if base.default_ms is not None and w.saving_ms is not None and w.baseline_ms:
        step = base.default_ms * (1 - w.saving_ms / w.baseline_ms)  # scaled to the run's default
    return Row(
        run=base.run,
        eager_ms=base.eager_ms,
        default_ms=base.default_ms,
        what=what_if_label(w),
        status=w.status if w.status == "measured" else f"{w.status}: {w.error or ''}"[:80],
        saving_ms=w.saving_ms,
        saving_ci_ms=w.saving_ci_ms,
        step_ms=step,
        diff=output.max_abs_diff if output else None,
        default_diff=reference.max_abs_diff if reference else None,
        accepted=what_if_accepted(w, default),
    )


def _median(mode: ModeResult | None) -> float | None:
    return mode.latency.median_ms if mode and mode.status == "ok" and mode.latency else None


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _diff(value: float | None) -> str:
    return "-" if value is None else f"{value:.2g}"


def table(rows: list[Row]) -> str:
    body = [
        [
            r.run,
            _ms(r.eager_ms),
            _ms(r.default_ms),
            r.what[:90],
            r.status,
            _ms(r.step_ms),
            "-"
            if r.saving_ms is None or r.saving_ci_ms is None
            else f"{r.saving_ms:.4f} [{r.saving_ci_ms[0]:.4f}, {r.saving_ci_ms[1]:.4f}]",
            f"{_diff(r.diff)} / {_diff(r.default_diff)}",
            {True: "yes", False: "NO", None: "-"}[r.accepted],
            "yes" if r.beats_default else "-",
            "yes" if r.beats_eager else "-",
        ]
        for r in rows
    ]
    headers = [
        "run",
        "eager ms",
        "default ms",
        "placement",
        "status",
        "step ms",
        "saving ms [95% CI]",
        "diff / default's",
        "accepted",
        "beats default",
        "beats eager",
    ]
    return tabulate(body, headers=headers, tablefmt="github", disable_numparse=True)


def render(rows: list[Row], runs: int, sources: list[Path]) -> str:
    winners = sorted({r.run for r in rows if r.beats_default})
    placed = list(dict.fromkeys(r.run for r in rows))
    return "\n".join(
        [
            "# Placements measured",
            "",
            f"From {runs} saved runs in {', '.join(str(s) for s in sources)}. Step: the default "
            "median less the placement's saving, scaled to that median. Diff: the placement's "
            "largest output difference from eager beside the default mode's own. A placement "
            "beats default when its saving's 95% interval is above zero and its output is "
            "accepted (within the tolerance, or within 4x default's own difference).",
            "",
            f"Runs with a placement that beats default: {len(winners)} of {len(placed)} with "
            f"placements measured ({', '.join(winners) or 'none'}).",
            "",
            table(rows),
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, help="a new folder for placements.md")
    args = parser.parse_args(argv)
    rows: list[Row] = []
    runs = 0
    for name, path in saved_runs(args.folders):
        runs += 1
        rows += rows_of(name, report_io.load_measurements(path))
    text = render(rows, runs, args.folders)
    if args.out:
        report_io.check_writable(args.out, ("placements.md",))
        report_io.write_files(args.out, {"placements.md": text})
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
