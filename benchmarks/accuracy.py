"""Accuracy benchmark: does the advisor's projection hold, and is its first action right?

Every case is an advisor run against a measured reference (see `benchmarks.accuracy_cases`),
in validation sets reported apart:

- scenarios: the inference scenarios against their fixed variants;
- training: the training scenarios (scenarios/train_*) against their fixed variants;
- upstream: a published package release with graph breaks against its maintainers' release
  without them (benchmarks/upstream; needs `python -m benchmarks.upstream.install`);
- one set per library of the library zoo (benchmarks/libzoo), the training zoo
  (benchmarks/trainzoo) and the transformers zoo (benchmarks/zoo): each model's first action
  measured again, independently, and judged; each with a tuning and a held-out half chosen
  before the cost model was changed, reported apart;
- k-breaks: the per-break overhead against the unprofiled slope (benchmarks/kbreaks.py).

The target: projected within 25% of measured (raw ms) on at least 80% of the cases whose
measured saving is resolved (its 95% interval above zero), and no case off by more than 50%.

    .venv/bin/python -m benchmarks.accuracy                          # every set
    .venv/bin/python -m benchmarks.accuracy --sets scenarios training
    .venv/bin/python -m benchmarks.accuracy --sets libzoo --names gp_exact_predict ode_dopri5
    .venv/bin/python -m benchmarks.accuracy --sets libzoo --from-sweeps reports/sweeps/library-zoo
    .venv/bin/python -m benchmarks.accuracy --merge reports/benchmarks/accuracy-A accuracy-B ...

Results go to a new folder reports/benchmarks/accuracy-<time>/ (accuracy.md, accuracy.json), every
advisor run it made in runs/ (each a report folder with its measurements.json; not committed).
Run it alone on the machine: the numbers are timings. `--merge` measures nothing: it renders the
cases of several earlier results (each folder's accuracy.json, e.g. one set per run) as one.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from advisor.core.model import Settings
from advisor.measure.workload import scenario_names
from advisor.render import report_io
from benchmarks.accuracy_cases import (
    Case,
    case_from_json,
    case_json,
    fixed_case,
    model_case,
    upstream_case,
)
from benchmarks.accuracy_kbreaks import run_kbreaks

SETS = ("scenarios", "training", "upstream", "libzoo", "trainzoo", "zoo", "kbreaks")
ZOOS = {
    "libzoo": ("benchmarks.libzoo.models", "benchmarks/libzoo/models.py:build"),
    "trainzoo": ("benchmarks.trainzoo.models", "benchmarks/trainzoo/models.py:build"),
    "zoo": ("benchmarks.accuracy_zoo", "benchmarks/zoo/hf_models.py:build"),
}


def scenario_cases(
    training: bool, names: set[str], settings: Settings, runs: Path, sweeps: list[Path]
) -> Iterator[Case]:
    for name in scenario_names():
        if name.startswith("train_") != training or (names and name not in names):
            continue
        if not _has_fixed(name):
            continue
        set_name = "training" if training else "scenarios"
        yield fixed_case(set_name, name, settings, runs, _saved(sweeps, name))


def _has_fixed(name: str) -> bool:
    return hasattr(importlib.import_module(f"scenarios.{name}"), "fixed")


def zoo_cases(
    zoo: str, names: set[str], settings: Settings, sweeps: list[Path], runs: Path
) -> Iterator[Case]:
    """A zoo's tuning and held-out models, each case in the set of its library; a model with a
    measurements.json in one of `sweeps` is judged from it rather than run again."""
    module_name, target = ZOOS[zoo]
    module = importlib.import_module(module_name)
    halves = [("tuning", m) for m in module.TUNING_MODELS]
    halves += [("held-out", m) for m in module.HELD_OUT_MODELS]
    for half, model in halves:
        if names and model not in names:
            continue
        library = getattr(getattr(module, "MODELS", {}).get(model), "library", zoo)
        for params in _forms(zoo, model):
            label = model if len(params) == 1 else f"{model}.{params['form']}"
            saved = _saved(sweeps, label)
            yield model_case(library, label, half, target, params, settings, saved, runs)


def _saved(sweeps: list[Path], name: str) -> Path | None:
    found = [folder / name / "measurements.json" for folder in sweeps]
    return next((path for path in found if path.is_file()), None)


def _forms(zoo: str, model: str) -> list[dict[str, Any]]:
    if zoo == "trainzoo":
        return [{"model": model, "form": "module"}, {"model": model, "form": "step"}]
    return [{"model": model}]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sets", nargs="*", choices=SETS, default=list(SETS))
    parser.add_argument("--names", nargs="*", default=[], help="only these scenarios or models")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--budget", type=float, default=10.0)
    parser.add_argument("--profile-calls", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument(
        "--from-sweeps",
        nargs="*",
        type=Path,
        default=[],
        help="sweep folders whose models' (and scenarios') measurements.json are judged "
        "instead of run again",
    )
    parser.add_argument(
        "--merge", nargs="*", type=Path, default=[], help="result folders to render as one"
    )
    args = parser.parse_args(argv)
    if args.merge:
        missing = [str(f) for f in args.merge if not (f / "accuracy.json").is_file()]
        if missing:
            parser.error(f"no accuracy.json in {', '.join(missing)}")
        return merge(args.merge, args.out)
    settings = Settings(
        repeats=args.repeats,
        budget_s=args.budget,
        profile_calls=args.profile_calls,
        threads=args.threads,
    )
    out = args.out or report_io.default_run_dir(Path("reports/benchmarks"), "accuracy")
    report_io.check_writable(out, ("accuracy.md", "accuracy.json"))
    started = time.perf_counter()
    load = os.getloadavg() if hasattr(os, "getloadavg") else ()
    runs = out / "runs"
    cases, kb = _run(args.sets, set(args.names), settings, args.threads, args.from_sweeps, runs)
    from benchmarks.accuracy_render import environment_line, render

    text = render(cases, kb, environment_line(load, time.perf_counter() - started, settings))
    payload = {
        "cases": [case_json(c) for c in cases],
        "kbreaks": kb,
        "settings": {k: getattr(settings, k) for k in ("repeats", "budget_s", "threads")},
        "from_sweeps": [str(p) for p in args.from_sweeps],
        "load_average_at_start": list(load),
        "wall_s": time.perf_counter() - started,
    }
    report_io.write_files(
        out, {"accuracy.md": text, "accuracy.json": json.dumps(payload, indent=2)}
    )
    print(text)
    print(f"written to {out}/", file=sys.stderr)
    return 0


def merge(folders: list[Path], out: Path | None) -> int:
    """One accuracy.md / accuracy.json of the cases of earlier results, in the order given."""
    from benchmarks.accuracy_render import render

    payloads = [json.loads((folder / "accuracy.json").read_text()) for folder in folders]
    cases = [case_from_json(c) for p in payloads for c in p["cases"]]
    kb = next((p["kbreaks"] for p in payloads if p.get("kbreaks")), None)
    out = out or report_io.default_run_dir(Path("reports/benchmarks"), "accuracy")
    report_io.check_writable(out, ("accuracy.md", "accuracy.json"))
    parts = "; ".join(
        f"{folder.name}: load average at start "
        f"{', '.join(f'{v:.2f}' for v in p.get('load_average_at_start', [])) or '-'}, "
        f"wall time {p.get('wall_s', 0.0) / 60:.1f} min"
        for folder, p in zip(folders, payloads, strict=True)
    )
    environment = f"Merged from {len(folders)} runs ({parts})."
    kept = ("settings", "from_sweeps", "load_average_at_start", "wall_s")
    merged_from = [
        {"folder": str(folder), **{k: p.get(k) for k in kept}}
        for folder, p in zip(folders, payloads, strict=True)
    ]
    payload = {"cases": [case_json(c) for c in cases], "kbreaks": kb, "merged_from": merged_from}
    report_io.write_files(
        out,
        {
            "accuracy.md": render(cases, kb, environment),
            "accuracy.json": json.dumps(payload, indent=2),
        },
    )
    print(f"written to {out}/", file=sys.stderr)
    return 0


def _run(
    sets: list[str],
    names: set[str],
    settings: Settings,
    threads: int,
    sweeps: list[Path],
    runs: Path,
) -> tuple[list[Case], dict[str, Any] | None]:
    cases: list[Case] = []
    if "scenarios" in sets:
        cases += scenario_cases(False, names, settings, runs, sweeps)
    if "training" in sets:
        cases += scenario_cases(True, names, settings, runs, sweeps)
    if "upstream" in sets:
        cases += [upstream_case(p, settings, threads, runs) for p in ("aimnet", "tabpfn")]
    for zoo in ("libzoo", "trainzoo", "zoo"):
        if zoo in sets:
            cases += zoo_cases(zoo, names, settings, sweeps, runs)
    kb = run_kbreaks(settings) if "kbreaks" in sets else None
    return cases, kb


if __name__ == "__main__":
    sys.exit(main())
