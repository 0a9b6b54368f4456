"""Which break in one run is which break in another: one identity, one matcher.

A break is known across runs by its registry code, its file, its line and the line's source
text. The file is shown the way a person reads it (`advisor.core.paths.display_path`):
package-relative for installed code and relative to a base folder for the user's own (the
workload's folder, or the repository root a gate runs in), so runs made in two checkouts, or on
two machines, name the same file alike.

Code added above a break moves its line; a moved folder changes its file but not the file's
name. So two collections are matched loosest identity last: first the same code, file, line
and source; then, among what is left, the same code, file and source (the line moved); then the
same code, source and file name (the folder moved). Each break pairs at most once.

The identity is frozen and hashable: a key for grouping the same break across models too.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from advisor.core.model import BreakSite
from advisor.core.paths import display_path


@dataclass(frozen=True)
class BreakIdentity:
    registry_code: str  # the registry's GBxxxx; the break's type where the registry has none
    file: str  # package-relative (installed code) or relative to the base folder (user code)
    line: int
    source: str  # the text of the line

    @classmethod
    def of(cls, site: BreakSite, base: str | None) -> BreakIdentity:
        """The identity of a captured break, its user file shown relative to `base`."""
        where = site.where
        file = display_path(where.file, base)
        return cls.from_parts(site.gb_code, site.gb_type, file, where.line, where.code)

    @classmethod
    def from_parts(
        cls, gb_code: str | None, gb_type: str, file: str, line: int, source: str
    ) -> BreakIdentity:
        """From stored fields (a baseline's, a report.json's), the file already as displayed."""
        return cls(gb_code or gb_type, file, line, source)

    @property
    def file_name(self) -> str:
        return self.file.replace("\\", "/").rsplit("/", 1)[-1]

    def keys(self) -> tuple[Hashable, ...]:
        """The identity at each level of matching, the strictest first."""
        return (
            (self.registry_code, self.file, self.line, self.source),
            (self.registry_code, self.file, self.source),
            (self.registry_code, self.file_name, self.source),
        )


LEVELS = 3  # len(BreakIdentity.keys())


@dataclass(frozen=True)
class Matching:
    """How the breaks of a new run pair with those of an old one (indices into each)."""

    old_of_new: tuple[int | None, ...]  # per new break: the old break it is; None when new
    gone: tuple[int, ...]  # old breaks no new break is

    def pairs(self) -> list[tuple[int | None, int]]:
        return [(old, new) for new, old in enumerate(self.old_of_new)]


def match(old: Sequence[BreakIdentity], new: Sequence[BreakIdentity]) -> Matching:
    """Pair each new break with the old break it is, loosest identity last: every new break
    is tried at one level before any is tried at the next, so a break whose line merely moved
    does not take the place of one still on its line. Among equals the earliest old one
    pairs first."""
    found: list[int | None] = [None] * len(new)
    free = list(range(len(old)))
    for level in range(LEVELS):
        waiting: dict[Hashable, deque[int]] = defaultdict(deque)
        for i in free:
            waiting[old[i].keys()[level]].append(i)
        for j, identity in enumerate(new):
            queue = waiting.get(identity.keys()[level])
            if found[j] is None and queue:
                found[j] = queue.popleft()
        taken = set(found)
        free = [i for i in free if i not in taken]
    return Matching(tuple(found), tuple(free))
