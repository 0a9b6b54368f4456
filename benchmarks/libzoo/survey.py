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
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks import survey_common

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


# Observed while building the zoo (torch 2.13.0+cpu and the versions above); they explain some
# rows of the table.
NOTES = (
    "- `fullgraph=True` can succeed where the default compile breaks: with `fullgraph=True` "
    "Dynamo's ShapeEnv allows scalar outputs and dynamic output shapes (torch/_dynamo/"
    "output_graph.py: `allow_scalar_outputs=one_graph or config.capture_scalar_outputs`, the "
    "same for dynamic output shape ops). So a GB0036/GB0124 break that a knob removes often "
    "compiles with fullgraph (tm_accuracy, pyg_gcn, pyg_gat, nf_spline, the user_* entries).",
    "- Where a break's line is in one of Dynamo's polyfills (its `all()`/`any()`), the survey "
    "reports the line that called it (sde_euler).",
    "- gpytorch uses Pyro's distribution base class when pyro-ppl is installed: the GP models' "
    "GB0006 at `pyro/distributions/distribution.py:26` exists only because pyro-ppl is in the "
    "same environment.",
    "- torchmetrics checks `_XLA_AVAILABLE` (a lazy lightning_utilities requirement check) on "
    "its first call: compiled before any eager call, tm_accuracy crashes with "
    "`InternalTorchDynamoError: PackageNotFoundError: No package metadata was found for "
    "torch_xla`. After one eager call the result is cached and the compile works; the survey "
    "always runs eager first.",
    "- pyg_graph_unet's compile crashes inside Dynamo (`IndexError: tuple index out of range` "
    "in torch/_dynamo/pgo.py's automatic-dynamic stride check, while Dynamo wraps a view's base "
    "tensor in a torch_geometric resume function, `torch_geometric/utils/loop.py:128`); with "
    "`dynamic=False` it compiles, in 61 graphs. Every knob and Inductor crash the same way.",
    "- tm_ssim_module has no break but recompiles on every call: torchmetrics' `Metric.forward` "
    "increments the int attribute `self._update_count`, and Dynamo guards on an nn.Module's int "
    "attributes (`self._update_count == 2` fails on the next call). Called 12 times it compiled "
    "one graph on each of the first 8 calls and none after (`recompile_limit` is 8: the frame "
    "then runs eagerly).",
    "- ode_dopri5's default compile works with the eager backend but fails with Inductor: "
    "`InductorError: LoweringException: DynamicOutputShapeException: aten._unique2.default` "
    "at `torchdiffeq/_impl/rk_common.py:232` (`torch.cat([step_t, jump_t]).unique("
    "return_counts=True)` on empty tensors: Dynamo puts it in a graph, Inductor cannot lower "
    "it). So `torch.compile(odeint)` with dopri5 raises on CPU here.",
    "- kornia_augment and sde_euler recompile inside a call (a list's length, a Python float "
    "specialised per step) and again on the second call.",
    "- Library code that the user writes by design (a Pyro model, a GPyTorch model class, an "
    "ODE or SDE drift) lives in models.py, so its lines are user code: the Pyro entries' GB0142 "
    "at the model's `with pyro.plate(...)` line is a user-code break reached through Pyro.",
)


# --- one model (runs in the child process) ---------------------------------------------------


def survey_one(name: str, threads: int = THREADS, inductor: bool = False) -> dict[str, Any]:
    """Survey one model; every step's failure is recorded, not raised."""
    import importlib.metadata

    import torch

    from benchmarks.libzoo.breaks import max_abs_diff
    from benchmarks.libzoo.models import MODELS, build_with_modules, parameter_count

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
            with torch._dynamo.config.patch(**settings):
                result, knob_breaks = _default_compile(fn, args, kwargs, diff)
            result["breaks"] = len(knob_breaks)
            result["codes"] = sorted({b["gb_code"] or "?" for b in knob_breaks})
            rec["knobs"][label] = result
    if inductor:
        rec["inductor"] = _compiled_first_call(fn, args, kwargs, diff)  # Inductor
    torch._dynamo.reset()
    return rec


def survey_inductor(name: str, threads: int = THREADS) -> dict[str, Any]:
    """Only the Inductor check of one model (merged into its existing record)."""
    import torch

    from benchmarks.libzoo.breaks import max_abs_diff
    from benchmarks.libzoo.models import build

    torch.set_num_threads(threads)
    workload = build("cpu", name)
    fn, args, kwargs = workload.fn, workload.args, dict(workload.kwargs)
    expected = fn(*args, **kwargs)
    result = _compiled_first_call(fn, args, kwargs, lambda out: max_abs_diff(expected, out))
    torch._dynamo.reset()
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

    from benchmarks.libzoo.breaks import BreakRecorder, describe_failure

    torch._dynamo.reset()
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

    from benchmarks.libzoo.breaks import describe_failure

    torch._dynamo.reset()
    try:
        out = torch.compile(fn, **options)(*args, **kwargs)
    except Exception as exc:
        return describe_failure(exc)
    return {"ok": True, "max_abs_diff": diff(out)}


# --- the split -----------------------------------------------------------------------------


def split_models(records: Iterable[Mapping[str, Any]]) -> tuple[list[str], list[str]]:
    """The tuning / held-out rule `models.py` documents, applied to survey records: groups (each
    library; the user-code entries form one group of their own), in name order; within a group,
    the models with breaks (a crashing default compile counts) by name, then the rest by name;
    alternate between the halves, each group starting on the half with fewer models with breaks
    so far (then fewer models; then tuning)."""
    groups: dict[str, list[tuple[bool, str]]] = {}
    for rec in records:
        group = "user code" if rec.get("user_code") else str(rec["library"])
        breaks = bool(rec.get("breaks")) or "error" in rec.get("default", {})
        groups.setdefault(group, []).append((breaks, str(rec["model"])))
    tuning: list[str] = []
    held_out: list[str] = []
    broken: set[str] = set()
    for group in sorted(groups):
        members = sorted(groups[group], key=lambda m: (not m[0], m[1]))
        broken.update(name for has_breaks, name in members if has_breaks)

        def load(half: list[str]) -> tuple[int, int]:
            return (sum(name in broken for name in half), len(half))

        halves = [tuning, held_out] if load(tuning) <= load(held_out) else [held_out, tuning]
        for i, (_, name) in enumerate(members):
            halves[i % 2].append(name)
    return tuning, held_out


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
        (args.out / "SURVEY.md").write_text(render_markdown(survey))
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
        print(f"[{i}/{len(names)}] {name}: {_one_line(rec)}", flush=True)
    import torch

    survey = {
        "torch": torch.__version__,
        "threads": args.threads,
        "libraries": library_versions(),
        "not_installed": NOT_INSTALLED,
        "models": [results[n] for n in MODELS if n in results],
    }
    json_path.write_text(json.dumps(survey, indent=1) + "\n")
    (args.out / "SURVEY.md").write_text(render_markdown(survey))
    print(f"wrote {json_path} and {args.out / 'SURVEY.md'}")
    return 0


def _quiet() -> None:
    """Keep the child's stdout for the result; library warnings go to stderr (the log)."""
    import logging
    import warnings

    warnings.simplefilter("ignore")
    logging.getLogger("torch._dynamo").setLevel(logging.ERROR)


# --- rendering -------------------------------------------------------------------------------


def _one_line(rec: Mapping[str, Any]) -> str:
    if "error" in rec:
        return f"ERROR {rec['error']}"
    crash = " (crashed)" if "error" in rec["default"] else ""
    return (
        f"~{rec['eager_ms_rough']:.1f} ms, {rec['default']['graphs']} graphs{crash}, "
        f"{len(rec['breaks'])} break sites, fullgraph {_fullgraph_cell(rec)}, "
        f"knobs {_knobs_cell(rec) or '-'}"
    )


def _diff_cell(value: float | None) -> str:
    if value is None:
        return "differs (structure)"
    if value == 0.0:
        return "= eager"
    return f"max abs diff {value:.1e}"


def _failure_cell(failure: Mapping[str, Any]) -> str:
    where = f" `{failure['where']}`" if failure.get("where") else ""
    if failure.get("gb_code"):
        return f"fails: {failure['gb_code']} {failure['gb_type']}{where}"
    return f"fails: {failure['error_type']}: {failure['message'][:90]}{where}"


def _fullgraph_cell(rec: Mapping[str, Any]) -> str:
    full = rec["fullgraph"]
    if full.get("ok"):
        return "ok, " + _diff_cell(full["max_abs_diff"])
    return _failure_cell(full)


def _knobs_cell(rec: Mapping[str, Any]) -> str:
    base = len(rec["breaks"])
    parts = []
    for label, res in rec.get("knobs", {}).items():
        if "error" in res:
            parts.append(f"{label}: crash ({res['error']['error_type']})")
            continue
        note = "" if res["max_abs_diff"] == 0.0 else f", {_diff_cell(res['max_abs_diff'])}"
        parts.append(f"{label} {base}→{res['breaks']} ({res['graphs']} graphs{note})")
    return "; ".join(parts)


def _break_cell(brk: Mapping[str, Any]) -> str:
    owner = "lib" if brk["in_library"] else "**user**"
    skipped = ", frame skipped" if brk["frame_skipped"] else ""
    repeat = f", ×{brk['count']}" if brk["count"] > 1 else ""
    return f"{brk['gb_code'] or '?'} `{brk['where']}` ({owner}{skipped}{repeat})"


def _default_cell(rec: Mapping[str, Any]) -> str:
    default = rec["default"]
    if "error" in default:
        return "crash: " + _failure_cell(default["error"]).removeprefix("fails: ")
    text = _diff_cell(default["max_abs_diff"])
    later = default.get("graphs_per_call", [])[1:]
    if any(later):
        text += f"; recompiles: calls 2-{len(later) + 1} compiled {'+'.join(map(str, later))}"
    return text


def render_markdown(survey: Mapping[str, Any]) -> str:
    records = survey["models"]
    ok = [r for r in records if "error" not in r]
    with_breaks = [r for r in ok if r["breaks"] or "error" in r["default"]]
    tuning, held_out = split_models(ok)
    lines = [
        "# Library zoo survey",
        "",
        f"torch {survey['torch']}, CPU, {survey['threads']} thread(s). Written by "
        "`python -m benchmarks.libzoo.survey`; data in `survey.json`. Every model is a tiny "
        "random-init model from a pip library other than transformers (the user-code entries "
        "wrap one), seeded, in eval mode with frozen parameters; `models.py` says what each "
        "computes.",
        "",
        "## Libraries",
        "",
        "Installed into the project venv with `pip install -c constraints.txt PKG==VERSION`, "
        "the constraints pinning torch==2.13.0 and this environment's numpy, scipy, sympy, "
        "networkx, jinja2 and matplotlib.",
        "",
        "| library | version | installed cleanly with torch 2.13 pinned | models (with user-code "
        "entries) |",
        "|---|---|---|---:|",
    ]
    counts: dict[str, int] = {}
    for rec in records:
        counts[rec.get("library", "?")] = counts.get(rec.get("library", "?"), 0) + 1
    for dist, version in survey["libraries"].items():
        clean = "yes" if version else "not installed"
        lines.append(f"| {dist} | {version or '-'} | {clean} | {counts.get(dist, 0)} |")
    for dist, reason in survey["not_installed"].items():
        lines.append(f"| {dist} | - | no: {reason} | 0 |")
    lines += [
        "",
        "## Models",
        "",
        f"{len(ok)} of {len(records)} models ran; {len(with_breaks)} have graph breaks (or a "
        'crashing default compile). All compiles use `backend="eager"` (Dynamo\'s graphs and '
        "breaks do not depend on the backend). *eager ms*: median of 10 calls, **rough** (a "
        "shared 2-core machine; not a result). *graphs*: graphs of the default compile's first "
        "call. *breaks*: one entry per registry code, line and skip state, at the line where "
        "Dynamo broke (package-relative; `benchmarks/...` is user code), *lib* or **user**, "
        "*frame skipped* when Dynamo gave up on the frame it was compiling, ×N when reported N "
        "times (recompiles, restarts). *default*: the default compile's output vs eager over "
        f"{COMPILED_CALLS} calls, and graphs compiled again by calls after the first. "
        "*fullgraph*: `fullgraph=True`. *knobs*: break entries left with "
        "`capture_scalar_outputs` (scalar), `capture_dynamic_output_shape_ops` (dynamic) or "
        "both.",
        "",
        "| model | library | family | params | eager ms (rough) | graphs | breaks | default "
        "| fullgraph | knobs |",
        "|---|---|---|---:|---:|---:|---|---|---|---|",
    ]
    for rec in records:
        if "error" in rec:
            lines.append(f"| {rec['model']} | | | | | | error: {rec['error']} | | | |")
            continue
        breaks = "<br>".join(_break_cell(b) for b in rec["breaks"]) or "0"
        family = rec["family"] + (" (user code)" if rec["user_code"] else "")
        lines.append(
            f"| {rec['model']} | {rec['library']} | {family} | {rec['params']:,} | "
            f"{rec['eager_ms_rough']:.2f} | {rec['default']['graphs']} | {breaks} | "
            f"{_default_cell(rec)} | {_fullgraph_cell(rec)} | {_knobs_cell(rec) or '-'} |"
        )
    inductor = [r for r in ok if "inductor" in r]
    if inductor:
        lines += [
            "",
            "## Inductor output vs eager",
            "",
            "The default compile with Inductor (`torch.compile(fn)`, what the advisor times), "
            "first call: whether it runs, and its output vs eager (`survey.py --inductor`):",
            "",
            "| model | Inductor |",
            "|---|---|",
        ]
        for rec in inductor:
            res = rec["inductor"]
            cell = _diff_cell(res["max_abs_diff"]) if res.get("ok") else _failure_cell(res)
            lines.append(f"| {rec['model']} | {cell} |")
    lines += [
        "",
        "## What each model computes",
        "",
        "| model | computes |",
        "|---|---|",
        *(f"| {r['model']} | {r.get('computes', '')} |" for r in ok),
        "",
        "## Notes",
        "",
        *NOTES,
        "",
        "## Tuning / held-out split",
        "",
        "`models.TUNING_MODELS` and `models.HELD_OUT_MODELS`, by the rule in `models.py` "
        "(`survey.split_models` applies it to this survey):",
        "",
        f"- tuning ({len(tuning)}): {', '.join(tuning)}",
        f"- held-out ({len(held_out)}): {', '.join(held_out)}",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
