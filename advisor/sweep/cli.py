"""`advisor sweep MANIFEST ...`, `advisor sweep --compare OLD NEW` and `advisor sweep --rejudge
FOLDER`: arguments and files."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.core import argtypes
from advisor.core.errors import AdvisorError

if TYPE_CHECKING:
    from advisor.sweep.aggregate import Zoo


def add_sweep_parser(sub: Any) -> None:
    """Add the `sweep` subcommand to the CLI's subparsers."""
    sweep = sub.add_parser(
        "sweep", help="run many targets (one process each) and write a zoo report"
    )
    sweep.add_argument("manifest", nargs="?", help="the sweep manifest (TOML)")
    sweep.add_argument("--out", type=Path, help="sweep folder (default: a new one under reports/)")
    sweep.add_argument("--engine", choices=("local", "ray"), default="local")
    sweep.add_argument(
        "--workers",
        type=argtypes.int_at_least(1, "at least 1"),
        help="targets at a time (local default 1; ray: at most this many tasks in flight; "
        "--rejudge: processes, default 1)",
    )
    sweep.add_argument("--ray-address", help="Ray cluster to join (default: a local instance)")
    sweep.add_argument(
        "--timeout",
        type=argtypes.positive,
        help="per-target timeout in seconds (overrides timeout_s)",
    )
    sweep.add_argument(
        "--resume", action="store_true", help="skip targets with a report.json, rerun the rest"
    )
    sweep.add_argument(
        "--compare",
        nargs=2,
        metavar=("OLD", "NEW"),
        help="compare two sweeps (folders or sweep.json)",
    )
    sweep.add_argument(
        "--rejudge",
        metavar="FOLDER",
        type=Path,
        help="judge a saved sweep again from its targets' measurements.json, into a new "
        "folder (--out; default: beside FOLDER); no measuring, no torch",
    )
    sweep.add_argument(
        "--ignore-share",
        type=argtypes.positive,
        default=None,
        help="with --rejudge: breaks cheaper than this share of the step get 'ignore' "
        "(default: each run's)",
    )


def cmd_sweep(args: argparse.Namespace) -> int:
    given = [
        what
        for what, on in (
            ("a MANIFEST", args.manifest),
            ("--compare", args.compare),
            ("--rejudge", args.rejudge),
        )
        if on
    ]
    if len(given) > 1:
        raise AdvisorError(
            "sweep: give one of a MANIFEST, --compare OLD NEW or --rejudge FOLDER, not "
            + " and ".join(given)
        )
    if args.ignore_share is not None and not args.rejudge:
        raise AdvisorError("sweep: --ignore-share needs --rejudge FOLDER")
    if args.rejudge:
        return _cmd_rejudge(args)
    if args.compare:
        return _cmd_compare(args.compare, args.out)
    if not args.manifest:
        raise AdvisorError("sweep: a MANIFEST is needed (or --compare OLD NEW, --rejudge FOLDER)")
    return _cmd_run(args)


def _progress(message: str) -> None:
    print(f"advisor sweep: {message}", file=sys.stderr, flush=True)


def _cmd_run(args: argparse.Namespace) -> int:
    from advisor.render.report_io import default_run_dir
    from advisor.sweep.manifest import load_manifest
    from advisor.sweep.runner import SweepOptions, run_sweep

    manifest = load_manifest(args.manifest)
    if args.resume and args.out is None:
        raise AdvisorError("sweep: --resume needs the --out of the sweep to continue")
    if args.ray_address and args.engine != "ray":
        raise AdvisorError("sweep: --ray-address needs --engine ray")
    if args.engine == "ray":
        from advisor.sweep.engines import import_ray

        import_ray()  # fail now, in one line, when Ray is not installed
    out = args.out or default_run_dir(Path("reports"), f"sweep-{manifest.name}")
    options = SweepOptions(
        out_dir=out,
        engine=args.engine,
        workers=args.workers,
        ray_address=args.ray_address,
        timeout_s=args.timeout,
        resume=args.resume,
    )
    _progress(
        f"{len(manifest.targets)} target(s) from {manifest.path}, into {out}/ ({args.engine})"
    )
    results = run_sweep(manifest, options, _progress)
    zoo = write_zoo(out)
    from advisor.sweep.folder import ZOO_FILES
    from advisor.sweep.render import counts_line

    _progress(f"{counts_line(zoo)}; written to {out}/ (index.json, {', '.join(ZOO_FILES)})")
    return 0 if all(r.status == "ok" for r in results) else 1


def write_zoo(out: Path) -> Zoo:
    """Build the zoo report from a sweep folder and write sweep.json/.md/.html (replacing any
    earlier ones: they are derived from the reports)."""
    from advisor.core.files import replace_atomically
    from advisor.sweep.folder import load_zoo, zoo_files

    zoo = load_zoo(out)
    for name, text in zoo_files(zoo).items():
        replace_atomically(out / name, text)
    return zoo


def _cmd_compare(paths: list[str], out: Path | None) -> int:
    from advisor.core.model import to_jsonable
    from advisor.render.report_io import write_files
    from advisor.sweep.compare import compare_zoos
    from advisor.sweep.folder import read_zoo
    from advisor.sweep.render import render_compare_markdown

    comparison = compare_zoos(read_zoo(paths[0]), read_zoo(paths[1]))
    text = render_compare_markdown(comparison)
    print(text, end="")
    if out is not None:
        files = {"compare.md": text, "compare.json": json.dumps(to_jsonable(comparison), indent=2)}
        write_files(out, files)
        _progress(f"comparison written to {out}/")
    return 0


def _cmd_rejudge(args: argparse.Namespace) -> int:
    from advisor.sweep.folder import ZOO_FILES
    from advisor.sweep.rejudge import rejudge_sweep

    result = rejudge_sweep(args.rejudge, args.out, args.ignore_share, _progress, args.workers)
    with_measurements = len(result.rejudged) + len(result.failed)
    _progress(
        f"re-judged {len(result.rejudged)} of {with_measurements} target(s) with measurements "
        f"({len(result.without)} without) in {result.wall_s:.1f} s; written to "
        f"{result.out_dir}/ (NAME/report.*, index.json, {', '.join(ZOO_FILES)})"
    )
    return 1 if result.failed else 0
