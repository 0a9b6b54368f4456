"""Regenerate the recorded files the trace-reader tests read (tests/test_trace_readers.py).

    .venv/bin/python tests/data/traces/regenerate.py     # about 25 s on 2 CPU cores with a cold
    # Inductor cache, under 10 s with a warm one

It runs `tiny_job.py` as a user runs their own job, in a fresh process with `TORCH_TRACE` set
(Inductor, so the profile has Inductor's graph-call events), which compiles `tiny_step` (two
breaks: a data-dependent branch, a disabled helper), profiles four steps under a schedule
(wait 1, warm-up 1, active 2) with `prof.step()`, and exports the Chrome trace. Then, here:

- `torch_trace/dedicated_log_torch_trace_rank_0_tiny.log`: the process's log, trimmed to stay
  small. Every record the reader keeps stays whole; of the others (chromium events, generated
  code, cache artifacts: 95% of the 1 MB), the first of each kind stays with the start of its
  payload, so the tests see the reader skip them. The configuration snapshots inside
  `compilation_metrics` (`inductor_config` and the like, 30 kB a compile id, read by nobody
  here) are replaced by "<trimmed>". The file is renamed as torchrun would name rank 0's.
- `profile_rank0.json`: the Chrome trace as exported; `profile_rank0.json.gz`: the same, gzipped
  (as `tensorboard_trace_handler(..., use_gzip=True)` writes it).

Timings and compile ids come from the run; the tests assert structure (compile ids, nesting,
sites), never times. Commit the regenerated files with the change that needed them.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
KEPT_EVENTS = ("dynamo_start", "compilation_metrics", "dynamo_output_graph")
KEPT_ARTIFACTS = ("dynamo_graph_break_reason", "recompile_reasons", "torch_version")
OTHERS_PER_KIND = 1  # records of each kind the reader skips, left in to be skipped
OTHER_PAYLOAD_LINES = 12  # of their payloads, the first lines
LINE_CHARS = 200  # and of each such line, the first characters
TRIMMED_METRICS = ("inductor_config", "dynamo_config", "functorch_config", "compiler_config")
LOG_NAME = "dedicated_log_torch_trace_rank_0_tiny.log"


def run_job(work: Path) -> tuple[Path, Path]:
    log_dir = work / "log"
    log_dir.mkdir()
    env = dict(os.environ, TORCH_TRACE=str(log_dir))
    subprocess.run(
        [sys.executable, str(HERE / "tiny_job.py"), str(work), "inductor"],
        env=env,
        check=True,
        cwd=ROOT,
        timeout=300,
    )
    (log,) = log_dir.glob("dedicated_log_torch_trace_*.log")
    return log, work / "profile_rank0.json"


def record_kind(metadata: dict) -> str:
    artifact = metadata.get("artifact")
    if isinstance(artifact, dict):
        return f"artifact:{artifact.get('name')}"
    return next(iter(metadata))


def trimmed_log(text: str) -> str:
    """The log with only the first of each skipped kind of record (the start of its payload),
    config snapshots trimmed."""
    out: list[str] = []
    seen: dict[str, int] = {}
    keep = read = False
    payload_lines = 0
    for line in text.split("\n"):
        if line.startswith("\t"):
            payload_lines += 1
            if read:
                out.append(line)
            elif keep and payload_lines <= OTHER_PAYLOAD_LINES:
                out.append(line[:LINE_CHARS])
            continue
        if not line:
            continue
        prefix, _, body = line.partition("] {")
        metadata = json.loads("{" + body)
        kind = record_kind(metadata)
        seen[kind] = seen.get(kind, 0) + 1
        read = kind in KEPT_EVENTS or kind.removeprefix("artifact:") in KEPT_ARTIFACTS
        keep = read or seen[kind] <= OTHERS_PER_KIND
        payload_lines = 0
        if not keep:
            continue
        if kind == "compilation_metrics":
            metrics = metadata["compilation_metrics"]
            metrics.update({k: "<trimmed>" for k in TRIMMED_METRICS if k in metrics})
            line = f"{prefix}] {json.dumps(metadata)}"
        out.append(line)
    return "\n".join(out) + "\n"


def main() -> None:
    out_log = HERE / "torch_trace"
    out_log.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        log, profile = run_job(Path(tmp))
        text = log.read_text(encoding="utf-8")
        (out_log / LOG_NAME).write_text(trimmed_log(text), encoding="utf-8")
        shutil.copyfile(profile, HERE / "profile_rank0.json")
    raw = (HERE / "profile_rank0.json").read_bytes()
    (HERE / "profile_rank0.json.gz").write_bytes(gzip.compress(raw, mtime=0))
    for path in sorted(HERE.rglob("*")):
        if path.is_file() and path.suffix in (".log", ".json", ".gz"):
            print(f"{path.relative_to(ROOT)}: {path.stat().st_size} bytes")


if __name__ == "__main__":
    main()
