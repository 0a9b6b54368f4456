"""Survey of the library zoo (benchmarks/libzoo): per model, its graph breaks and whether a
fully compiled reference exists.

Per model, each in its own subprocess with a timeout (a crash or a hang costs one model), one
torch thread:
- parameter count, eager determinism (two calls, bitwise), a rough eager ms (median of 10);
- the default compile, `torch.compile(fn, backend="eager")` (Dynamo's graphs and breaks do not
  depend on the backend), with a `BreakRecorder` on Dynamo's structured trace: graphs, breaks
  (registry code, gb_type, package-relative file:line, library or user code, frame skipped),
  output vs eager (max abs diff), and graphs compiled again on a second call (recompiles);
- `fullgraph=True` (backend eager): compiles or fails (code, where), output vs eager;
- where there are breaks, the default compile with `capture_scalar_outputs`,
  `capture_dynamic_output_shape_ops` and both: breaks and graphs left, output vs eager;
- with --inductor (or --inductor-only, which adds it to the existing records): the default
  compile with Inductor, the compile the advisor times: whether it runs, and its output vs eager
  (the float noise Inductor's fused reductions bring).

    .venv/bin/python -m benchmarks.libzoo.survey                    # every model
    .venv/bin/python -m benchmarks.libzoo.survey nf_spline ode_rk4  # some: updates their rows
    .venv/bin/python -m benchmarks.libzoo.survey --render           # SURVEY.md from the JSON

Results: benchmarks/libzoo/survey.json and benchmarks/libzoo/SURVEY.md (or --out DIR).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks import survey_common
from benchmarks.libzoo.survey_render import one_line, render_markdown

HERE = Path(__file__).resolve().parent
COMPILED_CALLS = 3  # the default compile's calls: a recompile shows on the 2nd or 3rd
TIMEOUT_S = 600
THREADS = 1
_RESULT = "LIBZOO-RESULT "
# The files that call the compiled function here: their frames are not the workload's.
CALLERS = frozenset({str(Path(__file__).resolve())})

# How each library fared with `pip install -c constraints PKG` (torch==2.13.0 and this
# environment's numpy/scipy/sympy/networkx/jinja2/matplotlib pinned): import name, and what
# happened. Every library listed in `INSTALLED` installed with no change to a pinned package.
INSTALLED: dict[str, str] = {  # pip distribution -> import name
    "monai": "monai",
    "pyro-ppl": "pyro",
    "torchmetrics": "torchmetrics",
    "kornia": "kornia",
    "gpytorch": "gpytorch",
    "botorch": "botorch",
    "torchdiffeq": "torchdiffeq",
    "torchsde": "torchsde",
    "torch-geometric": "torch_geometric",
    "normflows": "normflows",
    "e3nn": "e3nn",
    "einops": "einops",
    "transformers": "transformers",  # the user_moe_lambda entry (the zoo's own extra)
}
NOT_INSTALLED: dict[str, str] = {
    "timm": "timm 1.0.31 (and every release) requires torchvision; with torch==2.13.0 pinned pip "
    "resolves torchvision 0.28.0 (which declares torch==2.13.0), but that wheel fails on "
    "import here: `RuntimeError: operator torchvision::nms does not exist` (checked in a "
    "throwaway --target folder, not installed)",
}


# --- one model (runs in the child process) ---------------------------------------------------


def survey_one(name: str, threads: int = THREADS, inductor: bool = False) -> dict[str, Any]:
    """Survey one model; every step's failure is recorded, not raised."""
    import importlib.metadata

    import torch

    from advisor.measure import torch_adapter as ta
    from benchmarks.libzoo.breaks import max_abs_diff
    from benchmarks.libzoo.common import parameter_count
    from benchmarks.libzoo.models import MODELS, build_with_modules

    torch.set_num_threads(threads)
    entry = MODELS[name]
    rec: dict[str, Any] = {
        "model": name,
        "library": entry.library,
        "library_version": importlib.metadata.version(entry.library),
        "family": entry.family,
        "computes": entry.computes,
        "user_code": entry.user_code,
        "torch": torch.__version__,
        "threads": threads,
    }
    workload, modules = build_with_modules("cpu", name)
    rec["params"] = parameter_count(modules)
    fn, args, kwargs = workload.fn, workload.args, dict(workload.kwargs)

    expected = fn(*args, **kwargs)
    rec["deterministic"] = max_abs_diff(expected, fn(*args, **kwargs)) == 0.0
    rec["eager_ms_rough"] = round(survey_common.median_ms(lambda: fn(*args, **kwargs)), 3)

    def diff(out: Any) -> float | None:
        return max_abs_diff(expected, out)

    rec["default"], breaks = _default_compile(fn, args, kwargs, diff)
    rec["breaks"] = breaks
    rec["fullgraph"] = _compiled_first_call(fn, args, kwargs, diff, backend="eager", fullgraph=True)
    rec["knobs"] = {}
    if breaks or "error" in rec["default"]:
        for label, settings in survey_common.KNOBS.items():
            with survey_common.knobs_set(settings):
                result, knob_breaks = _default_compile(fn, args, kwargs, diff)
            result["breaks"] = len(knob_breaks)
            result["codes"] = sorted({b["gb_code"] or "?" for b in knob_breaks})
            rec["knobs"][label] = result
    if inductor:
        rec["inductor"] = _compiled_first_call(fn, args, kwargs, diff)  # Inductor
    ta.reset_dynamo()
    return rec


def survey_inductor(name: str, threads: int = THREADS) -> dict[str, Any]:
    """Only the Inductor check of one model (merged into its existing record)."""
    import torch

    from advisor.measure import torch_adapter as ta
    from benchmarks.libzoo.breaks import max_abs_diff
    from benchmarks.libzoo.models import build

    torch.set_num_threads(threads)
    workload = build("cpu", name)
    fn, args, kwargs = workload.fn, workload.args, dict(workload.kwargs)
    expected = fn(*args, **kwargs)
    result = _compiled_first_call(fn, args, kwargs, lambda out: max_abs_diff(expected, out))
    ta.reset_dynamo()
    return {"model": name, "inductor": result}


def _default_compile(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    diff: Callable[[Any], float | None],
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """`torch.compile(fn, backend="eager")` called COMPILED_CALLS times under a BreakRecorder:
    graphs compiled by each call (later calls compile only when a guard failed: a recompile)
    and each output vs eager (the largest difference)."""
    import torch

    from advisor.measure import torch_adapter as ta
    from benchmarks.libzoo.breaks import BreakRecorder, describe_failure

    ta.reset_dynamo()
    compiled = torch.compile(fn, backend="eager")
    per_call: list[int] = []
    diffs: list[float | None] = []
    with BreakRecorder() as recorder:
        try:
            for _ in range(COMPILED_CALLS):
                before = recorder.graphs
                diffs.append(diff(compiled(*args, **kwargs)))
                per_call.append(recorder.graphs - before)
        except Exception as exc:  # a crashing compile is a result here
            failure = describe_failure(exc)
            result = {"graphs": recorder.graphs, "error": failure}
            return result, [b.as_dict(CALLERS) for b in recorder.breaks]
    worst = None if None in diffs else max(d for d in diffs if d is not None)
    result = {"graphs": per_call[0], "graphs_per_call": per_call, "max_abs_diff": worst}
    return result, [b.as_dict(CALLERS) for b in recorder.breaks]


def _compiled_first_call(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    diff: Callable[[Any], float | None],
    **options: Any,
) -> dict[str, Any]:
    """The first call of `torch.compile(fn, **options)` from a fresh Dynamo: its output vs
    eager, or the failure (a fullgraph or Inductor failure is a result here, not a crash of the
    survey)."""
    import torch

    from advisor.measure import torch_adapter as ta
    from benchmarks.libzoo.breaks import describe_failure

    ta.reset_dynamo()
    try:
        out = torch.compile(fn, **options)(*args, **kwargs)
    except Exception as exc:
        return describe_failure(exc)
    return {"ok": True, "max_abs_diff": diff(out)}


# --- the sweep (parent process) --------------------------------------------------------------


def run_isolated(
    name: str, timeout_s: float, log_dir: Path, threads: int, inductor: str | None
) -> dict[str, Any]:
    """Survey one model in a child process; a crash, a hang or an error becomes a record.
    `inductor`: None, "--inductor" or "--inductor-only"."""
    env = survey_common.child_env(OMP_NUM_THREADS=str(threads))
    options = ["--threads", str(threads)] + ([inductor] if inductor else [])
    return survey_common.run_child(
        "benchmarks.libzoo.survey", name, options, timeout_s, log_dir, _RESULT, env
    )


def library_versions() -> dict[str, str | None]:
    import importlib.metadata

    versions: dict[str, str | None] = {}
    for dist in INSTALLED:
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = None
    return versions


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.libzoo.survey", description=__doc__)
    survey_common.add_survey_arguments(parser, "libzoo", HERE, TIMEOUT_S, THREADS)
    parser.add_argument("--inductor", action="store_true", help="also compile with Inductor")
    parser.add_argument(
        "--inductor-only",
        action="store_true",
        help="only the Inductor check, added to the models' existing records",
    )
    parser.add_argument("--render", action="store_true", help="only rewrite SURVEY.md from JSON")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        _quiet()
        if args.inductor_only:
            record = survey_inductor(args.one, args.threads)
        else:
            record = survey_one(args.one, args.threads, args.inductor)
        print(_RESULT + json.dumps(record), flush=True)
        return 0

    from benchmarks.libzoo.models import MODELS

    json_path = args.out / "survey.json"
    if args.render:
        survey = json.loads(json_path.read_text())
        (args.out / "SURVEY.md").write_text(render_markdown(survey, COMPILED_CALLS))
        return 0
    names = survey_common.chosen_models(parser, args.names, MODELS)
    args.out.mkdir(parents=True, exist_ok=True)
    keep = (args.names or args.inductor_only) and json_path.is_file()
    previous = json.loads(json_path.read_text()) if keep else {}
    results = {rec["model"]: rec for rec in previous.get("models", [])}
    log_dir = survey_common.log_folder("libzoo")
    mode = "--inductor-only" if args.inductor_only else "--inductor" if args.inductor else None
    for i, name in enumerate(names, 1):
        rec = run_isolated(name, args.timeout, log_dir, args.threads, mode)
        if args.inductor_only:
            if name not in results:
                parser.error(f"--inductor-only: no survey record for {name}")
            failed = {"ok": False, "error_type": "survey", "message": str(rec.get("error"))}
            inductor = rec.get("inductor", failed)
            results[name] = {**results[name], "inductor": inductor}
            print(f"[{i}/{len(names)}] {name}: inductor {inductor}", flush=True)
            continue
        results[name] = rec
        print(f"[{i}/{len(names)}] {name}: {one_line(rec)}", flush=True)
    import torch

    survey = {
        "torch": torch.__version__,
        "threads": args.threads,
        "libraries": library_versions(),
        "not_installed": NOT_INSTALLED,
        "models": [results[n] for n in MODELS if n in results],
    }
    json_path.write_text(json.dumps(survey, indent=1) + "\n")
    (args.out / "SURVEY.md").write_text(render_markdown(survey, COMPILED_CALLS))
    print(f"wrote {json_path} and {args.out / 'SURVEY.md'}")
    return 0


def _quiet() -> None:
    """Keep the child's stdout for the result; library warnings go to stderr (the log)."""
    import logging
    import warnings

    from advisor.measure import torch_adapter as ta

    warnings.simplefilter("ignore")
    logging.getLogger(ta.DYNAMO_LOGGER).setLevel(logging.ERROR)


if __name__ == "__main__":
    sys.exit(main())
