"""What the studies in `benchmarks/` need from torch's internals and the advisor's capture
does not use: Dynamo's `graph_breaks` artifact logs, turned on without printing.

Dynamo writes the structured-trace artifact of a frame it skips after a failed resume
(`dynamo_graph_break_reason`) only while its `graph_breaks` log is on. The library zoo's
survey listens to the structured trace (`StructuredTraceListener`) inside this context, so a
skipped frame's break is recorded as well as the breaks Dynamo resumes after.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

# The suffix of the loggers torch registers for its `graph_breaks` artifact (one per module of
# Dynamo's that logs it: torch._dynamo.convert_frame.__graph_breaks, ...).
_GRAPH_BREAK_ARTIFACT = ".__graph_breaks"


@contextmanager
def quiet_graph_break_logs() -> Iterator[None]:
    """Dynamo's `graph_breaks` artifact loggers on (level DEBUG) and silent (no propagation, a
    null handler) while inside; each logger's level, propagation and handlers as before after."""
    import torch._dynamo  # noqa: F401  (registers the graph_breaks artifact loggers)

    null = logging.NullHandler()
    saved: list[tuple[logging.Logger, int, bool]] = []
    for name in list(logging.root.manager.loggerDict):
        if name.startswith("torch.") and name.endswith(_GRAPH_BREAK_ARTIFACT):
            logger = logging.getLogger(name)
            saved.append((logger, logger.level, logger.propagate))
            logger.setLevel(logging.DEBUG)
            logger.propagate = False
            logger.addHandler(null)
    try:
        yield
    finally:
        for logger, level, propagate in saved:
            logger.removeHandler(null)
            logger.setLevel(level)
            logger.propagate = propagate
