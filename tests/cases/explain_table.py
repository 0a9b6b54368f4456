"""Print, per break case: explain's graph_break_count, the advisor's break count, the truth, and
the attribution coverage. Run: .venv/bin/python tests/cases/explain_table.py [backend]
(explain is only called here, in a separate step after the advisor's own capture)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
from tabulate import tabulate  # noqa: E402

from advisor.judge.attribute import attribute  # noqa: E402
from advisor.measure.capture import compile_and_capture  # noqa: E402
from advisor.measure.profile import profile_calls  # noqa: E402
from tests.cases.breaks import CASES  # noqa: E402


def main(backend: str) -> None:
    rows = []
    for name, case in CASES.items():
        args = case.make_args()
        extra = tuple(make() for make in case.extra_args)
        fn, capture = compile_and_capture(
            case.build(),
            args,
            backend=backend,
            mark_graphs=backend != "inductor",
            extra_calls=extra,
        )
        result = attribute(profile_calls(lambda fn=fn, args=args: fn(*args), 10, "cpu"), capture)
        explain = torch._dynamo.explain(case.build())
        for extra_args in extra:
            explain(*extra_args)
        eo = explain(*args)
        rows.append(
            [
                name,
                eo.graph_break_count,
                len(capture.breaks),
                len(case.breaks),
                ", ".join(f"{b.gb_code}@{b.line}" for b in capture.breaks),
                ", ".join(f"{b.occurrences_per_call:g}" for b in result.breaks),
                f"{result.attribution.coverage:.3f}",
            ]
        )
        torch._dynamo.reset()
    headers = ["case", "explain", "advisor", "truth", "codes@line", "occ/call", "coverage"]
    print(tabulate(rows, headers=headers, tablefmt="github"))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "eager")
