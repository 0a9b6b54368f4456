"""The no-leak fixture (tests/conftest.py) sees each kind of change it is there to catch."""

from __future__ import annotations

import logging

import torch

from advisor.measure import torch_adapter
from tests.conftest import changes, process_state


def test_a_dynamo_config_change_is_seen() -> None:
    before = process_state()
    with torch_adapter.dynamo_config_patch("capture_scalar_outputs", True):
        during = process_state()
    assert changes(before, during) == ["dynamo config capture_scalar_outputs: False -> True"]
    assert changes(before, process_state()) == []


def test_a_handler_left_on_a_torch_logger_is_seen() -> None:
    before = process_state()
    logger = logging.getLogger("torch._dynamo")
    handler = logging.NullHandler()
    logger.addHandler(handler)
    try:
        found = changes(before, process_state())
    finally:
        logger.removeHandler(handler)
    assert len(found) == 1 and found[0].startswith("loggers:")


def test_a_thread_count_change_and_an_active_profiler_are_seen() -> None:
    before = process_state()
    previous = torch.get_num_threads()
    torch.set_num_threads(previous + 1)
    try:
        threads = changes(before, process_state())
    finally:
        torch.set_num_threads(previous)
    with torch.profiler.profile():
        profiling = changes(before, process_state())
    assert threads == [f"torch threads: {previous!r} -> {previous + 1!r}"]
    assert profiling == ["profiler active: False -> True"]
