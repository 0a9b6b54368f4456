"""Regenerate the recorded capture/profile artifacts used by the fast attribution tests.

How to run (from the repository root, about a minute on 2 CPU cores; one torch process):

    .venv/bin/python tests/data/regenerate.py            # all cases
    .venv/bin/python tests/data/regenerate.py print if   # only these cases
    .venv/bin/python tests/data/regenerate.py --reclassify  # re-read the names of the
        # recorded events and guards (after the adapter's classification changed), keeping
        # every recorded time as it is

For every case in `tests/cases/breaks.py` it resets Dynamo, compiles the case with
`backend="eager"` wrapped by `tests.support.compile.marked_backend` (so each graph call is a
profiler event named like Inductor's marker), runs it inside a `CaptureSession`, profiles a few
warm calls with `profile_calls`, and writes `tests/data/<case>.capture.json` and
`tests/data/<case>.trace.json`. The `inductor_print` artifacts use real Inductor and carry the
break probe's calls (`harness.break_probe`: the price of one more graph call and of a break's
glue).
Timings in the traces are machine-dependent; the tests only assert structure, counts and
coverage, never absolute times. Commit the regenerated files together with the change that
needed them.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import json  # noqa: E402
from typing import Any  # noqa: E402

from advisor.measure import harness  # noqa: E402
from advisor.measure import torch_adapter as ta  # noqa: E402
from advisor.measure.profile import classified, profile_calls  # noqa: E402
from tests.cases.breaks import CASES  # noqa: E402
from tests.support.compile import compile_and_capture  # noqa: E402

DATA = Path(__file__).resolve().parent
N_CALLS = 3
INDUCTOR_CASES = {"inductor_print": "print"}


def record(name: str, case_name: str, backend: str, mark: bool) -> None:
    case = CASES[case_name]
    args = case.make_args()
    extra = tuple(make() for make in case.extra_args)
    compiled, capture = compile_and_capture(
        case.build(), args, backend=backend, mark_graphs=mark, extra_calls=extra
    )
    probe = harness.break_probe("cpu") if backend == "inductor" else None
    trace = profile_calls(lambda: compiled(*args), N_CALLS, "cpu", warmup=2, probe=probe)
    (DATA / f"{name}.capture.json").write_text(capture.to_json() + "\n")
    (DATA / f"{name}.trace.json").write_text(trace.to_json() + "\n")
    print(f"{name}: {len(capture.sites)} break sites, {len(trace.calls)} calls")


def _reclassify_event(event: dict[str, Any]) -> None:
    event.update(classified(event["name"]))
    for child in event.get("children", []):
        _reclassify_event(child)


def _reclassify_recompile(record: dict[str, Any]) -> None:
    cause, dim = ta.recompile_cause(record["reason"])
    record.update(cause=cause, dim=dim, backend_switch=ta.is_backend_switch(record["reason"]))


def reclassify() -> None:
    """Add what the adapter reads from event names and guard texts to the recorded artifacts."""
    for path in sorted(DATA.glob("*.trace.json")):
        data = json.loads(path.read_text())
        for call in (*data["calls"], *data.get("probe_calls", [])):
            _reclassify_event(call)
        path.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    for path in sorted(DATA.glob("*.capture.json")):
        data = json.loads(path.read_text())
        for record in data.get("recompiles", []):
            _reclassify_recompile(record)
        path.write_text(json.dumps(data, indent=1) + "\n")


def main(names: list[str]) -> None:
    if names == ["--reclassify"]:
        reclassify()
        return
    wanted = names or [*CASES, *INDUCTOR_CASES]
    for name in wanted:
        if name in INDUCTOR_CASES:
            record(name, INDUCTOR_CASES[name], "inductor", mark=False)
        elif name in CASES:
            record(name, name, "eager", mark=True)
        else:
            raise SystemExit(f"unknown case {name!r}; known: {[*CASES, *INDUCTOR_CASES]}")


if __name__ == "__main__":
    main(sys.argv[1:])
