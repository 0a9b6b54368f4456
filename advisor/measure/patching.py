"""A `Patch` installed in a running process, the file on disk left untouched.

Each edited function is compiled from the patch's text into a code object, and every live
function object that runs the original code gets the new code for as long as the patch is
installed. Swapping `__code__` rather than rebinding names reaches every holder at once (a
bound method, a class attribute, an alias in another module), and Dynamo keys its caches by
code object, so the patched function compiles afresh. The text is compiled inside the classes
and functions its qualified name says it lies in, so private names are mangled, `super()` finds
its class and a closure keeps its free variables, as in the file. Decorators in the text are not
applied (the code object is taken from the compiled text, not executed); an edit that removes a
`torch.compiler.disable` decorator is installed by calling the wrapped function where the
wrapper was held (`torch_adapter.EnabledFrames`).
"""

from __future__ import annotations

import ast
import difflib
import gc
import sys
import textwrap
import types
from contextlib import ExitStack
from dataclasses import replace

from advisor.core.model import BreakSite, FunctionEdit, Location, Patch
from advisor.core.patch import lf_text
from advisor.measure import torch_adapter

_INDENT = "    "


class NotInstallable(RuntimeError):
    """The patch cannot be installed in this process (its function was not found, or its text
    does not compile to a compatible function); the message is one line."""


class InstalledPatch:
    """A context manager that installs the patch while entered; re-entrant across calls (each
    compile and call of the variant enters it), cheap to enter (a few attribute stores)."""

    def __init__(self, patch: Patch) -> None:
        self.swaps: list[tuple[types.FunctionType, types.CodeType, types.CodeType]] = []
        self.unwrapped: list[str] = []
        functions = [f for f in gc.get_objects() if type(f) is types.FunctionType]
        for edit in patch.edits:
            if edit.unwrap:
                self.unwrapped.append(edit.qualname.rsplit(".", 1)[-1])
                continue
            live = _live(functions, patch.file, edit)
            if not live:
                raise NotInstallable(f"{edit.qualname} (line {edit.first_line}) is not loaded")
            new = compiled_code(edit, patch.file, live[0].__code__)
            self.swaps += [(f, f.__code__, new) for f in live]
        wrappers = torch_adapter.disabled_wrappers(set(self.unwrapped))
        if self.unwrapped and not wrappers:
            raise NotInstallable(f"no torch.compiler.disable wrapper of {self.unwrapped[0]}")
        # Where the wrappers are held is found once, here: finding it walks every loaded
        # module, which on each entry (every timed call) cost tens of milliseconds a call.
        self._enabled = torch_adapter.EnabledFrames(wrappers) if wrappers else None
        self._stack: ExitStack | None = None
        self._set_up = not patch.setup
        self._patch = patch

    def __enter__(self) -> InstalledPatch:
        for fn, _, new in self.swaps:
            fn.__code__ = new
        if not self._set_up:  # once: the objects `__init__` now builds, on the live instances
            set_up_instances(self._patch)
            self._set_up = True
        self._stack = ExitStack()
        if self._enabled is not None:
            self._stack.enter_context(self._enabled)
        return self

    def __exit__(self, *exc: object) -> None:
        for fn, original, _ in self.swaps:
            fn.__code__ = original
        if self._stack is not None:
            self._stack.close()
            self._stack = None


def set_up_instances(patch: Patch) -> int:
    """Run the statements a `setup_hoist` patch adds to `__init__` on every live instance of
    its class built before the patch was installed (the workload is built before its arm
    installs the patch); an instance that already has what they set is left alone. They stay
    set after the patch is left: the original method does not read them. Returns how many
    instances were set up; raises NotInstallable where a statement fails."""
    init = next((e for e in patch.edits if e.qualname.endswith(".__init__")), None)
    if init is None:
        raise NotInstallable("the setup patch edits no __init__")
    cls = init.qualname.rsplit(".", 1)[0]
    text = "\n".join(patch.setup)
    code = compile(text, patch.file, "exec")
    attributes = _self_attributes(text)
    count = 0
    for instance in _instances(cls, patch.file):
        if attributes and all(hasattr(instance, a) for a in attributes):
            continue
        module = sys.modules.get(type(instance).__module__)
        scope = {"self": instance}
        try:
            exec(code, dict(vars(module)) if module else {}, scope)  # the patch's own statements
        except Exception as exc:  # the statement's failure is the arm's finding
            raise NotInstallable(f"setting up {cls}: {type(exc).__name__}: {exc}") from None
        count += 1
    return count


def _self_attributes(text: str) -> list[str]:
    """The `self.NAME` the statements assign."""
    return [
        target.attr
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == "self"
    ]


def _instances(qualname: str, file: str) -> list[object]:
    """Live objects whose class (or a base of it) is `qualname` from `file`."""
    out = []
    for obj in gc.get_objects():
        for klass in getattr(type(obj), "__mro__", ()):
            module = sys.modules.get(klass.__module__)
            if klass.__qualname__ == qualname and getattr(module, "__file__", None) == file:
                out.append(obj)
                break
    return out


def _live(
    functions: list[types.FunctionType], file: str, edit: FunctionEdit
) -> list[types.FunctionType]:
    """Every function object running the edit's original code (a decorator's wrapper may hold
    one code object in several function objects)."""
    return [
        f
        for f in functions
        if f.__code__.co_filename == file
        and f.__code__.co_firstlineno == edit.first_line
        and f.__code__.co_qualname == edit.qualname
    ]


def compiled_code(edit: FunctionEdit, file: str, original: types.CodeType) -> types.CodeType:
    """The edit's text compiled in its nesting, as a code object that can replace `original`."""
    source, depth = _nested_source(edit, original.co_freevars)
    # Blank lines before it so tracebacks and Dynamo's break lines point near the file's lines.
    padding = "\n" * max(0, edit.first_line - 1 - depth)
    try:
        module_code = compile(padding + source, file, "exec")
    except SyntaxError as exc:
        raise NotInstallable(f"the patched {edit.qualname} does not compile: {exc.msg}") from None
    found = _find_code(module_code, edit.qualname)
    if found is None:
        raise NotInstallable(f"the patched text holds no function {edit.qualname}")
    if found.co_freevars != original.co_freevars:
        raise NotInstallable(
            f"the patched {edit.qualname} closes over {found.co_freevars}, "
            f"the original over {original.co_freevars}"
        )
    return found


def _nested_source(edit: FunctionEdit, freevars: tuple[str, ...]) -> tuple[str, int]:
    """The edit's text inside stand-ins for the classes and functions that hold it (from its
    qualified name): a class keeps name mangling and `super()`'s cell, an enclosing function
    binds the free variables so they stay free. Returns the text and the header lines added."""
    parts = edit.qualname.split(".")[:-1]
    headers: list[str] = []
    depth = 0
    index = 0
    while index < len(parts):
        name = parts[index]
        is_function = index + 1 < len(parts) and parts[index + 1] == "<locals>"
        indent = _INDENT * depth
        if is_function:
            headers.append(f"{indent}def {name}():")
            bound = [v for v in freevars if v != "__class__"]
            if bound:
                headers.append(f"{indent}{_INDENT}{', '.join(bound)} = {_nones(len(bound))}")
            index += 2
        else:
            headers.append(f"{indent}class {name}:")
            index += 1
        depth += 1
    body = textwrap.indent(textwrap.dedent(lf_text(edit.after)), _INDENT * depth)
    return "\n".join([*headers, body]), len(headers)


def _nones(count: int) -> str:
    return "None" if count == 1 else ", ".join(["None"] * count)


def _find_code(code: types.CodeType, qualname: str) -> types.CodeType | None:
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            if const.co_qualname == qualname:
                return const
            found = _find_code(const, qualname)
            if found is not None:
                return found
    return None


def as_in_file(patch: Patch, sites: tuple[BreakSite, ...]) -> tuple[BreakSite, ...]:
    """The breaks a patched run captured, with lines of the installed text read as lines of the
    file: a line the patch kept maps to where it is on disk (so a break it did not touch is
    the original's, not a new one); a break the patch leaves on purpose
    (`Patch.intended_breaks`: a `torch.compiler.disable` helper it adds, a conversion moved to
    the return) is left out; a break on another line the patch wrote stays, at the patched
    text's line."""
    kept = {edit: _kept_lines(edit) for edit in patch.edits}  # once per edit, not per site
    out = []
    for site in sites:
        where = site.where
        if where.file == patch.file and where.line in patch.intended_breaks:
            continue
        line = _file_line(kept, where) if where.file == patch.file else None
        if line is not None:
            site = replace(site, where=replace(where, line=line))
        out.append(site)
    return tuple(out)


def _file_line(kept: dict[FunctionEdit, dict[int, int]], where: Location) -> int | None:
    """The file's line for a line of the installed text; None for a line the patch wrote (or
    outside every edit)."""
    for edit, lines in kept.items():
        offset = where.line - edit.first_line
        if 0 <= offset < len(lf_text(edit.after).splitlines()):
            return edit.first_line + lines[offset] if offset in lines else None
    return None


def _kept_lines(edit: FunctionEdit) -> dict[int, int]:
    """0-based line of the patched text -> 0-based line of the original, for lines kept."""
    before, after = lf_text(edit.before).splitlines(), lf_text(edit.after).splitlines()
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    return {b + k: a + k for a, b, size in matcher.get_matching_blocks() for k in range(size)}


class SetOption:
    """A `library_option` patch installed: the argument set on every live object of its class
    while entered (`self.NAME = value`, as its constructor would have kept it), the objects'
    own values put back on exit, so a process that measures other arms after it is unchanged."""

    def __init__(self, patch: Patch) -> None:
        init = patch.edits[0] if patch.edits else None
        if init is None or len(patch.names) < 3:
            raise NotInstallable("the option patch names no class and argument")
        self._name, self._value = patch.names[0], ast.literal_eval(patch.names[1])
        self._owner, self._file = init.qualname.rsplit(".", 1)[0], patch.file
        self._instances: list[object] | None = None  # found at the first entry: built by then
        self._saved: list[object] = []

    def __enter__(self) -> SetOption:
        if self._instances is None:
            self._instances = _instances(self._owner, self._file)
        if not self._instances:
            raise NotInstallable(f"no live {self._owner} to pass `{self._name}` to")
        self._saved = [getattr(obj, self._name, None) for obj in self._instances]
        for obj in self._instances:
            setattr(obj, self._name, self._value)
        return self

    def __exit__(self, *exc: object) -> None:
        for obj, value in zip(self._instances or [], self._saved, strict=True):
            setattr(obj, self._name, value)
