"""A zoo before/after: two `Zoo`s in, per-model and per-root-cause changes out.

Pure, no torch. Models are matched by their sweep target name; root causes by their
`BreakIdentity` with the one matcher (`advisor.core.identity.match`): the same code, file, line
and source first, then a break whose line moved, then one whose folder moved.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.core.identity import BreakIdentity, match
from advisor.sweep.aggregate import ModelSummary, RootCause, Zoo

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
    identity: BreakIdentity  # the new zoo's where it is in both
    gb_code: str | None
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


def compare_zoos(old: Zoo, new: Zoo) -> ZooComparison:
    matching = match([c.identity for c in old.root_causes], [c.identity for c in new.root_causes])
    changes = [
        _cause_change(
            new.root_causes[j], None if i is None else old.root_causes[i], new.root_causes[j]
        )
        for i, j in matching.pairs()
    ]
    removed = [_cause_change(old.root_causes[i], old.root_causes[i], None) for i in matching.gone]
    changed = [
        c
        for c in changes
        if c.old_share is not None
        and c.new_share is not None
        and (abs(c.new_share - c.old_share) >= SHARE_EPSILON or c.old_models != c.new_models)
    ]
    return ZooComparison(
        old_name=old.name,
        new_name=new.name,
        models=_model_changes(old, new),
        removed=_by_share(removed, old=True),
        added=_by_share([c for c in changes if c.old_share is None], old=False),
        changed=tuple(
            sorted(changed, key=lambda c: -abs((c.new_share or 0.0) - (c.old_share or 0.0)))
        ),
    )


def _model_changes(old: Zoo, new: Zoo) -> tuple[ModelChange, ...]:
    before = {m.name: m for m in old.models}
    after = {m.name: m for m in new.models}
    names = list(before) + [n for n in after if n not in before]
    return tuple(_model_change(name, before.get(name), after.get(name)) for name in names)


def _model_change(name: str, old: ModelSummary | None, new: ModelSummary | None) -> ModelChange:
    return ModelChange(
        name=name,
        old_status=old.status if old else None,
        new_status=new.status if new else None,
        old_speedup=old.speedup_default if old else None,
        new_speedup=new.speedup_default if new else None,
        old_default_ms=old.default_ms if old else None,
        new_default_ms=new.default_ms if new else None,
    )


def _cause_change(shown: RootCause, old: RootCause | None, new: RootCause | None) -> CauseChange:
    """`shown`: the side that names it (the new one where it is in both)."""
    return CauseChange(
        identity=shown.identity,
        gb_code=shown.gb_code,
        old_share=old.total_share if old else None,
        new_share=new.total_share if new else None,
        old_models=len(old.models) if old else 0,
        new_models=len(new.models) if new else 0,
    )


def _by_share(changes: list[CauseChange], old: bool) -> tuple[CauseChange, ...]:
    return tuple(sorted(changes, key=lambda c: -((c.old_share if old else c.new_share) or 0.0)))
