"""Kinds and verdicts are closed vocabularies (`advisor.core.kinds`): a record built or read with
a word outside them is an error where it is made, while saved reports stay the same bytes (a
member is its value in JSON, f-strings and dict keys)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from advisor.core.kinds import ActionKind, Verdict, WhatIfKind
from advisor.core.model import Action, WhatIf, report_from_json, report_to_json
from tests.support.reports import full_report


def test_records_hold_members_and_refuse_a_misspelt_kind() -> None:
    action = Action("knob", 1.0)
    assert action.kind is ActionKind.KNOB and action.kind == "knob" and f"{action.kind}" == "knob"
    with pytest.raises(ValueError, match=r"unknown ActionKind 'knobs' \(known: knob, "):
        Action("knobs", 1.0)
    with pytest.raises(ValueError, match="unknown WhatIfKind 'placement'"):
        WhatIf("k", "k", "isolate", "measured", kind="placement")
    entry = full_report().breaks[0]
    with pytest.raises(ValueError, match="unknown Verdict 'fix'"):
        dataclasses.replace(entry.decision, verdict="fix")


def test_a_report_round_trips_to_the_same_json_with_members_inside() -> None:
    report = full_report()
    text = report_to_json(report)
    again = report_from_json(text)
    for part in ("actions", "what_ifs", "breaks"):  # the parts that hold kinds, as written
        assert json.loads(report_to_json(again))[part] == json.loads(text)[part]
    assert again.actions == report.actions and again.what_ifs == report.what_ifs
    assert all(isinstance(a.kind, ActionKind) for a in again.actions)
    assert isinstance(again.what_ifs[0].kind, WhatIfKind)
    assert isinstance(again.breaks[0].decision.verdict, Verdict)


def test_a_saved_report_with_an_unknown_kind_is_one_line_naming_the_field() -> None:
    data = json.loads(report_to_json(full_report()))
    data["actions"][1]["kind"] = "dynamc"
    with pytest.raises(ValueError) as caught:
        report_from_json(json.dumps(data))
    message = str(caught.value)
    assert "\n" not in message
    assert "actions[1].kind: unknown ActionKind 'dynamc'" in message
