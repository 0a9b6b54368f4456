"""Survey of the training zoo: what Dynamo does with each model's training step, per form.

Per model, in its own subprocess (a crash or a hang stops only that model), for each form
("module": the model compiled in place, the step eager; "step": the whole step compiled):
- once per model, a rough eager step time (median of 10 steps after 2, one thread, on a
  shared machine: a label, not a result);
- three steps compiled with backend="eager" (Dynamo's graphs and breaks do not depend on the
  backend): the graphs compiled, frames compiled and skipped (`fail_type`), recompiles, and
  each break with its registry code(s), where it is (file:line) and whose code that is (the
  library's, torch's, or this repository's), read from Dynamo's structured trace (the torch
  adapter's listener); and whether the three losses are finite.

    .venv/bin/python -m benchmarks.trainzoo.survey              # every model, a few minutes
    .venv/bin/python -m benchmarks.trainzoo.survey gcn xlm      # some: updates their rows
    .venv/bin/python -m benchmarks.trainzoo.survey --render     # the table from the JSON

Results: benchmarks/trainzoo/survey.json and the table in benchmarks/trainzoo/SURVEY.md (between
its table markers; the notes around it are written by hand).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
TABLE_START, TABLE_END = "<!-- survey table -->", "<!-- end survey table -->"
STEPS = 3

_LINK = re.compile(r"compile-graph-break-site/gb/gb(\d+)\.html")
_AT = re.compile(r"Graph break in user code at (.+):(\d+)")


def whose(path: str) -> tuple[str, str]:
    """(owner, short path): the package a site-packages file belongs to, else "user"."""
    marker = "site-packages/"
    if marker in path:
        short = path.split(marker, 1)[1]
        return short.split("/", 1)[0], short
    try:
        return "user", str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return "user", path


def _break_entry(payload: str) -> dict[str, Any]:
    """One `dynamo_graph_break_reason` payload: its code(s), gb_type, where and whose code."""
    at = _AT.search(payload)
    codes = list(dict.fromkeys(f"GB{n}" for n in _LINK.findall(payload)))
    reason = payload.split("Graph Break Reason:", 1)[-1].strip().split("\n\n", 1)
    gb_type = reason[1].strip().splitlines()[0] if len(reason) > 1 else reason[0][:80]
    owner, short = whose(at.group(1)) if at else ("?", "?")
    line = int(at.group(2)) if at else 0
    return {"codes": codes, "gb_type": gb_type, "owner": owner, "where": f"{short}:{line}"}


def _trace_summary(records: list[Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(breaks, frames) from Dynamo's structured-trace records (the torch adapter's listener):
    every graph break reason, and every frame's compilation metrics."""
    breaks, frames = [], []
    for r in records:
        if r.event == "dynamo_graph_break_reason":
            breaks.append(_break_entry(r.payload or ""))
        elif r.event == "compilation_metrics":
            frames.append(
                {
                    "frame": str(r.compile_id),
                    "co_name": r.data.get("co_name"),
                    "fail_type": r.data.get("fail_type"),
                    "recompile_reason": r.data.get("recompile_reason"),
                }
            )
    return breaks, frames


def survey_form(model: str, form: str) -> dict[str, Any]:
    import torch

    from advisor.measure import torch_adapter as ta
    from benchmarks.trainzoo.models import build

    ta.reset_dynamo()
    w = build("cpu", model, form)
    graphs: list[int] = []

    def counting_eager(gm: torch.fx.GraphModule, example_inputs: Any) -> Callable[..., Any]:
        graphs.append(sum(1 for n in gm.graph.nodes if n.op.startswith("call_")))
        return gm.forward

    error = None
    losses: list[float] = []
    try:
        with ta.StructuredTraceListener() as listener:
            if w.compiled_module is not None:
                w.compiled_module.compile(backend=counting_eager)
                call: Callable[[], Any] = w
            else:
                compiled = torch.compile(w.fn, backend=counting_eager)

                def call() -> Any:
                    return compiled(*w.args, **w.kwargs)

            losses = [float(call()) for _ in range(STEPS)]
    except Exception as exc:  # a compile that raises is a finding, not a crash of the survey
        error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:160]}"
    finally:
        ta.reset_dynamo()
    breaks, frames = _trace_summary(listener.records)
    return {
        "graphs": len(graphs),
        "graph_ops": graphs,
        "frames": frames,
        "skipped_frames": sum(1 for f in frames if f["fail_type"]),
        "recompiles": sum(1 for f in frames if not f["frame"].endswith("/0")),
        "breaks": breaks,
        "losses_finite": bool(losses) and all(x == x and abs(x) != float("inf") for x in losses),
        "error": error,
    }


def survey_model(model: str) -> dict[str, Any]:
    import torch

    from benchmarks.trainzoo.models import FORMS, MODELS, build

    torch.set_num_threads(1)
    eager = build("cpu", model)  # the step is the same in both forms when nothing is compiled
    times = []
    for i in range(12):
        start = time.perf_counter()
        eager()
        if i >= 2:
            times.append((time.perf_counter() - start) * 1e3)
    result: dict[str, Any] = {
        "model": model,
        "library": MODELS[model][0],
        "params": sum(p.numel() for p in eager.compiled_module.parameters()),
        "eager_ms_rough": round(statistics.median(times), 1),
    }
    for form in FORMS:
        result[form] = survey_form(model, form)
    return result


def _break_summary(breaks: list[dict[str, Any]]) -> str:
    """Distinct breaks: code chain, place and owner, with how many times each was reported."""
    counts: dict[tuple[str, str, str], int] = {}
    for b in breaks:
        key = ("+".join(b["codes"]) or "?", b["where"], b["owner"])
        counts[key] = counts.get(key, 0) + 1
    if not counts:
        return "0"
    parts = [
        f"{codes} `{where}` ({owner}){f' x{n}' if n > 1 else ''}"
        for (codes, where, owner), n in counts.items()
    ]
    return "<br>".join(parts)


def render_table(results: list[dict[str, Any]]) -> str:
    rows = [
        "| model | library | params | eager step ms (rough) | form | graphs compiled | "
        "skipped frames | recompiles | breaks (code `file:line` (whose)) | losses |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        for form in ("module", "step"):
            f = r[form]
            losses = "finite" if f["losses_finite"] else f"error: {f['error']}"
            rows.append(
                f"| {r['model']} | {r['library']} | {r['params']:,} | {r['eager_ms_rough']} | "
                f"{form} | {f['graphs']} | {f['skipped_frames']} | "
                f"{f['recompiles']} | {_break_summary(f['breaks'])} | {losses} |"
            )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("models", nargs="*", help="models to survey (default: all)")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # the child: one model, JSON out
    parser.add_argument("--out", type=Path, default=HERE)
    parser.add_argument("--render", action="store_true", help="only rewrite the table from JSON")
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(survey_model(args.one)))
        return 0

    from benchmarks.trainzoo.models import MODELS

    json_path = args.out / "survey.json"
    old = json.loads(json_path.read_text()) if json_path.is_file() else []
    if args.render:
        write_markdown(args.out / "SURVEY.md", old)
        return 0
    by_model = {r["model"]: r for r in old}
    for model in args.models or list(MODELS):
        print(f"surveying {model} ...", file=sys.stderr, flush=True)
        child = subprocess.run(
            [sys.executable, "-m", "benchmarks.trainzoo.survey", "--one", model],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=900,
        )
        if child.returncode != 0:
            print(child.stderr[-2000:], file=sys.stderr)
            continue
        by_model[model] = json.loads(child.stdout.strip().splitlines()[-1])
    results = [by_model[m] for m in MODELS if m in by_model]
    json_path.write_text(json.dumps(results, indent=1) + "\n")
    print(write_markdown(args.out / "SURVEY.md", results))
    return 0


def write_markdown(md_path: Path, results: list[dict[str, Any]]) -> str:
    """The table between SURVEY.md's markers (the notes around it are kept), or a new page."""
    table = render_table(results)
    if md_path.is_file() and TABLE_START in md_path.read_text():
        text = md_path.read_text()
        head, rest = text.split(TABLE_START, 1)
        tail = rest.split(TABLE_END, 1)[1]
        md_path.write_text(f"{head}{TABLE_START}\n{table}\n{TABLE_END}{tail}")
    else:
        md_path.write_text(f"# Training zoo survey\n\n{TABLE_START}\n{table}\n{TABLE_END}\n")
    return table


if __name__ == "__main__":
    sys.exit(main())
