"""`advisor trace PATH...`: the report every run writes, from the files a user's own run already
wrote (a TORCH_TRACE folder, torch.profiler Chrome/Kineto traces), nothing run or compiled.

Each path is classified by what it is: a folder (or a `dedicated_log_torch_trace_*.log` file)
is the TORCH_TRACE side, any other file a profiler trace, so either half may be given alone.
Every file is read and checked before the report folder is made: bad input is one line and
exit 2 with nothing written. The record is `advisor.measure.traces.measurements`; judging and
writing are `advisor.outputs`, as for `advisor run`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from advisor import outputs
from advisor.core import argtypes
from advisor.core.model import Report
from advisor.core.options import REDACT_HELP


def add_trace_parser(sub: Any) -> None:
    trace = sub.add_parser(
        "trace",
        help="the report from the files your own run wrote: a TORCH_TRACE folder and/or "
        "torch.profiler traces (nothing is run; every saving is estimated)",
    )
    trace.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="a TORCH_TRACE folder (the compile side: breaks, recompiles, compile time) and/or "
        "profiler Chrome/Kineto traces, .json or .json.gz, one per rank (the runtime side)",
    )
    trace.add_argument(
        "--step",
        metavar="NAME",
        help="the record_function name around each step in the profile (default: the "
        "profiler's ProfilerStep#N, which a schedule and prof.step() make)",
    )
    trace.add_argument(
        "--rank",
        type=argtypes.int_at_least(0, "zero or more"),
        help="the rank to judge when the files hold several (default: the lowest)",
    )
    trace.add_argument("--out", type=Path, help="report folder (default: a new one under reports/)")
    trace.add_argument("--quiet", action="store_true", help="no summary on stdout")
    trace.add_argument("--redact", action="store_true", help=REDACT_HELP)


def cmd_trace(args: argparse.Namespace, run_dir: Path) -> tuple[Report, Path]:
    """Read, judge and write; returns the report as its files show it and their folder."""
    from advisor.measure.traces.measurements import (
        measurements_from_files,
        read_files,
        written_at,
    )
    from advisor.render import report_io

    # where the report goes is checked first: reading a large trace takes a while
    if args.out is not None:
        report_io.check_writable(args.out)
    else:
        report_io.check_writable(run_dir, names=())
    inputs = read_files(args.paths, step_name=args.step, rank=args.rank)
    measurements = measurements_from_files(inputs, written_at(inputs))
    out_dir = args.out or report_io.default_run_dir(run_dir, f"{measurements.workload.name}-trace")
    _, written = outputs.save_and_render(measurements, measurements.settings, out_dir, args.redact)
    return written, out_dir
