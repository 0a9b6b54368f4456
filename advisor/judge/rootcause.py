"""Root causes: which break sites become ranked entries, and which time each entry owns.

Time is owned through the attribution's segments: a gap (or a skipped root frame's eager time)
belongs to the site that ends the region before it, so no two entries own the same microsecond.

- A site that owns time is an entry.
- A frame Dynamo skipped runs eagerly because of every break it met while compiling it. Its
  time is owned by the site whose gap (or root-frame eager time) it runs in; the other sites
  met in that frame are that entry's `causes`, not entries of their own (they own no time: charging
  each of them the frame's time would count it several times).
- A site that owns no time and caused no skip still gets an entry (it never ran in the profiled
  calls: a cold path), with zero cost.

Extra regions are owned the same way (see `summaries.SiteSummary.regions`): each compiled
region instance in a call, except the first (the one region a call would be with no break),
exists because of the break whose gap (or skipped frame's eager time) it is entered from; an
entry owns those of its site and of its causes.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from advisor.core.artifacts import Capture
from advisor.core.model import BreakSite
from advisor.judge.summaries import SiteSummary


@dataclass(frozen=True)
class RootCause:
    site: BreakSite
    causes: tuple[BreakSite, ...] = ()
    skipped_frame: bool = False  # it owns the eager time of a frame Dynamo skipped


def root_causes(capture: Capture, summaries: dict[str, SiteSummary]) -> list[RootCause]:
    owns = {s.id for s in capture.sites if _owns_time(summaries.get(s.id))}
    causes: dict[str, list[str]] = defaultdict(list)
    folded: set[str] = set()
    skipped_owner: set[str] = set()
    for frame in capture.frames:
        if not frame.skipped or not frame.break_ids:
            continue
        owner = _owner(frame.break_ids, frame.end_break_id, owns, summaries)
        skipped_owner.add(owner)
        for site_id in frame.break_ids:
            if site_id != owner and site_id not in owns:
                folded.add(site_id)
                if site_id not in causes[owner]:
                    causes[owner].append(site_id)
    by_id = {s.id: s for s in capture.sites}
    return [
        RootCause(
            site,
            tuple(by_id[c] for c in causes.get(site.id, ()) if c != site.id),
            skipped_frame=site.id in skipped_owner and site.frame_skipped,
        )
        for site in capture.sites
        if site.id not in folded
    ]


def _owns_time(summary: SiteSummary | None) -> bool:
    return summary is not None and (summary.owned_us > 0 or summary.occurrences > 0)


def _owner(
    met: tuple[str, ...],
    end_break: str | None,
    owns: set[str],
    summaries: dict[str, SiteSummary],
) -> str:
    """The entry that owns a skipped frame: of the sites Dynamo met in it, the one that owns
    time (the most, if several), else the one that ended the frame."""
    owning = [s for s in met if s in owns]
    if owning:
        return max(owning, key=lambda s: summaries[s].owned_us)
    return end_break if end_break in met else met[-1]
