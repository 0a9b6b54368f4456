"""One process, both forms: an example's script form and factory form loaded side by side
and their eager calls timed in alternating blocks (`python -m benchmarks.script_forms_ab
NAME`, run by `benchmarks.script_forms`). Eager only: a second compile of the same code in one
process is not a first one (shared/torch-facts.md section 11), and eager is what says whether
the two forms hand the harness the same work (inputs, grad mode, model state). Prints one JSON
line: the median of the per-round ratios script / factory and each form's median ms."""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

from advisor.core.model import Settings
from advisor.core.script import SCRIPT_PARAM, ScriptSpec
from advisor.measure.script_survey import survey_script
from advisor.measure.script_target import measured_spec, planned, script_spec
from advisor.measure.workload import load_target

ROOT = Path(__file__).resolve().parents[1]
ROUNDS, BLOCK_S = 40, 0.02


def pinned_spec(name: str) -> ScriptSpec:
    """The script form as `advisor run` pins it: surveyed, its callable and unit chosen."""
    spec = script_spec(str(ROOT / f"examples/scripts/{name}.py"), ())
    return measured_spec(spec, planned(spec, survey_script(spec, 300.0), Settings()))


def main(name: str) -> int:
    import torch

    spec = pinned_spec(name)
    torch.set_num_threads(1)
    script = load_target(spec.path, "cpu", {SCRIPT_PARAM: spec.to_param()})
    factory = load_target(f"examples/scripts/factories.py:{name}", "cpu")
    number = {}
    for label, work in (("script", script), ("factory", factory)):
        for _ in range(5):
            work()
        started = time.perf_counter()
        work()
        number[label] = max(1, round(BLOCK_S / (time.perf_counter() - started)))
    per_call: dict[str, list[float]] = {"script": [], "factory": []}
    for round_index in range(ROUNDS):
        order = ("script", "factory") if round_index % 2 == 0 else ("factory", "script")
        for label in order:
            work, n = (script if label == "script" else factory), number[label]
            started = time.perf_counter()
            for _ in range(n):
                work()
            per_call[label].append((time.perf_counter() - started) / n * 1e3)
    ratios = [s / f for s, f in zip(per_call["script"], per_call["factory"], strict=True)]
    print(
        json.dumps(
            {
                "ratio": statistics.median(ratios),
                "script_ms": statistics.median(per_call["script"]),
                "factory_ms": statistics.median(per_call["factory"]),
                "rounds": ROUNDS,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
