"""Write the bad reports that docs/bad-inputs.md feeds to `advisor show` and `compare`.

    .venv/bin/python tests/data/reports/regenerate.py

Each is the hand-made report of tests/support/reports.py, made bad in one way; report.json is
the good one (it also stands for a folder that already holds a report). `sweep_schema_1.json`
is the head of an old zoo report (`advisor sweep --compare`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from advisor.core.artifacts import measurements_to_json  # noqa: E402
from advisor.render.json_report import render_json  # noqa: E402
from tests.support.reports import full_report, measurements_of  # noqa: E402

HERE = Path(__file__).resolve().parent


def bad_reports() -> dict[str, str]:
    text = render_json(full_report())
    measurements = measurements_to_json(measurements_of(full_report()))

    def changed(edit) -> str:  # type: ignore[no-untyped-def]
        data = json.loads(text)
        edit(data)
        return json.dumps(data, indent=2)

    return {
        "report.json": text,
        "not_json.json": "this is not JSON\n",
        "truncated.json": text[: len(text) // 3],
        "wrong_type.json": changed(lambda d: d["modes"][0]["latency"].update(n="three")),
        "schema_99.json": changed(lambda d: d.update(schema_version=99)),
        "schema_1.json": changed(lambda d: d.update(schema_version=1)),
        "measurements_schema_0.json": measurements.replace(
            '"schema_version":1', '"schema_version":0'
        ),
        # A zoo report of the first sweep schema (prose titles): its head is enough.
        "sweep_schema_1.json": json.dumps({"name": "old-zoo", "sweep_schema": 1}, indent=2),
    }


if __name__ == "__main__":
    for name, content in bad_reports().items():
        (HERE / name).write_text(content, encoding="utf-8")
