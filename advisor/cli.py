"""Command line: `advisor run|judge|trace|observe|show|compare|check|scenarios|sweep` (also
`python -m advisor`)."""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor import outputs
from advisor.core import argtypes, options, policy
from advisor.core.errors import AdvisorError, first_line, one_line
from advisor.core.model import Settings

if TYPE_CHECKING:
    from advisor.core.model import Report
    from advisor.measure.pipeline import RunOptions


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise AdvisorError(f"{self.prog}: {message}")


def _add_target(parser: argparse.ArgumentParser) -> None:
    """The target, its factory's parameters and the measurement options (`run`, `check`)."""
    parser.add_argument(
        "target",
        help="your script (path/to/script.py [-- its args]), a scenario name, "
        "path/to/file.py:factory or module:factory",
    )
    _add_script_options(parser)
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        type=argtypes.key_value,
        help="keyword argument for the factory (repeatable; VALUE read as JSON when it parses)",
    )
    options.add_options(parser, options.MEASURE_OPTIONS)


def _add_script_options(parser: argparse.ArgumentParser) -> None:
    """What to measure in a script target (the script's own arguments go after `--`)."""
    parser.add_argument(
        "--callable",
        metavar="FILE:LINE|NAME",
        help="script target: the compiled callable to measure, by where it is compiled or "
        "first called, or by name (default: the one with the most time)",
    )
    parser.add_argument(
        "--unit",
        choices=("auto", "call", "iteration"),
        default="auto",
        help="script target: time its own call (replayed with the arguments of its 3rd call) "
        "or one loop iteration, from one call to the next (default auto: iteration when its "
        "output requires grad, i.e. a training loop)",
    )
    parser.add_argument(
        "--compile",
        action="append",
        default=[],
        metavar="NAME",
        help="script target that never calls torch.compile: compile this function or module "
        "class (script.py:NAME for one defined in the script, package.module.NAME for an "
        "importable one; repeatable)",
    )


def _add_run(sub: Any) -> None:
    run = sub.add_parser("run", help="measure and analyse a workload, write a report folder")
    _add_target(run)
    options.add_options(run, options.RUN_OPTIONS)
    run.add_argument("--out", type=Path, help="report folder (default: a new one under reports/)")
    run.add_argument("--quiet", action="store_true", help="no summary on stdout")
    _add_write_patches(run)


def _add_write_patches(parser: Any) -> None:
    parser.add_argument(
        "--write-patches",
        type=Path,
        metavar="DIR",
        help="write each patch generated for a break in your code as DIR/NN-....patch, for "
        "`git apply` (or `patch -p1`) in the git work tree that holds the file",
    )


def _add_judge(sub: Any) -> None:
    judge = sub.add_parser(
        "judge",
        help="judge a saved run again from its measurements.json, or several runs of one "
        "target together (no torch needed)",
    )
    judge.add_argument(
        "folder",
        nargs="+",
        help="a run folder (or its measurements.json); several runs of one target are judged "
        "as one, their processes pooled (one run cannot tell a saving under about "
        f"{policy.resolvable_saving(1):.1%} of the step from zero; two runs, "
        f"{policy.resolvable_saving(2):.1%})".replace("%", "%%"),
    )
    judge.add_argument(
        "--out", type=Path, help="report folder (default: a new one beside the first saved run)"
    )
    judge.add_argument(
        "--ignore-share",
        type=argtypes.positive,
        default=None,
        help="breaks cheaper than this share of the step get 'ignore' (default: the run's)",
    )
    judge.add_argument("--quiet", action="store_true", help="no summary on stdout")
    judge.add_argument("--redact", action="store_true", help=options.REDACT_HELP)
    _add_write_patches(judge)


def _add_show_and_compare(sub: Any) -> None:
    show = sub.add_parser("show", help="re-render a saved report")
    show.add_argument("report", help="report.json or a report folder")
    show.add_argument("--format", choices=("text", "md", "html", "json", "trace"), default="text")
    show.add_argument("--redact", action="store_true", help=options.REDACT_HELP)
    compare = sub.add_parser("compare", help="before/after comparison of two reports")
    compare.add_argument("before")
    compare.add_argument("after")
    compare.add_argument(
        "--out", type=Path, help="folder for compare.md and compare.json (never overwritten)"
    )
    compare.add_argument(
        "--min-effect",
        type=argtypes.fraction,
        default=policy.COMPARE_MIN_EFFECT,
        help="a change smaller than this fraction is never significant (default "
        f"{policy.COMPARE_MIN_EFFECT:g} = {policy.COMPARE_MIN_EFFECT * 100:g}%%)",
    )


def build_parser() -> argparse.ArgumentParser:
    from advisor.check_cli import add_check_options
    from advisor.observe_cli import add_observe_parser
    from advisor.sweep.cli import add_sweep_parser
    from advisor.trace_cli import add_trace_parser

    parser = _Parser(prog="advisor", description="Find, cost and fix torch.compile graph breaks.")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _add_run(sub)
    _add_judge(sub)
    add_trace_parser(sub)
    add_observe_parser(sub)
    _add_show_and_compare(sub)
    sub.add_parser("scenarios", help="list the built-in scenarios")
    check = sub.add_parser("check", help="CI gate: fail when breaks cost more than a baseline")
    _add_target(check)
    add_check_options(check)
    add_sweep_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    # A script target's own arguments come after `--`, untouched (its --debug included).
    script_args = args_list[args_list.index("--") + 1 :] if "--" in args_list else []
    args_list = args_list[: args_list.index("--")] if "--" in args_list else args_list
    # --debug is accepted anywhere on the line, so it can be added to any failing command.
    debug = "--debug" in args_list
    args_list = [a for a in args_list if a != "--debug"]
    try:
        args = build_parser().parse_args(args_list)
        args.script_args = tuple(script_args)
        return _dispatch(args)
    except AdvisorError as exc:
        if debug:
            traceback.print_exc()
        for printed in (getattr(exc, "stdout", ""), getattr(exc, "stderr", "")):
            if printed:  # what the script printed before it failed, then its own traceback
                sys.stderr.write(printed.rstrip("\n") + "\n")
        print(f"advisor: error: {one_line(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("advisor: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`advisor show ... | head`): not an error
        _silence_stdout()
        return 0
    except Exception as exc:  # an advisor bug: still one line unless --debug
        if debug:
            traceback.print_exc()
        else:
            print(
                f"advisor: internal error: {type(exc).__name__}: {first_line(exc)}"
                " (rerun with --debug for the traceback)",
                file=sys.stderr,
            )
        return 1


def _silence_stdout() -> None:
    """Point stdout at devnull so the interpreter's final flush does not fail again."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "run":
        return _cmd_run(args)
    if args.command == "trace":
        from advisor.trace_cli import cmd_trace

        written, out_dir = cmd_trace(args, RUN_DIR)
        return _summary(written, out_dir, args.quiet)
    if args.command == "observe":
        from advisor.observe_cli import cmd_observe

        judged = cmd_observe(args, RUN_DIR)  # None: a rank other than 0, which judges nothing
        return 0 if judged is None else _summary(*judged, args.quiet)
    if args.command == "show":
        return _cmd_show(args)
    if args.command == "judge":
        return _cmd_judge(args)
    if args.command == "compare":
        return _cmd_compare(args)
    if args.command == "scenarios":
        return _cmd_scenarios()
    if args.command == "check":
        from advisor.check_cli import cmd_check

        return cmd_check(args, _settings(args))
    if args.command == "sweep":
        from advisor.sweep.cli import cmd_sweep

        return cmd_sweep(args)
    raise AdvisorError(f"unknown command {args.command}")


def _settings(args: argparse.Namespace) -> Settings:
    return options.settings_from(vars(args))


RUN_DIR = Path("reports")  # where `advisor run` makes a report folder without --out


def _cmd_run(args: argparse.Namespace) -> int:
    from advisor import runner
    from advisor.measure.quiet import muted_dynamo_warnings
    from advisor.render.progress import Progress

    options = _checked_run_options(args)
    # a live line on a terminal; plain `advisor: ...` lines elsewhere and with --quiet
    progress = Progress(live=not args.quiet)
    completed = False
    try:
        with muted_dynamo_warnings():
            measurements = runner.measure(options, progress)
        completed = not measurements.incomplete
    finally:
        progress.close(completed)
    out_dir = args.out or _new_run_dir(measurements.workload.name)
    report, written = outputs.save_and_render(
        measurements, measurements.settings, out_dir, args.redact
    )
    _patches_out(report, args.write_patches)
    if measurements.incomplete:
        print(f"advisor: interrupted; partial report written to {out_dir}/", file=sys.stderr)
        return 130
    return _summary(written, out_dir, args.quiet)


def _summary(report: Report, out_dir: Path, quiet: bool) -> int:
    from advisor.render import report_io

    if not quiet:
        from advisor.render.console import print_summary

        print_summary(report)
    # Two short lines rather than the folder and its five files on one (146 columns for a
    # script target's folder): the second says which file to open, the folder's own listing
    # shows the rest.
    print(f"advisor: report written to {out_dir}/", file=sys.stderr)
    print(f"advisor: {report_io.OPEN_FIRST}", file=sys.stderr)
    return 0


def _cmd_judge(args: argparse.Namespace) -> int:
    """Judge a saved run again (after a rule change, or with other judging options): the
    report files go into a new folder; nothing of the saved run is touched."""
    import dataclasses

    from advisor.judge.pool import pooled
    from advisor.render import report_io

    if args.out is not None:
        report_io.check_writable(args.out)
    if args.write_patches is not None:
        from advisor.render.patch_files import check_patch_dir

        check_patch_dir(args.write_patches)
    measurements = pooled(
        [report_io.load_measurements(f) for f in args.folder], [str(f) for f in args.folder]
    )
    settings = measurements.settings
    if args.ignore_share is not None:
        settings = dataclasses.replace(settings, ignore_share=args.ignore_share)
    base = Path(args.folder[0])
    parent = base.parent if base.is_dir() else base.parent.parent
    suffix = "judged" if len(args.folder) == 1 else "pooled"
    out_dir = args.out or report_io.default_run_dir(
        parent, f"{measurements.workload.name}-{suffix}"
    )
    report, written = outputs.save_and_render(measurements, settings, out_dir, args.redact)
    _patches_out(report, args.write_patches)
    return _summary(written, out_dir, args.quiet)


def _patches_out(report: Report, folder: Path | None) -> None:
    """`--write-patches`: the report's patches as files, and where to apply them."""
    if folder is None:
        return
    from advisor.render.patch_files import write_patches

    written = write_patches(report, folder)
    if not written:
        print(
            "advisor: no patch was generated (no break in your code that a rewrite knows)",
            file=sys.stderr,
        )
    for w in written:
        print(
            f"advisor: wrote {w.path} (apply in {w.apply_in}: git apply {w.path.resolve()})",
            file=sys.stderr,
        )


def _checked_run_options(args: argparse.Namespace) -> RunOptions:
    """Every check that can fail before measuring, each a one-line error (exit 2) in seconds:
    the options, the output folder, the device, the target."""
    from advisor.measure import harness, pipeline
    from advisor.measure.script_target import script_from_args
    from advisor.measure.workload import find_factory
    from advisor.render import report_io

    script = script_from_args(args)
    if args.timeout is not None and not args.isolate and args.ranks < 2 and script is None:
        raise AdvisorError(
            "--timeout needs --isolate, --ranks or a script target (a mode running in this "
            "process cannot be stopped)"
        )
    if args.isolate and args.ranks > 1:
        raise AdvisorError(
            "--isolate and --ranks cannot be combined (the ranks already measure in processes "
            "of their own)"
        )
    settings = _settings(args)
    if args.write_patches is not None:
        from advisor.render.patch_files import check_patch_dir

        check_patch_dir(args.write_patches)
    if args.out is not None:
        report_io.check_writable(args.out)
    else:  # the report gets a new folder in there
        report_io.check_writable(RUN_DIR, names=())
    harness.resolve_device(args.device)
    if script is None:
        find_factory(args.target)
    return pipeline.RunOptions(
        args.target, args.device, settings, params=tuple(args.param), script=script
    )


def _new_run_dir(name: str) -> Path:
    from advisor.render import report_io

    return report_io.default_run_dir(RUN_DIR, name)


def _cmd_show(args: argparse.Namespace) -> int:
    from advisor.render import report_io

    report = report_io.load_report(args.report)
    if args.redact:
        from advisor.core.redact import redact

        report = redact(report)
    if args.format == "json":
        from advisor.render.json_report import render_json

        print(render_json(report))
    elif args.format == "md":
        from advisor.render.markdown import render_markdown

        print(render_markdown(report), end="")
    elif args.format == "html":
        from advisor.render.html import render_html

        print(render_html(report))
    elif args.format == "trace":
        from advisor.render.trace import render_trace

        print(render_trace(report))
    else:
        from advisor.render.console import print_summary

        print_summary(report)
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from advisor.gate import compare
    from advisor.render import report_io
    from advisor.render.compare import render_compare_markdown, render_compare_text

    before = report_io.load_report(args.before)
    after = report_io.load_report(args.after)
    comparison = compare.compare_reports(before, after, min_effect=args.min_effect)
    print(render_compare_text(comparison))
    if args.out is not None:
        import json

        from advisor.core.model import to_jsonable

        report_io.write_files(
            args.out,
            {
                "compare.json": json.dumps(to_jsonable(comparison), indent=2),
                "compare.md": render_compare_markdown(comparison),
            },
        )
        print(f"advisor: comparison written to {args.out}/", file=sys.stderr)
    return 0


def _cmd_scenarios() -> int:
    from tabulate import tabulate

    from advisor.measure.workload import scenario_info, scenario_names

    rows = []
    for name in scenario_names():
        info = scenario_info(name)
        name = info.name + (f" (--ranks {info.ranks})" if info.ranks > 1 else "")
        rows.append([name, info.pattern, info.expected_verdict or "-", info.gb_code or "-"])
    print(tabulate(rows, headers=["scenario", "pattern", "expected verdict", "break code"]))
    print("\nRun one with `advisor run NAME`; its fix with `advisor run scenarios/NAME.py:fixed`.")
    return 0
