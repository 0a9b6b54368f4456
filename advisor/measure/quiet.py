"""Filter the profiler's native log lines (e.g. `USDT: ... profiler_start`) out of stderr,
and mute Dynamo's own graph-break warnings while the advisor runs (it reports every break).

Kineto writes them straight to file descriptor 2, so Python-level redirection cannot catch
them. We redirect fd 2 to a temporary file for the duration and replay every other line, so a
workload's own stderr output is kept.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator

from advisor.measure import torch_adapter as ta


@contextlib.contextmanager
def filtered_native_stderr() -> Iterator[None]:
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # stderr replaced (pytest capture, notebooks)
        yield
        return
    sys.stderr.flush()
    saved = os.dup(fd)
    with tempfile.TemporaryFile(mode="w+b") as sink:
        os.dup2(sink.fileno(), fd)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, fd)
            os.close(saved)
            sink.seek(0)
            kept = [
                line
                for line in sink.read().decode("utf-8", "replace").splitlines(keepends=True)
                if not ta.PROFILER_NATIVE_LOG.match(line)
            ]
            if kept:
                sys.stderr.write("".join(kept))
                sys.stderr.flush()


@contextlib.contextmanager
def muted_dynamo_warnings() -> Iterator[None]:
    """Raise the `torch._dynamo` logger to ERROR for the duration, and ignore the Python
    warnings Dynamo's own modules issue: both (e.g. "Graph break from `Tensor.item()`", "Dynamo
    does not know how to trace the builtin ...") repeat what the report says, at length. The
    structured trace the capture reads goes through another logger and is not affected; the
    workload's own warnings are kept."""
    logger = logging.getLogger(ta.DYNAMO_LOGGER)
    saved = logger.level
    logger.setLevel(max(saved, logging.ERROR))
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", module=ta.DYNAMO_WARNING_MODULES)
            yield
    finally:
        logger.setLevel(saved)
