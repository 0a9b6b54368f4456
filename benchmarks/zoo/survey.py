"""Survey of the model zoo: which models break, where, and whether a measured all-fixed
reference exists for them (fullgraph compiles and matches eager, or a Dynamo knob removes
every break). It picks models for the accuracy benchmark.

Per model, each in its own subprocess (a crash or a hang stops only that model):
- build time, parameter count, eager determinism (two calls), median eager ms over 10 calls;
- the default compile (`backend="eager"`, so it is fast) under the advisor's CaptureSession:
  graphs, breaks (registry code, gb_type, where) and whether its output matches eager;
- `torch.compile(fn, backend="eager", fullgraph=True)`: compiles or fails (gb_type, where), and
  whether its output matches eager;
- where there are breaks, the default compile again with `capture_scalar_outputs`,
  `capture_dynamic_output_shape_ops` and both: breaks and graphs left, output vs eager;
  then fullgraph and the knob that left no break with Inductor (what the advisor times:
  an eager-backend success does not promise an Inductor one).

    .venv/bin/python -m benchmarks.zoo.survey                 # every model (about 15 minutes)
    .venv/bin/python -m benchmarks.zoo.survey mixtral gpt2    # some: updates their rows

Results: benchmarks/zoo/survey.json and benchmarks/zoo/SURVEY.md (or --out DIR).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks import survey_common

HERE = Path(__file__).resolve().parent
TIMEOUT_S = 300
THREADS = 1  # intra-op threads: tiny models gain nothing from more, and a busy machine
# oversubscribed by OpenMP made 2-thread eager timings swing 10-40x
_RESULT = "SURVEY-RESULT "


# --- one model (runs in the child process) ---------------------------------------------------


def survey_one(name: str, threads: int = THREADS, inductor: bool = True) -> dict[str, Any]:
    """Measure one zoo model; every step's failure is recorded, not raised."""
    import torch
    import transformers

    torch.set_num_threads(threads)
    from advisor.measure import torch_adapter as ta
    from advisor.measure.torch_adapter import compare_outputs
    from benchmarks.zoo.hf_models import MODELS, build, parameter_count

    spec = MODELS[name]
    rec: dict[str, Any] = {
        "model": name,
        "family": spec.family,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "threads": threads,
    }
    start = time.perf_counter()
    workload = build("cpu", name)
    rec["build_s"] = round(time.perf_counter() - start, 3)
    rec["params"] = parameter_count(workload.fn)
    fn, args, kwargs = workload.fn, workload.args, dict(workload.kwargs)

    expected = fn(*args, **kwargs)
    rec["deterministic"] = compare_outputs(expected, fn(*args, **kwargs)).matches
    rec["eager_ms"] = round(survey_common.median_ms(lambda: fn(*args, **kwargs)), 3)

    def matches(out: Any) -> bool:
        return compare_outputs(expected, out).matches

    compiled, capture = compile_and_capture(fn, args, kwargs)
    rec["default"] = {
        "graphs": len(capture.graphs),
        "ops": sum(g.ops for g in capture.graphs),
        "recompiles": len(capture.recompiles),
        "matches_eager": matches(compiled(*args, **kwargs)),
    }
    rec["breaks"] = [_break_dict(b) for b in capture.sites]
    rec["fullgraph"] = _fullgraph_check(fn, args, kwargs, matches)
    rec["knobs"] = {}
    if capture.sites:
        for label, settings in survey_common.KNOBS.items():
            rec["knobs"][label] = _with_knobs(settings, fn, args, kwargs, matches)
        if inductor:
            rec["inductor"] = _inductor_checks(rec["knobs"], fn, args, kwargs, matches)
    ta.reset_dynamo()
    return rec


def _fullgraph_check(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    matches: Callable[[Any], bool],
) -> dict[str, Any]:
    """`torch.compile(fn, backend="eager", fullgraph=True)`: its output vs eager, or how it
    fails (a fullgraph failure is a result here)."""
    import torch

    from advisor.measure import torch_adapter as ta

    ta.reset_dynamo()
    try:
        out = torch.compile(fn, backend="eager", fullgraph=True)(*args, **kwargs)
    except Exception as exc:
        info = ta.describe_compile_failure(exc)
        return {
            "ok": False,
            "error_type": info.type,
            "gb_type": info.gb_type,
            "gb_code": info.gb_code,
            "where": _where(info.file, info.line),
            "message": info.message[:300],
        }
    return {"ok": True, "matches_eager": matches(out)}


def _inductor_checks(
    knobs: Mapping[str, Mapping[str, Any]],
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    matches: Callable[[Any], bool],
) -> dict[str, Any]:
    """The all-fixed candidates again with Inductor (what the advisor times): fullgraph, and
    the default compile with the first knob that left no break under the eager backend."""
    import torch

    checks = {"fullgraph": _compiled_run(torch.compile(fn, fullgraph=True), args, kwargs, matches)}
    label = next(
        (k for k, r in knobs.items() if r.get("breaks") == 0 and r.get("matches_eager")), None
    )
    if label is not None:
        with survey_common.knobs_set(survey_common.KNOBS[label]):
            checks[label] = _compiled_run(torch.compile(fn), args, kwargs, matches)
    return checks


def _compiled_run(
    compiled: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    matches: Callable[[Any], bool],
) -> dict[str, Any]:
    from advisor.measure import torch_adapter as ta

    ta.reset_dynamo()
    try:
        out = compiled(*args, **kwargs)
    except Exception as exc:  # a failing compile is a result here
        info = ta.describe_compile_failure(exc)
        return {"ok": False, "error": f"{info.type}: {info.message[:200]}"}
    return {"ok": True, "matches_eager": matches(out)}


def _with_knobs(
    settings: Mapping[str, bool],
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    matches: Callable[[Any], bool],
) -> dict[str, Any]:
    try:
        with survey_common.knobs_set(settings):
            compiled, capture = compile_and_capture(fn, args, kwargs)
            out = compiled(*args, **kwargs)
    except Exception as exc:  # a knob that makes the compile fail is a result here
        return {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"}
    return {
        "graphs": len(capture.graphs),
        "breaks": len(capture.sites),
        "codes": sorted({b.gb_code or "?" for b in capture.sites}),
        "matches_eager": matches(out),
    }


def compile_and_capture(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> tuple[Callable[..., Any], Any]:
    """Compile with the eager backend (Dynamo's breaks do not depend on the backend) and run
    once inside the advisor's capture."""
    import torch

    from advisor.measure import torch_adapter as ta
    from advisor.measure.capture import CaptureSession

    ta.reset_dynamo()
    compiled = torch.compile(fn, backend="eager")
    with CaptureSession() as session:
        compiled(*args, **kwargs)
    return compiled, session.result()


def _break_dict(site: Any) -> dict[str, Any]:
    """A break site as the survey lists it: where Dynamo broke, reached from where."""
    reached = site.reached_from
    return {
        "gb_code": site.gb_code,
        "gb_type": site.gb_type,
        "where": _where(site.where.file, site.where.line),
        "function": site.where.function,
        "code": site.where.code,
        "frame_skipped": site.frame_skipped,
        "compile_ids": list(site.compile_ids),
        "reached_from": _where(reached.file, reached.line) if reached else None,
        "also_at": [_where(a.file, a.line) for a in site.also_at],
    }


def _where(file: str | None, line: int | None) -> str | None:
    return f"{survey_common.short_path(file)}:{line}" if file else None


# --- the sweep (parent process) --------------------------------------------------------------


def run_isolated(
    name: str, timeout_s: float, log_dir: Path, threads: int, inductor: bool = True
) -> dict[str, Any]:
    """Survey one model in a child process; a crash, a hang or an error becomes a record."""
    options = ["--threads", str(threads)] + ([] if inductor else ["--no-inductor"])
    return survey_common.run_child(
        "benchmarks.zoo.survey",
        name,
        options,
        timeout_s,
        log_dir,
        _RESULT,
        survey_common.child_env(),
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.zoo.survey", description=__doc__)
    survey_common.add_survey_arguments(parser, "zoo", HERE, TIMEOUT_S, THREADS)
    parser.add_argument("--render", action="store_true", help="only rewrite SURVEY.md from JSON")
    parser.add_argument(
        "--no-inductor", action="store_true", help="skip the Inductor checks (models with breaks)"
    )
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        with _quiet_dynamo():
            print(
                _RESULT + json.dumps(survey_one(args.one, args.threads, not args.no_inductor)),
                flush=True,
            )
        return 0

    from benchmarks.zoo.hf_models import MODELS

    if args.render:
        records = list(_previous(args.out / "survey.json").values())
        (args.out / "SURVEY.md").write_text(render_markdown(records))
        return 0
    names = survey_common.chosen_models(parser, args.names, MODELS)
    args.out.mkdir(parents=True, exist_ok=True)
    json_path = args.out / "survey.json"
    results = _previous(json_path) if args.names else {}
    log_dir = survey_common.log_folder("zoo")
    for i, name in enumerate(names, 1):
        rec = run_isolated(name, args.timeout, log_dir, args.threads, not args.no_inductor)
        results[name] = rec
        print(f"[{i}/{len(names)}] {name}: {_one_line(rec)}", flush=True)
    ordered = [results[n] for n in MODELS if n in results]
    json_path.write_text(json.dumps(ordered, indent=1) + "\n")
    (args.out / "SURVEY.md").write_text(render_markdown(ordered))
    print(f"wrote {json_path} and {args.out / 'SURVEY.md'}")
    return 0


@contextmanager
def _quiet_dynamo() -> Iterator[None]:
    """Keep the child's stdout for the result (Dynamo's warnings go to stderr anyway)."""
    import logging

    from advisor.measure import torch_adapter as ta

    logging.getLogger(ta.DYNAMO_LOGGER).setLevel(logging.ERROR)
    yield


def _previous(path: Path) -> dict[str, dict[str, Any]]:
    if not path.is_file():
        return {}
    return {rec["model"]: rec for rec in json.loads(path.read_text())}


# --- rendering -------------------------------------------------------------------------------


def _one_line(rec: Mapping[str, Any]) -> str:
    if "error" in rec:
        return f"ERROR {rec['error']}"
    return (
        f"{rec['eager_ms']:.1f} ms, {rec['default']['graphs']} graphs, "
        f"{len(rec['breaks'])} breaks, fullgraph {_fullgraph(rec)}, knobs {_knobs(rec) or '-'}"
    )


def _fullgraph(rec: Mapping[str, Any]) -> str:
    fg = rec["fullgraph"]
    if fg["ok"]:
        return "ok" if fg["matches_eager"] else "ok (differs)"
    if fg.get("gb_code"):
        return f"fails ({fg['gb_code']} {fg['gb_type']} `{fg['where']}`)"
    return f"fails ({fg['error_type']}: {fg['message'][:60]} `{fg['where']}`)"


def _knobs(rec: Mapping[str, Any]) -> str:
    base = len(rec["breaks"])
    parts = []
    for label, res in rec.get("knobs", {}).items():
        if "error" in res:
            parts.append(f"{label}: error")
            continue
        mark = "" if res["matches_eager"] else " (differs)"
        parts.append(f"{label} {base}→{res['breaks']}{mark}")
    return ", ".join(parts)


def all_fixed_reference(rec: Mapping[str, Any]) -> str | None:
    """How a model with breaks gets a measured all-fixed time: 'fullgraph' or a knob label,
    checked with the eager backend and, where the survey ran it, with Inductor too."""
    if "error" in rec or not rec["breaks"]:
        return None

    def works(res: Mapping[str, Any] | None) -> bool:
        return bool(res and res.get("ok", True) and res.get("matches_eager"))

    inductor = rec.get("inductor")
    candidates = [("fullgraph", rec["fullgraph"])]
    candidates += [(k, r) for k, r in rec.get("knobs", {}).items() if r.get("breaks") == 0]
    for label, res in candidates:
        if works(res) and (inductor is None or works(inductor.get(label))):
            return label
    return None


def _inductor_cell(rec: Mapping[str, Any]) -> str:
    checks = rec.get("inductor")
    if not checks:
        return "-"
    parts = []
    for label, res in checks.items():
        if not res["ok"]:
            parts.append(f"{label} fails ({res['error'][:70]})")
        else:
            parts.append(f"{label} ok" + ("" if res["matches_eager"] else " (differs)"))
    return "; ".join(parts)


def render_markdown(records: Sequence[Mapping[str, Any]]) -> str:
    ok = [r for r in records if "error" not in r]
    env = ok[0] if ok else {}
    broken = [r for r in ok if r["breaks"]]
    lines = [
        "# Model zoo survey",
        "",
        f"torch {env.get('torch', '?')}, transformers {env.get('transformers', '?')}, CPU, "
        f"{env.get('threads', '?')} thread(s). Written by `python -m benchmarks.zoo.survey`; "
        "data in `survey.json`. Eager ms: median of 10 calls on a shared 2-core machine "
        "(rough: other jobs ran alongside).",
        "",
        f"{len(ok)} of {len(records)} models ran; {len(broken)} have graph breaks. All compiles "
        'use `backend="eager"` (Dynamo\'s graphs and breaks do not depend on the backend). '
        "*graphs*: graphs of the default compile; *breaks*: the advisor's capture (one entry "
        "per registry code and the line where Dynamo broke), package-relative, with the user "
        "line it was reached from in brackets when there is one, "
        "*(skip)* a frame Dynamo skipped; *fullgraph*: `fullgraph=True` and its output vs "
        "eager; *knobs*: breaks left with `capture_scalar_outputs` (scalar), "
        "`capture_dynamic_output_shape_ops` (dynamic) or both; *Inductor*: for a model with "
        "breaks, fullgraph and the knob that left no break, compiled with Inductor (what the "
        "advisor times); *ref*: a measured all-fixed reference for a model with breaks "
        "(compiles and matches eager with both backends).",
        "",
        "| model | family | params | eager ms | graphs | breaks | fullgraph | default = eager "
        "| knobs | Inductor | ref |",
        "|---|---|---:|---:|---:|---|---|---|---|---|---|",
    ]
    for rec in records:
        if "error" in rec:
            lines.append(f"| {rec['model']} | | | | | error: {rec['error']} | | | | | |")
            continue
        breaks = "<br>".join(_break_cell(b) for b in rec["breaks"]) or "0"
        lines.append(
            f"| {rec['model']} | {rec['family']} | {rec['params']:,} | {rec['eager_ms']:.2f} "
            f"| {rec['default']['graphs']} | {breaks} | {_fullgraph(rec)} "
            f"| {'yes' if rec['default']['matches_eager'] else 'NO'} | {_knobs(rec) or '-'} "
            f"| {_inductor_cell(rec)} | {all_fixed_reference(rec) or '-'} |"
        )
    nondet = [r["model"] for r in ok if not r["deterministic"]]
    lines += ["", f"Eager non-deterministic: {', '.join(nondet) or 'none'}.", ""]
    lines += _notes(ok)
    return "\n".join(lines)


def _notes(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """What the table implies, derived from the records, and caveats on reading it."""

    def names(models: Sequence[Mapping[str, Any]]) -> str:
        return ", ".join(r["model"] for r in models) or "none"

    broken = [r for r in records if r["breaks"]]
    referenced = [r for r in broken if all_fixed_reference(r)]
    moved = [
        r
        for r in broken
        if any(k.get("breaks", 0) > len(r["breaks"]) for k in r.get("knobs", {}).values())
    ]
    knob_errors = [r for r in broken if any("error" in k for k in r.get("knobs", {}).values())]
    inductor_only = [
        r
        for r in broken
        if r["fullgraph"]["ok"] and not r.get("inductor", {}).get("fullgraph", {}).get("ok", True)
    ]
    ghost = [r for r in broken if any(b["gb_code"] == "GB4347" for b in r["breaks"])]
    caller = [
        r for r in broken if any(b["where"].startswith("benchmarks/zoo/") for b in r["breaks"])
    ]
    return [
        "## Notes",
        "",
        f"- Measured all-fixed reference (fullgraph compiles and matches eager, or a knob "
        f"leaves no break, with the eager backend and with Inductor): {names(referenced)}.",
        f"- Fullgraph compiles with the eager backend but fails with Inductor: "
        f"{names(inductor_only)}.",
        f"- A knob that moves the break to the next data-dependent line (more breaks with it "
        f"than without): {names(moved)}.",
        f"- A knob under which the compile itself raises: {names(knob_errors)}.",
        f"- GB4347 'Missing tp_iternext' at `transformers/utils/output_capturing.py:256` "
        f"appears only where another break made Dynamo skip a frame ({names(ghost)}): a "
        "follow-on of that break, not a cause of its own.",
        f"- Breaks reported at a line of this repository ({names(caller)}): where every frame "
        "inside the compiled function is in site-packages, the capture names the nearest "
        "frame outside it, which can be the caller of the compiled function (the survey "
        "itself, or `.venv/bin/advisor` under `advisor run`). The advisor counts every "
        "site-packages file as library code when it runs in a virtualenv (sysconfig's "
        "`platstdlib` is `.venv/lib/pythonX.Y`, a prefix of site-packages), so one root cause "
        "can be listed twice: once at the caller, once at the transformers line.",
        "",
    ]


def _break_cell(brk: Mapping[str, Any]) -> str:
    reached = brk.get("reached_from")
    via = f" (from `{reached}`)" if reached else ""
    skipped = " (skip)" if brk["frame_skipped"] else ""
    return f"{brk['gb_code'] or '?'} `{brk['where']}`{via}{skipped}"


if __name__ == "__main__":
    sys.exit(main())
