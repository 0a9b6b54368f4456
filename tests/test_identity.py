"""One break identity (advisor.core.identity): how a captured break is named across runs, and
the matcher that pairs two runs' breaks, loosest identity last."""

from __future__ import annotations

import dataclasses

from advisor.core.identity import BreakIdentity, match
from advisor.core.model import BreakSite, Location
from tests.support.reports import print_site

SITE_PACKAGES = "/venv/lib/python3.11/site-packages"


def at(
    file: str, line: int = 7, code: str = "print(x)", gb_code: str | None = "GB0059"
) -> BreakSite:
    where = Location(file, line, "f", code)
    return dataclasses.replace(print_site(), gb_code=gb_code, where=where)


def ident(
    line: int, file: str = "m.py", source: str = "print(x)", code: str = "GB0059"
) -> BreakIdentity:
    return BreakIdentity(code, file, line, source)


def test_user_code_is_relative_to_the_base_and_installed_code_to_its_package() -> None:
    mine = BreakIdentity.of(at("/home/u/proj/models/m.py"), "/home/u/proj")
    assert mine == BreakIdentity("GB0059", "models/m.py", 7, "print(x)")
    theirs = BreakIdentity.of(at(f"{SITE_PACKAGES}/transformers/x.py", 3, "y = f(x)"), "/home/u")
    assert (theirs.file, theirs.line, theirs.source) == ("transformers/x.py", 3, "y = f(x)")
    # no registry code: the break's type stands in for it
    untyped = BreakIdentity.of(at("/home/u/proj/m.py", gb_code=None), "/home/u/proj")
    assert untyped.registry_code == "Failed to trace builtin operator"


def test_the_same_break_in_two_checkouts_is_one_key() -> None:
    """Hashable and equal: what groups the same break across models (or runs) in a dict."""
    one = BreakIdentity.of(at("/ci/run1/proj/m.py"), "/ci/run1/proj")
    two = BreakIdentity.of(at("/home/u/proj/m.py"), "/home/u/proj")
    assert one == two and len({one, two}) == 1
    shares: dict[BreakIdentity, float] = {}
    for identity, share in ((one, 0.1), (two, 0.2)):
        shares[identity] = shares.get(identity, 0.0) + share
    assert shares == {one: 0.1 + 0.2}


def test_exact_then_moved_line_then_moved_folder() -> None:
    old = [ident(7), ident(20, "a/n.py", "y.item()", "GB0124"), ident(30, source="gone()")]
    new = [
        ident(9),  # the line moved
        ident(20, "b/n.py", "y.item()", "GB0124"),  # the folder moved
        ident(40, source="added()"),  # another source: a new break
    ]
    matching = match(old, new)
    assert matching.old_of_new == (0, 1, None)
    assert matching.gone == (2,)
    assert matching.pairs() == [(0, 0), (1, 1), (None, 2)]


def test_a_break_still_on_its_line_is_not_taken_by_one_that_moved() -> None:
    """Two identical prints at lines 20 and 7; the new run has them at 30 and 20. Every break is
    tried exactly before any is tried loosely, so 20 stays 20 and 7 moved to 30 (pairing the
    first new break first at every level would give 30 the old 20, and 20 the old 7)."""
    matching = match([ident(20), ident(7)], [ident(30), ident(20)])
    assert matching.old_of_new == (1, 0) and matching.gone == ()


def test_each_old_break_pairs_at_most_once() -> None:
    matching = match([ident(7)], [ident(7), ident(7), ident(8)])
    assert matching.old_of_new == (0, None, None) and matching.gone == ()
    assert match([], [ident(7)]).old_of_new == (None,)
    assert match([ident(7)], []).gone == (0,)
