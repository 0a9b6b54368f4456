"""Filter the profiler's native log lines (e.g. `USDT: ... profiler_start`) out of stderr.

Kineto writes them straight to file descriptor 2, so Python-level redirection cannot catch
them. We redirect fd 2 to a temporary file for the duration and replay every other line, so a
workload's own stderr output is kept.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Iterator

_NATIVE_LOG = re.compile(r"^(USDT|INFO|WARNING):\d{4}-\d\d-\d\d .*\.cpp:\d+\]")


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
                if not _NATIVE_LOG.match(line)
            ]
            if kept:
                sys.stderr.write("".join(kept))
                sys.stderr.flush()
