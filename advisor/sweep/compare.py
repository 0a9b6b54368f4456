"""A zoo before/after: two sweep.json dicts in, per-model and per-root-cause changes out.

Pure, no torch. Models are matched by their sweep target name; root causes by
(gb_code, file, line) as displayed in sweep.json.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# A root cause present in both whose total share moved less than this is "unchanged".
SHARE_EPSILON = 0.001


@dataclass(frozen=True)
class ModelChange:
    name: str
    old_status: str | None
    new_status: str | None
    old_speedup: float | None  # eager / default
    new_speedup: float | None
    old_default_ms: float | None
    new_default_ms: float | None

    @property
    def default_change(self) -> float | None:
        """Relative change of the default-mode median (negative: faster)."""
        if not self.old_default_ms or self.new_default_ms is None:
            return None
        return self.new_default_ms / self.old_default_ms - 1


@dataclass(frozen=True)
class CauseChange:
    gb_code: str | None
    file: str | None
    line: int | None
    old_share: float | None  # total over models; None: absent on that side
    new_share: float | None
    old_models: int
    new_models: int


@dataclass(frozen=True)
class ZooComparison:
    old_name: str
    new_name: str
    models: tuple[ModelChange, ...]
    removed: tuple[CauseChange, ...]
    added: tuple[CauseChange, ...]
    changed: tuple[CauseChange, ...]


def compare_zoos(old: Mapping[str, Any], new: Mapping[str, Any]) -> ZooComparison:
    old_causes, new_causes = _causes(old), _causes(new)
    changes = [
        _cause_change(key, old_causes.get(key), new_causes.get(key))
        for key in {**old_causes, **new_causes}
    ]
    changed = [
        c
        for c in changes
        if c.old_share is not None
        and c.new_share is not None
        and (abs(c.new_share - c.old_share) >= SHARE_EPSILON or c.old_models != c.new_models)
    ]
    return ZooComparison(
        old_name=str(old.get("name", "old")),
        new_name=str(new.get("name", "new")),
        models=_model_changes(old, new),
        removed=_by_share([c for c in changes if c.new_share is None], old=True),
        added=_by_share([c for c in changes if c.old_share is None], old=False),
        changed=tuple(
            sorted(changed, key=lambda c: -abs((c.new_share or 0.0) - (c.old_share or 0.0)))
        ),
    )


def _models(zoo: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    models = zoo.get("models")
    if not isinstance(models, list):
        return {}
    return {str(m.get("name")): m for m in models if isinstance(m, Mapping)}


def _model_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[ModelChange, ...]:
    before, after = _models(old), _models(new)
    names = list(before) + [n for n in after if n not in before]
    empty: Mapping[str, Any] = {}
    return tuple(
        ModelChange(
            name=name,
            old_status=before.get(name, empty).get("status"),
            new_status=after.get(name, empty).get("status"),
            old_speedup=before.get(name, empty).get("speedup_default"),
            new_speedup=after.get(name, empty).get("speedup_default"),
            old_default_ms=before.get(name, empty).get("default_ms"),
            new_default_ms=after.get(name, empty).get("default_ms"),
        )
        for name in names
    )


def _causes(zoo: Mapping[str, Any]) -> dict[tuple[Any, ...], Mapping[str, Any]]:
    causes = zoo.get("root_causes")
    if not isinstance(causes, list):
        return {}
    return {
        (c.get("gb_code"), c.get("file"), c.get("line")): c
        for c in causes
        if isinstance(c, Mapping)
    }


def _cause_change(
    key: tuple[Any, ...], old: Mapping[str, Any] | None, new: Mapping[str, Any] | None
) -> CauseChange:
    return CauseChange(
        gb_code=key[0],
        file=key[1],
        line=key[2],
        old_share=old.get("total_share") if old else None,
        new_share=new.get("total_share") if new else None,
        old_models=len(old.get("models") or ()) if old else 0,
        new_models=len(new.get("models") or ()) if new else 0,
    )


def _by_share(changes: list[CauseChange], old: bool) -> tuple[CauseChange, ...]:
    return tuple(sorted(changes, key=lambda c: -((c.old_share if old else c.new_share) or 0.0)))
