"""`setup_hoist`: setup work built on every call, built once instead (#59). A break in library
code whose stack, from the user's line, passes through a constructor or a setup call is
reached on every call only because the user's method builds the object there. The patch builds
it once, in the class's `__init__`, and the method calls the object it kept:

- the user's line constructs the object itself (`Smoother(2.0)(x)`): the constructor call moves
  to `__init__` as `self._smoother = Smoother(2.0)`, and the line reads `self._smoother(x)`;
- the user's line calls a library's functional form whose body is one construction and a call
  (`return Smoother(width, taps)(x)`): `__init__` imports the library's class and builds it with
  the user's arguments mapped through the function's signature, and the line calls it.

The constructor's arguments must be computable in `__init__`: literals, module-level names,
`self` attributes; never the method's own arguments or locals. Torch-free: `ast` and text."""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass

from advisor.core.model import BreakSite, FunctionEdit, Location, Patch
from advisor.core.taxonomy import setup_frames
from advisor.measure.rewrite.build import compile_refusal
from advisor.measure.rewrite.locate import Site, locate
from advisor.measure.rewrite.names import fresh_name, walk_scope
from advisor.measure.rewrite.outcome import FunctionNode, LineEdit, Refusal
from advisor.measure.rewrite.source import Source, last_line, read_source
from advisor.measure.rewrite.splice import (
    OverlappingEdits,
    apply_edits,
    function_span,
    insert_statements,
    span_text,
    substitute,
    unified_hunks,
)

KIND = "setup_hoist"
NO_USER_LINE = Refusal("no line of the user's code reaches the setup call")
NOT_A_METHOD = Refusal(
    "the setup call is not in a method of a class with an `__init__` to build it in"
)
NO_CALL = Refusal("the user's line holds no call of the library function that does the setup")
NOT_ONE_CONSTRUCTION = Refusal(
    "the library function does more than build an object and call it, so the object it builds "
    "cannot be built once in its place"
)
NEEDS_CALL_VALUES = Refusal(
    "the object is built from values of the call itself (its arguments or locals), so it "
    "cannot be built once in `__init__`"
)


@dataclass(frozen=True)
class _Hoist:
    """What moves to `__init__` (its statements), and the call's new text in the method."""

    init_code: tuple[str, ...]
    call: ast.Call
    replacement: str
    attribute: str
    built: str  # the class built once, as the report names it


def hoist_patch_for(site: BreakSite) -> Patch | Refusal | None:
    """The patch that builds the break's setup once, or why there is none; None where the
    break's stack passes through no setup call (not this rewriter's pattern)."""
    frames = setup_frames(site)
    if not frames:
        return None
    user = site.reached_from
    if user is None:
        return NO_USER_LINE
    source = read_source(user.file)
    if isinstance(source, Refusal):
        return source
    located = locate(source, user.line)
    if isinstance(located, Refusal):
        return located
    method = _method(located)
    if isinstance(method, Refusal):
        return method
    cls, init = method
    entry = frames[0]
    hoist = _hoist(located, cls, entry)
    if isinstance(hoist, Refusal):
        return hoist
    return _patch(located, init, hoist)


def _method(site: Site) -> tuple[ast.ClassDef, FunctionNode] | Refusal:
    """The class holding the site's method (its first parameter `self`) and its `__init__`."""
    parent = site.parents.get(site.function)
    args = site.function.args.args
    if not isinstance(parent, ast.ClassDef) or not args or args[0].arg != "self":
        return NOT_A_METHOD
    init = next(
        (
            node
            for node in parent.body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == "__init__"
        ),
        None,
    )
    return (parent, init) if init is not None else NOT_A_METHOD


def _hoist(site: Site, cls: ast.ClassDef, entry: Location) -> _Hoist | Refusal:
    """A direct construction at the user's line (the first setup frame is the constructor),
    else a functional form the line calls (the first frame past the user's line)."""
    statement = site.statement
    if statement is None:
        return NO_CALL
    calls = [n for n in ast.walk(statement) if isinstance(n, ast.Call)]
    taken = _self_attributes(cls)
    if entry.function == "__init__":
        built = [c for c in calls if _last_name(c.func)[:1].isupper()]
        for call in built:
            if _portable(site, call):
                name = fresh_name("_" + _snake(_last_name(call.func)), taken)
                code = (f"self.{name} = {site.source.segment(call)}",)
                return _Hoist(code, call, f"self.{name}", name, _last_name(call.func))
        return NEEDS_CALL_VALUES if built else NO_CALL
    called = [c for c in calls if _last_name(c.func) == entry.function]
    if not called:
        return NO_CALL
    return _functional(site, called[0], entry, taken)


def _functional(site: Site, call: ast.Call, entry: Location, taken: set[str]) -> _Hoist | Refusal:
    """`lib.f(x, width=2.0)` where `def f(x, width, taps=7): return Ctor(width, taps)(x)`:
    `Ctor(2.0, 7)` built once, `self._ctor(x)` at the call."""
    library = read_source(entry.file)
    if isinstance(library, Refusal):
        return library
    function = _function_at(library.tree, entry)
    module = _module_name(entry.file)
    if function is None or module is None:
        return NOT_ONE_CONSTRUCTION
    shape = _construct_and_call(function, entry.line)
    if shape is None:
        return NOT_ONE_CONSTRUCTION
    ctor, outer = shape
    bound = _bind(site.source, library, module, function, call)
    if bound is None or any(isinstance(a, ast.Starred) for a in ctor.args):
        return NOT_ONE_CONSTRUCTION
    ctor_args = _mapped_arguments(library, ctor, bound)
    call_args = _mapped_arguments(library, outer, bound)
    if ctor_args is None or call_args is None:
        return NOT_ONE_CONSTRUCTION
    read = {n.id for n in ast.walk(ctor) if isinstance(n, ast.Name)}
    if not all(_portable(site, node) for p, node in bound.given.items() if p in read):
        return NEEDS_CALL_VALUES
    ctor_name = _last_name(ctor.func)
    name = fresh_name("_" + _snake(ctor_name), taken)
    code = (f"from {module} import {ctor_name}", f"self.{name} = {ctor_name}({ctor_args})")
    method = f".{outer.func.attr}" if isinstance(outer.func, ast.Attribute) else ""
    return _Hoist(code, call, f"self.{name}{method}({call_args})", name, ctor_name)


def _function_at(tree: ast.Module, entry: Location) -> FunctionNode | None:
    """The library's function of `entry.function` whose body holds `entry.line`."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name == entry.function
            and node.lineno <= entry.line <= last_line(node)
        ):
            return node
    return None


def _construct_and_call(function: FunctionNode, line: int) -> tuple[ast.Call, ast.Call] | None:
    """(the construction, the call of what it built) where the function's body, docstring
    aside, is `return Ctor(...)(...)` or `return Ctor(...).method(...)` at `line`."""
    body = [s for s in function.body if not _is_docstring(s)]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].lineno > line:
        return None
    outer = body[0].value
    if not isinstance(outer, ast.Call):
        return None
    target = outer.func.value if isinstance(outer.func, ast.Attribute) else outer.func
    if isinstance(target, ast.Call) and isinstance(target.func, ast.Name):
        return target, outer
    return None


@dataclass(frozen=True)
class _Bound:
    """The library function's parameters as the user's call binds them: the text to put in
    each one's place, and the user's own node where the call passes it."""

    texts: dict[str, str]
    given: dict[str, ast.expr]


def _bind(
    source: Source, library: Source, module: str, function: FunctionNode, call: ast.Call
) -> _Bound | None:
    """The user's call bound to the function's parameters (a parameter left out takes its
    default, which must be a literal); None where the call cannot be bound plainly."""
    args = function.args
    if (
        args.vararg
        or args.kwarg
        or args.posonlyargs
        or any(isinstance(a, ast.Starred) for a in call.args)
    ):
        return None
    params = [a.arg for a in args.args]
    if len(call.args) > len(params) or any(k.arg is None for k in call.keywords):
        return None
    given: dict[str, ast.expr] = dict(zip(params, call.args, strict=False))
    for keyword in call.keywords:
        if keyword.arg not in params or keyword.arg in given:
            return None
        given[keyword.arg] = keyword.value  # type: ignore[index]
    defaults = dict(zip(params[len(params) - len(args.defaults) :], args.defaults, strict=True))
    texts = {p: source.segment(node) for p, node in given.items()}
    for param in params:
        if param in texts:
            continue
        default = _default_text(library, module, defaults.get(param))
        if default is None:
            return None
        texts[param] = default
    return _Bound(texts, given)


def _default_text(library: Source, module: str, default: ast.expr | None) -> str | None:
    """A parameter's default as text the user's module can hold: a literal as written, a
    module-level constant of the library by its value (when that is a plain literal)."""
    if default is None:
        return None
    if _literal(default):
        return library.segment(default)
    if isinstance(default, ast.Name):
        value = getattr(sys.modules.get(module), default.id, None)
        if isinstance(value, bool | int | float | str) and _literal(
            ast.parse(repr(value), mode="eval").body
        ):
            return repr(value)
    return None


def _mapped_arguments(library: Source, call: ast.Call, bound: _Bound) -> str | None:
    """The call's arguments with each of the library function's parameters replaced by what the
    user passed (or its literal default); None where an argument is anything else."""
    parts = []
    for node in [*call.args, *(k.value for k in call.keywords)]:
        if _literal(node):
            parts.append(library.segment(node))
        elif isinstance(node, ast.Name) and node.id in bound.texts:
            parts.append(bound.texts[node.id])
        else:
            return None
    keywords = [k.arg for k in call.keywords]
    positional = parts[: len(call.args)]
    named = [f"{k}={v}" for k, v in zip(keywords, parts[len(call.args) :], strict=True)]
    return ", ".join(positional + named)


def _portable(site: Site, node: ast.AST) -> bool:
    """Computable in `__init__`: literals, module-level names and `self` attributes; not the
    method's own arguments or locals (besides `self`)."""
    own = {a.arg for a in site.function.args.args + site.function.args.kwonlyargs} - {"self"}
    own |= {
        n.id
        for n in walk_scope(site.function)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id in own:
            return False
        if isinstance(sub, ast.Lambda | ast.NamedExpr | ast.Await | ast.Yield):
            return False
    return True


def _patch(site: Site, init: FunctionNode, hoist: _Hoist) -> Patch | Refusal:
    source = site.source
    indent = source.indent_of(init.body[0].lineno)
    start, end = source.start(hoist.call), source.end(hoist.call)
    statement = site.statement
    assert statement is not None
    edits = (
        insert_statements(last_line(init) + 1, list(hoist.init_code), indent),
        substitute(source, statement, [(start, end, hoist.replacement)]),
    )
    try:
        new_lines = apply_edits(source, edits)
    except OverlappingEdits as error:
        return Refusal(f"the rewrite of this class is inconsistent ({error})")
    function_edits = []
    for function in (init, site.function):
        qualname = site.qualnames[function]
        first, last = function_span(function)
        shift = _growth(e for e in edits if e.first < first)
        own = _growth(e for e in edits if first <= e.first <= last + 1)
        after = span_text(new_lines, first + shift, last + shift + own)
        refused = compile_refusal(qualname, after, "".join(new_lines))
        if refused is not None:
            return refused
        before = span_text(source.lines, first, last)
        function_edits.append(FunctionEdit(qualname, first, last, before, after))
    return Patch(
        kind=KIND,
        file=source.file,
        line=site.line,
        edits=tuple(function_edits),
        hunks=unified_hunks(source.lines, new_lines),
        names=(hoist.built, f"self.{hoist.attribute}"),
        setup=hoist.init_code,
    )


def _growth(edits: Iterable[LineEdit]) -> int:
    """How many lines the edits add (less those they remove)."""
    return sum(len(e.lines) - (e.last - e.first + 1) for e in edits)


def _self_attributes(cls: ast.ClassDef) -> set[str]:
    """Names the class's methods use as `self.NAME`, and its own names."""
    names = {n.attr for n in ast.walk(cls) if isinstance(n, ast.Attribute)}
    return names | {n.id for n in ast.walk(cls) if isinstance(n, ast.Name)}


def _module_name(file: str) -> str | None:
    """The import name of the loaded module whose file this is (the library is imported where
    the break was captured)."""
    for name, module in list(sys.modules.items()):
        if getattr(module, "__file__", None) == file and not name.startswith("__"):
            return name
    return None


def _last_name(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _is_docstring(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


__all__ = ["KIND", "hoist_patch_for"]
