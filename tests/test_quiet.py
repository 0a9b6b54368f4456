"""Muting Dynamo's duplicate graph-break warnings during a CLI run."""

from __future__ import annotations

import logging
import warnings

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


def test_dynamo_python_warnings_ignored_and_the_workloads_kept() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with muted_dynamo_warnings():
            for module in ("torch._dynamo.variables.functions", "torch._dynamo", "mylib.model"):
                warnings.warn_explicit("Dynamo does not know how to trace", UserWarning, "f.py",
                                       1, module=module)  # fmt: skip
        warnings.warn_explicit("after", UserWarning, "f.py", 2, module="torch._dynamo.utils")
    assert [(str(w.message), w.lineno) for w in caught] == [
        ("Dynamo does not know how to trace", 1),  # mylib's
        ("after", 2),  # the filter is gone afterwards
    ]
