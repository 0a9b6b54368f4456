"""The replicated protocol's workers start warm: forked from a server that has imported Dynamo
and Inductor and probed the CPU's vector ISA once (`advisor.measure.forkserver_preload`), so no
worker pays those seconds on its first compile (before: 3-5 s per compiling worker here)."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from advisor.measure import replicate


def _what_the_worker_starts_with(conn: Any) -> None:
    from torch._inductor import cpu_vec_isa

    probed = cpu_vec_isa.valid_vec_isa_list.cache_info().currsize
    conn.send(("torch._inductor.compile_fx" in sys.modules, probed))
    conn.close()


@pytest.mark.skipif(sys.platform != "linux", reason="the fork server is the Linux start method")
def test_a_worker_starts_with_the_compiler_imported_and_the_cpu_probed() -> None:
    ctx = replicate.context()
    parent, child = ctx.Pipe()
    process = ctx.Process(target=_what_the_worker_starts_with, args=(child,))
    process.start()
    child.close()
    assert parent.poll(120), "the worker did not report"
    imported, probed = parent.recv()
    process.join(timeout=30)
    assert imported, "Inductor was not imported before the worker started"
    assert probed == 1, "the vector ISA was not probed before the worker started"
