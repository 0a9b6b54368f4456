"""The C allocator as a what-if: the default mode with glibc's malloc keeping freed memory.

A CPU step that allocates large tensors can spend much of its time in page faults: glibc serves
an allocation above its mmap threshold with a fresh mapping and returns it to the system when it
is freed, and trims the heap's free top back to the system, so the next step maps, faults and
zeroes the same pages again. The threshold moves with what the process freed before, so two
processes of the same script fault a different number of times per step and run at different
speeds (measured here, the convolutional part of a kornia training step, forward and backward:
5.9 to 8.8 ms in fresh processes at 560 to 1,870 faults a step; 5.1 to 5.4 ms and under 3
faults with the settings below).

The what-if sets what a user sets at launch with `MALLOC_MMAP_THRESHOLD_=33554432
MALLOC_TRIM_THRESHOLD_=1073741824`: allocations up to 32 MiB (glibc's largest threshold on
64-bit) from the heap, and the heap kept up to 1 GiB of free memory. It is set with `mallopt` in
the arm's own worker before its build (the setting holds for the rest of that process, so it is
never set in a process that measures anything else). Where the C library is not glibc it does
not apply. It is planned from the page faults the profile process's calls took
(`ProfileTrace.minor_faults_per_call`, `policy.allocator_worth_trying`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from advisor.core.model import BreakSite
from advisor.measure import harness
from advisor.measure.variants import variant_record
from advisor.measure.whatif import Variant
from advisor.measure.workload import Workload

# glibc's mallopt parameters (malloc.h) and the values set, as the environment variables a user
# sets at launch (`LAUNCH_SETTING`).
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD_BYTES = 32 * 1024 * 1024
TRIM_THRESHOLD_BYTES = 1024 * 1024 * 1024
LAUNCH_SETTING = (
    f"MALLOC_MMAP_THRESHOLD_={MMAP_THRESHOLD_BYTES} MALLOC_TRIM_THRESHOLD_={TRIM_THRESHOLD_BYTES}"
)


def _glibc() -> Any | None:
    """glibc's handle with `mallopt`, or None where the C library is another (musl, macOS)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    if not hasattr(libc, "mallopt") or not hasattr(libc, "gnu_get_libc_version"):
        return None
    return libc


def applies() -> bool:
    return _glibc() is not None


def keep_freed_memory() -> None:
    """Set glibc's malloc to keep freed memory, for the rest of this process; a RuntimeError
    where it cannot be (not glibc, or a setting refused)."""
    libc = _glibc()
    if libc is None:
        raise RuntimeError("the C library is not glibc: its malloc has no mallopt to set")
    settings = ((M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES), (M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))
    for key, value in settings:
        if not libc.mallopt(key, value):
            raise RuntimeError(f"glibc's mallopt refused setting {key} to {value}")


def allocator_variant(targets: list[BreakSite]) -> Variant | None:
    """The default mode compiled as the user compiles it, in a process whose malloc keeps freed
    memory; None where the C library is not glibc."""
    if not applies():
        return None
    record = replace(
        variant_record("allocator", tuple(targets)), knob="allocator", setting=LAUNCH_SETTING
    )

    def make_call(workload: Workload, backend: Any) -> Callable[[], Any]:
        keep_freed_memory()  # this worker measures nothing else (see the module's docstring)
        return harness.compiled_call(workload, backend, False)

    return Variant(record, make_call)
