"""What a run changes in the process, put back afterwards (the Python API leaves the process as
it found it): compile config, logging levels and handlers, warning filters, torch's thread
count, grad mode and random state."""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator

from advisor.measure import torch_adapter


@contextlib.contextmanager
def restored_globals() -> Iterator[None]:
    """Put back what a run changes in the process: compile config, logging, warning filters,
    threads, grad mode and random state."""
    config = torch_adapter.compile_config_state()
    loggers = _logging_state()
    try:
        with warnings.catch_warnings(), torch_adapter.kept_torch_state():
            yield
    finally:
        _restore_logging(loggers)
        torch_adapter.restore_compile_config(config)


LoggerState = tuple[logging.Logger, int, list[logging.Handler], bool, bool]


def _logging_state() -> list[LoggerState]:
    """Level, handlers, propagate and disabled of the root logger and every logger that exists
    now (loggers created during the run, e.g. by a first `import torch`, keep their setup)."""
    loggers = [logging.getLogger()] + [
        lg for lg in logging.root.manager.loggerDict.values() if isinstance(lg, logging.Logger)
    ]
    return [(lg, lg.level, list(lg.handlers), lg.propagate, lg.disabled) for lg in loggers]


def _restore_logging(state: list[LoggerState]) -> None:
    for logger, level, handlers, propagate, disabled in state:
        logger.setLevel(level)
        for handler in [h for h in logger.handlers if h not in handlers]:
            logger.removeHandler(handler)
        for handler in [h for h in handlers if h not in logger.handlers]:
            logger.addHandler(handler)
        logger.propagate, logger.disabled = propagate, disabled
