"""Run Python in a child process where torch cannot be imported, as on a machine without it:
for the tests that the judging side (core, judge, gate, render, sweep) needs no torch.

An import finder refuses torch and its submodules. `sys.modules['torch'] = None` would also
block it, but libraries that look torch up in sys.modules then trip on None.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BLOCK_TORCH = (
    "import sys\n"
    "class NoTorch:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name == 'torch' or name.startswith('torch.'):\n"
    "            raise ImportError('no torch on this machine')\n"
    "sys.meta_path.insert(0, NoTorch())\n"
)


def run_without_torch(code: str) -> subprocess.CompletedProcess[str]:
    """`python -c code` from the repository root with torch blocked; its output as text."""
    return subprocess.run(
        [sys.executable, "-c", BLOCK_TORCH + code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
