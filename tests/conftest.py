"""Every test leaves the process as it found it: Dynamo's config, torch's loggers, the
profiler and torch's thread count (what a user's own process would inherit from an advisor
call). The autouse fixture fails the test that changes one of them."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

# Loggers whose handlers or levels the advisor touches (capture, muted warnings).
WATCHED_LOGGERS = ("torch", "torch._dynamo", "torch.__trace", "torch._inductor")


def process_state() -> dict[str, Any]:
    import torch

    from advisor.measure import torch_adapter

    loggers = {name: _logger_state(logging.getLogger(name)) for name in WATCHED_LOGGERS}
    return {
        "dynamo config": torch_adapter.dynamo_config_snapshot(),
        "loggers": loggers,
        "profiler active": torch_adapter.profiler_active(),
        "torch threads": torch.get_num_threads(),
    }


def _logger_state(logger: logging.Logger) -> tuple[int, tuple[logging.Handler, ...]]:
    # pytest's own capture handlers come and go with each test phase
    ours = tuple(h for h in logger.handlers if not type(h).__module__.startswith("_pytest"))
    return logger.level, ours


def changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    out = []
    for key, old in before.items():
        new = after[key]
        if key == "dynamo config":
            out += [
                f"dynamo config {name}: {old.get(name)!r} -> {new.get(name)!r}"
                for name in sorted(set(old) | set(new))
                if old.get(name) != new.get(name)
            ]
        elif old != new:
            out.append(f"{key}: {old!r} -> {new!r}")
    return out


@pytest.fixture(scope="session", autouse=True)
def _torch_initialised() -> None:
    """Set up torch's loggers once, so torch's own lazy set-up inside a test is not mistaken
    for a leak: importing Dynamo and Inductor adds handlers, and torch's `LazyTraceHandler`
    on the structured-trace logger removes itself at the first record it sees."""
    import torch._dynamo
    import torch._inductor.config  # noqa: F401

    from advisor.measure.torch_adapter import TRACE_LOGGER

    logging.getLogger(TRACE_LOGGER).debug("advisor tests: let torch's lazy trace handler go")


@pytest.fixture(autouse=True)
def no_leaks(_torch_initialised: None) -> Iterator[None]:
    before = process_state()
    yield
    leaked = changes(before, process_state())
    if leaked:
        pytest.fail("the test leaked global state: " + "; ".join(leaked), pytrace=False)
