"""A stand-in for `advisor.measure.isolated_worker` that starts in milliseconds (no torch): it
reads the task, does what the target's `behave` parameter says for that task kind, and writes a
canned result, so the isolation tests can hang, crash and fail on purpose.

    python tests/support/fake_worker.py TASK RESULT FAULTS

Behaviours: "ok", "hang", "segfault", "exit" (exit 1 after a line on stderr), "error" (bad
input: a result with an error line).
"""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import sys
import time


def mode_result(mode: str) -> dict[str, object]:
    return {
        "mode": mode,
        "status": "ok",
        "first_call_s": 0.5,
        "latency": {"median_ms": 1.0, "iqr_ms": 0.1, "n": 3, "samples_ms": [0.9, 1.0, 1.1]},
    }


def what_if_result(task: dict[str, object]) -> dict[str, object]:
    plan = task["plan"]
    assert isinstance(plan, dict)
    knob = plan["knob"]
    if isinstance(knob, dict):
        name, setting, fix = knob["name"], knob["setting"], knob["fix"]
    else:
        name, setting, fix = f"placement:{plan['kind']}", plan["kind"], "placement"
    return {
        "knob": name,
        "setting": setting,
        "fix": fix,
        "status": "measured",
        "saving_ms": 0.2,
        "kind": plan["kind"],
    }


def environment(kind: str) -> dict[str, object]:
    """Where this worker measured: a name per task kind, so a test can tell whose it is."""
    return {
        "torch": "fake",
        "python": "3",
        "device_name": f"worker-{kind}",
        "cpu_threads": 1,
        "load_average": [0.25, 0.25, 0.25],
        "cpu_affinity": [1],
        "cpu_count": 2,
    }


def wait_forever() -> None:
    while True:
        time.sleep(0.05)


def main(request: str, result: str, faults: str) -> int:
    stack_file = open(faults, "w")  # kept open: faulthandler writes to it
    faulthandler.enable(stack_file, all_threads=False)
    faulthandler.register(signal.SIGUSR1, stack_file, all_threads=False)
    with open(request, encoding="utf-8") as handle:
        task = json.load(handle)
    kind = task["kind"]
    behave = json.loads(task["params_json"]).get("behave", {}).get(kind, "ok")
    if behave == "hang":
        wait_forever()
    if behave == "segfault":
        os.kill(os.getpid(), signal.SIGSEGV)
    if behave == "exit":
        print("RuntimeError: the backend gave up", file=sys.stderr)
        return 1
    out: dict[str, object] = {"name": "fake", "environment": environment(kind)}
    if behave == "error":
        out["error"] = "the workload fails in eager mode: RuntimeError: bad"
    elif kind == "what_if":
        out["what_if"] = what_if_result(task)
    else:
        out["mode"] = mode_result(kind)
    with open(result, "w", encoding="utf-8") as handle:
        json.dump(out, handle)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
