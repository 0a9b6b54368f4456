"""Muting Dynamo's duplicate graph-break warnings during a CLI run."""

from __future__ import annotations

import logging

import pytest

from advisor.measure.quiet import muted_dynamo_warnings


def test_dynamo_warnings_muted_then_restored(caplog: pytest.LogCaptureFixture) -> None:
    parent = logging.getLogger("torch._dynamo")
    child = logging.getLogger("torch._dynamo.variables.tensor")
    before = parent.level
    caplog.set_level(logging.WARNING)  # the root handler takes warnings
    with muted_dynamo_warnings():
        assert parent.level >= logging.ERROR
        child.warning("Graph break from `Tensor.item()`")  # inherits the muted level
        child.error("errors still show")
    assert parent.level == before
    messages = [r.getMessage() for r in caplog.records]
    assert "Graph break from `Tensor.item()`" not in messages
    assert "errors still show" in messages
