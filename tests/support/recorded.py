"""The recorded print case (tests/data/print.capture.json and print.trace.json, captured from
`tests/cases/breaks.py:print`) as saved measurements, with timings made up to round numbers:
what `advisor judge` and `advisor sweep --rejudge` read in the tests that run without torch."""

from __future__ import annotations

from pathlib import Path

from advisor.core.artifacts import Capture, Measurements, ProfileTrace
from advisor.core.model import Environment, LatencyStats, ModeResult, Settings, WorkloadInfo

DATA = Path(__file__).resolve().parents[1] / "data"
PRINT_CASE_TARGET = "tests/cases/breaks.py:print"


def print_case_measurements(name: str, environment: Environment) -> Measurements:
    """The print case measured as workload `name`: default mode 0.105 ms, eager 0.2 ms."""
    capture = Capture.from_json((DATA / "print.capture.json").read_text())
    trace = ProfileTrace.from_json((DATA / "print.trace.json").read_text())
    samples = (0.104, 0.106, 0.105, 0.107, 0.105)
    default = ModeResult("default", "ok", 1.0, LatencyStats(0.105, 0.002, 5, samples))
    eager = ModeResult("eager", "ok", 0.01, LatencyStats(0.2, 0.004, 5, (0.2,) * 5))
    workload = WorkloadInfo(name, PRINT_CASE_TARGET, "cpu")
    return Measurements(workload, environment, Settings(), (eager, default), capture, trace)
