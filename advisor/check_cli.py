"""`advisor check TARGET --baseline FILE`: measure, compare with the baseline, exit 0/1/2.

Exit 0: nothing got worse (or the baseline was written with --update-baseline); 1: one line
per finding on stdout; 2: bad input (no baseline, a baseline for another target, bad options).
The baseline is `advisor.gate.baseline`, the comparison `advisor.gate.check` (both torch-free),
their words `advisor.render.check`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from advisor.core import argtypes
from advisor.core.errors import AdvisorError
from advisor.core.files import parse_file, replace_atomically
from advisor.core.model import Report, Settings
from advisor.gate.baseline import (
    Baseline,
    baseline_from_json,
    baseline_from_report,
    baseline_to_json,
)
from advisor.gate.check import CheckResult, Thresholds, check
from advisor.render.check import format_github, format_text, note_text

if TYPE_CHECKING:
    from advisor.runner import RunResult


def add_check_options(parser: argparse.ArgumentParser) -> None:
    defaults = Thresholds()
    parser.add_argument(
        "--baseline", type=Path, required=True, help="baseline JSON (commit it with the code)"
    )
    parser.add_argument(
        "--update-baseline",
        action="store_true",
        help="write the baseline from this run (replacing the file) instead of checking",
    )
    parser.add_argument(
        "--max-new-share",
        type=argtypes.share,
        default=defaults.max_new_share,
        help="a new break, or a known break's growth, may cost at most this share of the step "
        "(default 0.02 = 2%%)",
    )
    parser.add_argument(
        "--max-slowdown",
        type=argtypes.non_negative,
        default=defaults.max_slowdown,
        help="the default mode may be at most this much slower, beyond noise (default 0.10)",
    )
    parser.add_argument("--format", choices=("text", "github"), default="text")
    parser.add_argument("--out", type=Path, help="also write this run's report folder here")


def cmd_check(args: argparse.Namespace, settings: Settings) -> int:
    from advisor.render import report_io

    root = os.getcwd()
    baseline = None if args.update_baseline else load_baseline(args.baseline)
    if baseline is not None:
        _same_workload(baseline, args)
    if args.out is not None:
        report_io.check_writable(args.out)
    result = _measure(args, settings)
    report = result.report
    if args.out is not None:
        report_io.save_report(report, args.out, result.measurements)
    if baseline is None:
        fresh = baseline_from_report(report, root)
        write_baseline(args.baseline, fresh)
        print(
            f"advisor: baseline written to {args.baseline} ({len(fresh.breaks)} break(s), "
            f"default mode {fresh.default.status})",
            file=sys.stderr,
        )
        return 0
    if report.workload.device != baseline.device:
        raise AdvisorError(
            f"{args.baseline} was recorded on {baseline.device}, this run is on "
            f"{report.workload.device}: pass --device {baseline.device} or update the baseline"
        )
    thresholds = Thresholds(args.max_new_share, args.max_slowdown)
    result = check(baseline, report, thresholds, root)
    _print(result, report, args.format)
    return 1 if result.worse else 0


def load_baseline(path: Path) -> Baseline:
    if not path.is_file():
        raise AdvisorError(
            f"baseline not found: {path} (create it with --update-baseline and commit it)"
        )
    return parse_file(path, baseline_from_json)


def write_baseline(path: Path, baseline: Baseline) -> None:
    """Replace the baseline atomically (asked for with --update-baseline): a reader never sees
    half a file, and a failed write leaves the old one."""
    if path.is_dir():
        raise AdvisorError(f"--baseline {path} is a folder; give a file name")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise AdvisorError(f"cannot create {path.parent}: {exc.strerror or exc}") from None
    replace_atomically(path, baseline_to_json(baseline))


def _same_workload(baseline: Baseline, args: argparse.Namespace) -> None:
    from advisor.core.script import shown_params
    from advisor.measure.script_target import is_script_target

    script_args = tuple(getattr(args, "script_args", ()))
    if is_script_target(args.target, script_args):  # a script is named by its own arguments
        params = shown_params(script_args)
    else:
        params = tuple((k, json.dumps(v, default=str)) for k, v in args.param)
    if baseline.target != args.target or tuple(baseline.params) != params:
        shown = " ".join(f"{k}={v}" for k, v in baseline.params)
        given = " ".join(f"{k}={v}" for k, v in params)
        raise AdvisorError(
            f"{args.baseline} was recorded for target '{baseline.target}'"
            + (f" with {shown}" if shown else "")
            + f", not '{args.target}'"
            + (f" with {given}" if given else "")
            + ": check that target or update the baseline"
        )


def _measure(args: argparse.Namespace, settings: Settings) -> RunResult:
    from advisor import runner
    from advisor.measure.pipeline import RunOptions
    from advisor.measure.quiet import muted_dynamo_warnings

    def progress(message: str) -> None:
        print(f"advisor: {message}", file=sys.stderr, flush=True)

    from advisor.measure.script_target import script_from_args

    script = script_from_args(args)
    params = tuple(args.param)
    options = RunOptions(args.target, args.device, settings, params=params, script=script)
    with muted_dynamo_warnings():
        return runner.run(options, progress)


def _print(result: CheckResult, report: Report, fmt: str) -> None:
    if fmt == "github":
        for line in format_github(result, report):
            print(line)
    else:
        for line in format_text(result, report):
            print(line)
        for note in result.notes:
            print(f"advisor: note: {note_text(note)}", file=sys.stderr)
    verdict = (
        f"{len(result.findings)} finding(s): worse than the baseline"
        if result.worse
        else "nothing got worse than the baseline"
    )
    print(f"advisor check: {verdict}", file=sys.stderr)
