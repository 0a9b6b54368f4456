"""A rewrite made into a `Patch`: the `import torch` it may need, the file's new lines, the
edited function before and after, and the diff's hunks. The function's new text must compile
on its own (the worker compiles it in the module's globals), or there is no patch."""

from __future__ import annotations

import ast
import textwrap

from advisor.core.patch import FunctionEdit, Patch, lf_text
from advisor.measure.rewrite.locate import Site
from advisor.measure.rewrite.outcome import FunctionNode, LineEdit, Refusal, Rewrite
from advisor.measure.rewrite.splice import (
    OverlappingEdits,
    apply_edits,
    function_span,
    insert_statements,
    new_span,
    span_text,
    unified_hunks,
)


def build_patch(site: Site, rewrite: Rewrite) -> Patch | Refusal:
    function = rewrite.function
    edits = rewrite.edits
    first_edit = min(edit.first for edit in edits)
    if rewrite.uses_torch and not site.torch_bound and not _imports_torch(function, first_edit):
        edits = (_import_torch(site, function), *edits)
    try:
        new_lines = apply_edits(site.source, edits)
    except OverlappingEdits as error:
        return Refusal(f"the rewrite of this function is inconsistent ({error})")
    first, last = function_span(function)
    after = span_text(new_lines, *new_span(function, edits))
    qualname = site.qualnames[function]
    refused = compile_refusal(qualname, after, "".join(new_lines))
    if refused is not None:
        return refused
    edit = FunctionEdit(
        qualname=qualname,
        first_line=first,
        last_line=last,
        before=span_text(site.source.lines, first, last),
        after=after,
        unwrap=rewrite.unwrap,
    )
    return Patch(
        kind=rewrite.kind,
        file=site.source.file,
        line=site.line,
        edits=(edit,),
        hunks=unified_hunks(site.source.lines, new_lines),
        names=rewrite.names,
        intended_breaks=_intended_breaks(rewrite, first, after),
    )


def _intended_breaks(rewrite: Rewrite, first: int, after: str) -> tuple[int, ...]:
    """Lines of the patched file where the patch leaves a break on purpose: the rewriter's own
    (a conversion moved to the return) and every line that defines or calls a nested
    `torch.compiler.disable` helper it added (the work it isolates)."""
    helper = {first + offset for offset in _isolating_lines(after)}
    return tuple(sorted(set(rewrite.intended_breaks) | helper))


def _isolating_lines(text: str) -> set[int]:
    """0-based lines of the text that define or call a nested function it decorates with
    `torch.compiler.disable` (decorator and header lines, and each call's lines)."""
    try:
        tree = ast.parse(textwrap.dedent(lf_text(text)))
    except SyntaxError:
        return set()
    top = tree.body[0] if tree.body else None
    helpers = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node is not top and _disables(node)
    ]
    lines: set[int] = set()
    names = {h.name for h in helpers}
    for helper in helpers:
        first = min([d.lineno for d in helper.decorator_list] + [helper.lineno])
        lines.update(range(first - 1, helper.body[0].lineno - 1))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names:
            lines.update(range(node.lineno - 1, (node.end_lineno or node.lineno)))
    return lines


def _disables(node: ast.FunctionDef) -> bool:
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(target, ast.Attribute) and target.attr == "disable":
            return True
    return False


def _imports_torch(function: FunctionNode, before_line: int) -> bool:
    """The function's body runs `import torch` itself before the edited lines (one after them
    would make `torch` a local name still unbound where the new code reads it)."""
    return any(
        isinstance(node, ast.Import)
        and any(a.name == "torch" and not a.asname for a in node.names)
        and node.lineno < before_line
        for node in function.body
    )


def _import_torch(site: Site, function: FunctionNode) -> LineEdit:
    """`import torch` as the body's first statement (after a docstring), above the comment
    lines that introduce the statement it goes before."""
    body = function.body
    has_docstring = (
        isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    )
    if has_docstring and len(body) > 1:
        line = (body[0].end_lineno or body[0].lineno) + 1
        indent = site.source.indent_of(body[1].lineno)
    else:
        line = body[0].lineno
        indent = site.source.indent_of(line)
        while line - 1 in site.source.comment_lines:
            line -= 1
    return insert_statements(line, ["import torch"], indent)


def compile_refusal(qualname: str, after: str, new_text: str) -> Refusal | None:
    """A rewriter's mistake shows here, as a refusal rather than a broken patch."""
    try:
        compile(textwrap.dedent(lf_text(after)), f"<{qualname}>", "exec", dont_inherit=True)
        ast.parse(new_text)
    except (SyntaxError, ValueError) as error:
        message = error.msg if isinstance(error, SyntaxError) else str(error)
        return Refusal(f"the rewritten `{qualname}` does not compile ({message})")
    return None
