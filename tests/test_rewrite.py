"""The rewrite engine (advisor.measure.rewrite), torch-free: for each rewriter a small file, the
exact text of the rewritten function, hunks that `patch` applies to the file, and a rewritten
function that compiles on its own; every refusal once; and the real scenario files at their
`# graph-break` lines, compared with the hand-written `...Fixed` classes where there is one."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from advisor.core.patch import Patch
from advisor.measure import rewrite
from advisor.measure.rewrite import Refusal, patch_for
from advisor.measure.rewrite.outcome import LineEdit, Rewrite

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"
MARKER = "# graph-break"


def marker_line(text: str) -> int:
    """The line of the single `# graph-break` marker (scenarios._common's, without torch)."""
    hits = [n for n, line in enumerate(text.splitlines(), 1) if line.rstrip().endswith(MARKER)]
    assert len(hits) == 1, hits
    return hits[0]


def write(folder: Path, code: str, name: str = "x.py") -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(code).lstrip("\n"), encoding="utf-8")
    return path


def patched(path: Path, category: str) -> Patch:
    """The patch at the file's marker line, checked: the hunks apply with `patch -p1` and
    leave the file with `after` where `before` was, and `after` compiles once dedented."""
    original = path.read_text(encoding="utf-8")
    result = patch_for(str(path), marker_line(original), category)
    assert isinstance(result, Patch), result
    (edit,) = result.edits
    compile(textwrap.dedent(edit.after), "<after>", "exec")
    assert original.count(edit.before) == 1
    work = path.parent / "applied"
    work.mkdir()
    shutil.copy(path, work / "x.py")
    diff = "--- a/x.py\n+++ b/x.py\n" + result.hunks
    done = subprocess.run(
        ["patch", "-p1", "--forward", "--no-backup-if-mismatch"],
        cwd=work,
        input=diff,
        text=True,
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (work / "x.py").read_text(encoding="utf-8") == original.replace(edit.before, edit.after)
    assert result.file == str(path) and result.line == marker_line(original)
    return result


def refusal(path: Path, category: str, line: int | None = None) -> str:
    text = path.read_text(encoding="utf-8")
    result = patch_for(str(path), marker_line(text) if line is None else line, category)
    assert isinstance(result, Refusal), result
    return result.reason


def dedented(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


# --- side_effect -----------------------------------------------------------------------------

SIDE_EFFECTS = [
    (
        """
        import torch
        LOG = None

        class M:
            def trace(self, t):
                \"\"\"The debugging helper.\"\"\"
                print(f"hidden {t.shape}", file=LOG)  # graph-break
        """,
        "print",
        """
            def trace(self, t):
                \"\"\"The debugging helper.\"\"\"
        """,
        ("print",),
    ),
    (
        """
        def f(x):
            if x is not None:
                print("value", x)  # graph-break
            return x
        """,
        "print",
        """
        def f(x):
            if x is not None:
                pass
            return x
        """,
        ("print",),
    ),
    (
        """
        import logging

        class M:
            def forward(self, x):
                y = x + 1
                # the shapes, while debugging
                self.logger.info(  # graph-break
                    "shape %s",
                    y.shape,
                )
                return y
        """,
        "logging",
        """
            def forward(self, x):
                y = x + 1
                # the shapes, while debugging
                return y
        """,
        ("self.logger.info",),
    ),
    (
        """
        import warnings

        def f(x):
            warnings.warn("slow path")  # graph-break
            return x * 2
        """,
        "other",
        """
        def f(x):
            return x * 2
        """,
        ("warnings.warn",),
    ),
]


@pytest.mark.parametrize(("code", "category", "after", "names"), SIDE_EFFECTS)
def test_side_effect_calls_are_deleted(
    tmp_path: Path, code: str, category: str, after: str, names: tuple[str, ...]
) -> None:
    result = patched(write(tmp_path, code), category)
    assert result.kind == "side_effect"
    assert textwrap.dedent(result.edits[0].after) == dedented(after)
    assert result.names == names


# --- scalar_bookkeeping ----------------------------------------------------------------------

LOOP_EXTEND = """
    import torch

    class Tagger:
        def forward(self, chunks):
            outs = []
            for chunk in chunks:
                logits = self.encoder(chunk)
                self.recent.extend(logits.argmax(-1).flatten().tolist())  # graph-break
                outs.append(logits)
            else:
                outs.reverse()
            # keep the last few
            del self.recent[:-KEEP]
            self.seen = len(self.recent)  # for the monitor
            {rest}
            return outs
"""
LOOP_EXTEND_AFTER = """
    def forward(self, chunks):
        outs = []
        recent_pending = []
        for chunk in chunks:
            logits = self.encoder(chunk)
            recent_pending.append(logits.argmax(-1).flatten())
            outs.append(logits)
        else:
            outs.reverse()

        @torch.compiler.disable
        def keep_recent(pending):
            for value in pending:
                self.recent.extend(value.tolist())
            # keep the last few
            del self.recent[:-KEEP]
            self.seen = len(self.recent)  # for the monitor

        keep_recent(recent_pending)
        {rest}
        return outs
"""
STAYING = [  # statements after the loop that stay after the helper's call (and end the run)
    "del self.recent[: -len(chunk)]",  # reads the loop's own `chunk`
    "n = len(self.recent)",  # binds a local: in the helper it would bind the helper's own
    "if self.recent: self.recent.pop()",  # not a simple statement
    "outs.clear()",  # does not name the state
]
LOOP_APPEND = """
    import torch as th

    def losses(batches, model, seen_pending, value):
        seen = []
        for batch in batches:
            loss = model(batch)
            seen.append(loss.item())  # graph-break
        return seen, seen_pending, value
"""
LOOP_APPEND_AFTER = """
    def losses(batches, model, seen_pending, value):
        seen = []
        seen_pending_2 = []
        for batch in batches:
            loss = model(batch)
            seen_pending_2.append(loss)

        @th.compiler.disable
        def keep_seen(pending):
            for value_2 in pending:
                seen.append(value_2.item())

        keep_seen(seen_pending_2)
        return seen, seen_pending, value
"""
IN_PLACE = [
    (
        "self.history.append(loss.item())  # graph-break",
        "self.history.append(value.item())",
        "self.history",
        "keep_history(loss)",
    ),
    (
        "self.tokens.extend(ids[0].tolist())  # graph-break",
        "self.tokens.extend(value.tolist())",
        "self.tokens",
        "keep_tokens(ids[0])",
    ),
    (
        "self.total += (loss * 2).item()  # graph-break",
        "self.total += value.item()",
        "self.total",
        "keep_total(loss * 2)",
    ),
]


def test_scalar_bookkeeping_in_a_loop_runs_after_it_in_a_disabled_helper(tmp_path: Path) -> None:
    code = LOOP_EXTEND.replace("{rest}", "pass")
    result = patched(write(tmp_path, code), "scalar_extraction")
    assert result.kind == "scalar_bookkeeping"
    expected = LOOP_EXTEND_AFTER.replace("{rest}", "pass")
    assert textwrap.dedent(result.edits[0].after) == dedented(expected)
    assert result.names == ("self.recent",)


@pytest.mark.parametrize("staying", STAYING)
def test_statements_the_helper_cannot_take_stay_after_its_call(
    tmp_path: Path, staying: str
) -> None:
    """The first statement that cannot move ends the run: the ones after it stay too."""
    rest = f"{staying}\n            del self.recent[:-KEEP]"
    result = patched(write(tmp_path, LOOP_EXTEND.replace("{rest}", rest)), "scalar_extraction")
    expected = LOOP_EXTEND_AFTER.replace("{rest}", f"{staying}\n        del self.recent[:-KEEP]")
    assert textwrap.dedent(result.edits[0].after) == dedented(expected)


def test_scalar_items_in_a_loop_get_fresh_names(tmp_path: Path) -> None:
    result = patched(write(tmp_path, LOOP_APPEND), "scalar_extraction")
    assert result.edits[0].after == dedented(LOOP_APPEND_AFTER)
    assert result.names == ("seen",)


def test_a_running_total_in_a_loop_is_added_up_after_it(tmp_path: Path) -> None:
    code = """
        import torch

        def run(self, batches):
            for batch in batches:
                self.total += self.model(batch).item()  # graph-break
            self.steps += 1
    """
    result = patched(write(tmp_path, code), "scalar_extraction")
    assert result.edits[0].after == dedented(
        """
        def run(self, batches):
            total_pending = []
            for batch in batches:
                total_pending.append(self.model(batch))

            @torch.compiler.disable
            def keep_total(pending):
                for value in pending:
                    self.total += value.item()

            keep_total(total_pending)
            self.steps += 1
        """
    )


@pytest.mark.parametrize(("line", "body", "state", "call"), IN_PLACE)
def test_scalar_bookkeeping_outside_a_loop_runs_in_a_disabled_helper(
    tmp_path: Path, line: str, body: str, state: str, call: str
) -> None:
    code = f"import torch\n\ndef step(self, loss, ids):\n    {line}\n    return loss\n"
    result = patched(write(tmp_path, code), "scalar_extraction")
    helper = call.split("(")[0]
    assert result.edits[0].after == (
        f"def step(self, loss, ids):\n    @torch.compiler.disable\n    def {helper}(value):\n"
        f"        {body}\n\n    {call}\n    return loss\n"
    )
    assert result.names == (state,)


def test_the_helper_takes_the_statements_on_its_state_that_follow(tmp_path: Path) -> None:
    """Continuation lines move in with their statement, except inside a string that spans
    lines; a blank line sets the helper apart from the code above it; no module import of
    torch: the function imports it."""
    code = '''
        def step(self, loss):
            loss = loss * 2
            self.log.append(
                loss.item()  # graph-break
            )
            self.log.append("""a
        b""")
            if len(self.log) > 9:
                self.log.clear()
            return loss
    '''
    result = patched(write(tmp_path, code), "scalar_extraction")
    assert result.edits[0].after == dedented(
        '''
        def step(self, loss):
            import torch
            loss = loss * 2

            @torch.compiler.disable
            def keep_log(value):
                self.log.append(
                    value.item()  # graph-break
                )
                self.log.append("""a
        b""")

            keep_log(loss)
            if len(self.log) > 9:
                self.log.clear()
            return loss
        '''
    )


# --- tensor_branch ---------------------------------------------------------------------------

BRANCHES = [
    (  # a: one assignment, no else
        """
        def scale(x):
            if x.max() > 1.0:  # graph-break
                x = x / 255.0
            return x
        """,
        """
        def scale(x):
            x = torch.where(x.max() > 1.0, x / 255.0, x)
            return x
        """,
        ("x",),
    ),
    (  # a: .item() dropped, bool(E) read as E, a non-boolean test made boolean
        """
        def clip(x, y, flag):
            if bool(x.sum().item() > 0):  # graph-break
                y = y - 1
            if flag.item():
                x = -x
            return x, y
        """,
        """
        def clip(x, y, flag):
            y = torch.where(x.sum() > 0, y - 1, y)
            if flag.item():
                x = -x
            return x, y
        """,
        ("y",),
    ),
    (  # c: return in both branches
        """
        def sign(x):
            if x.sum() >= 0:  # graph-break
                return x
            else:
                return -x
        """,
        """
        def sign(x):
            return torch.where(x.sum() >= 0, x, -x)
        """,
        ("return",),
    ),
    (  # c: `if C: return A` then `return B`
        """
        def relu_if(x, gate):
            if gate.item() > 0.5:  # graph-break
                return x.clamp(min=0)
            # the default
            return x
        """,
        """
        def relu_if(x, gate):
            # the default
            return torch.where(gate > 0.5, x.clamp(min=0), x)
        """,
        ("return",),
    ),
    (  # c: tuples item by item, the condition computed once
        """
        def split(x, y):
            if x.mean() > 0:  # graph-break
                return x, y * 2
            return (y, x)
        """,
        """
        def split(x, y):
            condition = x.mean() > 0
            return torch.where(condition, x, y), torch.where(condition, y * 2, x)
        """,
        ("return",),
    ),
    (  # d: skip the rest of the loop
        """
        def run(h, blocks, gates):
            for block, gate in zip(blocks, gates):
                keep = gate(h).mean()
                if keep < 0.1:  # graph-break
                    continue
                h = block(h)
            return h
        """,
        """
        def run(h, blocks, gates):
            for block, gate in zip(blocks, gates):
                keep = gate(h).mean()
                h = torch.where(keep < 0.1, h, block(h))
            return h
        """,
        ("h",),
    ),
    (  # d with two names: the condition is computed once, where the `if` was
        """
        def run(h, c, blocks):
            for block in blocks:
                if h.norm() < 0.1:  # graph-break
                    continue
                h = block(h)
                c = c + h.mean()
            return h, c
        """,
        """
        def run(h, c, blocks):
            for block in blocks:
                condition = h.norm() < 0.1
                h = torch.where(condition, h, block(h))
                c = torch.where(condition, c, c + h.mean())
            return h, c
        """,
        ("h", "c"),
    ),
    (  # and / or / not as torch.logical_*
        """
        def gate(x, y, z):
            if x.any() and not (y > 0).all() or z.sum():  # graph-break
                x = x * 0
            return x
        """,
        """
        def gate(x, y, z):
            x = torch.where({GATE}, x * 0, x)
            return x
        """,
        ("x",),
    ),
]


GATE = (
    "torch.logical_or(torch.logical_and(x.any(), torch.logical_not((y > 0).all())), z.sum().bool())"
)


@pytest.mark.parametrize(("code", "after", "names"), BRANCHES)
def test_tensor_branches_become_where(
    tmp_path: Path, code: str, after: str, names: tuple[str, ...]
) -> None:
    result = patched(write(tmp_path, "import torch\n\n" + dedented(code)), "data_dependent_branch")
    assert result.kind == "tensor_branch"
    assert result.edits[0].after == dedented(after).replace("{GATE}", GATE)
    assert result.names == names


def test_if_else_assignments_become_one_where_per_name(tmp_path: Path) -> None:
    code = """
        import torch

        def pick(a, b):
            if a.mean().item() > 0:  # graph-break
                lo = a
                hi = b * 2
            else:
                lo = b
                hi = a * 2
            return lo, hi
    """
    result = patched(write(tmp_path, code), "data_dependent_branch")
    assert result.edits[0].after == dedented(
        """
        def pick(a, b):
            condition = a.mean() > 0
            lo = torch.where(condition, a, b)
            hi = torch.where(condition, b * 2, a * 2)
            return lo, hi
        """
    )
    assert result.names == ("lo", "hi")


def test_an_elif_chain_of_assignments_becomes_nested_wheres(tmp_path: Path) -> None:
    # #59: the if/elif/else a real loop has; every condition is computed before any name
    # changes, as the chain tests them before it assigns
    code = """
        import torch

        def step(y, err, h):
            for _ in range(3):
                if err.mean() > 1.0:  # graph-break
                    h = h * 0.5
                    y = y - err
                elif err.mean() < 0.1:
                    h = h * 2.0
                    y = y + err
                else:
                    h = h
                    y = y
            return y, h
    """
    result = patched(write(tmp_path, code), "data_dependent_branch")
    assert result.kind == "tensor_branch" and result.names == ("h", "y")
    assert result.edits[0].after == dedented(
        """
        def step(y, err, h):
            for _ in range(3):
                condition = err.mean() > 1.0
                condition_2 = err.mean() < 0.1
                h = torch.where(condition, h * 0.5, torch.where(condition_2, h * 2.0, h))
                y = torch.where(condition, y - err, torch.where(condition_2, y + err, y))
            return y, h
        """
    )


def test_a_value_reading_a_name_its_branch_set_before_keeps_that_order(tmp_path: Path) -> None:
    # the condition is one bool: when it holds, `x` already holds the taken branch's value
    code = (
        "import torch\n\ndef f(x, y):\n    if x.sum() > 0:  # graph-break\n        x = x + 1\n"
        "        y = x * 2\n    else:\n        x = x - 1\n        y = y + x\n    return y\n"
    )
    result = patched(write(tmp_path, code), "data_dependent_branch")
    assert result.edits[0].after == (
        "def f(x, y):\n    condition = x.sum() > 0\n    x = torch.where(condition, x + 1, x - 1)\n"
        "    y = torch.where(condition, x * 2, y + x)\n    return y\n"
    )


def test_branches_assigning_in_other_orders_get_torch_cond_not_where(tmp_path: Path) -> None:
    # one torch.where per name cannot keep both orders; torch.cond runs each branch as written
    code = (
        "import torch\n\ndef f(x, y):\n    if x.sum() > 0:  # graph-break\n        x = 1\n"
        "        y = x\n    else:\n        y = 3\n        x = 2\n    return x, y\n"
    )
    result = patched(write(tmp_path, code), "data_dependent_branch")
    assert result.kind == "tensor_cond"
    assert "    x, y = torch.cond(x.sum() > 0, cond_true, cond_false, (x,))\n" in (
        result.edits[0].after
    )


def test_an_elif_chain_without_else_keeps_the_names_it_had(tmp_path: Path) -> None:
    code = """
        import torch

        def f(x):
            if x.sum() > 0:  # graph-break
                x = x + 1
            elif x.sum() < -1:
                x = x - 1
            return x
    """
    result = patched(write(tmp_path, code), "data_dependent_branch")
    assert "    x = torch.where(condition, x + 1, torch.where(condition_2, x - 1, x))\n" in (
        result.edits[0].after
    )


@pytest.mark.parametrize(
    ("line", "category", "rewritten"),
    [
        (
            "if x.sum() > 0: x = x * 2  # graph-break",
            "data_dependent_branch",
            "x = torch.where(x.sum() > 0, x * 2, x)",
        ),
        ("if debug: print(x)  # graph-break", "print", "if debug: pass  # graph-break"),
    ],
)
def test_one_line_ifs_are_rewritten_whole_or_in_their_line(
    tmp_path: Path, line: str, category: str, rewritten: str
) -> None:
    """On `if C: statement`, the line is both the `if` and its body: each is tried."""
    code = f"import torch\n\ndef f(x, debug):\n    {line}\n    return x\n"
    result = patched(write(tmp_path, code), category)
    assert result.edits[0].after == f"def f(x, debug):\n    {rewritten}\n    return x\n"


def test_a_module_without_torch_gets_an_import_in_the_function(tmp_path: Path) -> None:
    code = '''
        def scale(x):
            """Bring to [0, 1]."""
            # images may come as bytes
            if x.max() > 1.0:  # graph-break
                x = x / 255.0
            return x
    '''
    result = patched(write(tmp_path, code), "data_dependent_branch")
    assert result.edits[0].after == dedented(
        '''
        def scale(x):
            """Bring to [0, 1]."""
            import torch
            # images may come as bytes
            x = torch.where(x.max() > 1.0, x / 255.0, x)
            return x
        '''
    )


# --- mask_gather -----------------------------------------------------------------------------

MOE = """
    import torch

    def dispatch(h, expert_ids, experts):
        out = torch.zeros_like(h)
        for e, expert in enumerate(experts):
            {index}
            {store}
        return out
"""
MASKS = [
    (
        "idx = torch.nonzero(expert_ids == e).squeeze(-1)  # graph-break",
        "out[idx] = expert(h[idx])",
        ["mask = expert_ids == e"],
        "expert(h)",
        "expert_ids == e",
    ),
    (
        "idx = (expert_ids == e).nonzero()[:, 0]  # graph-break",
        "out[idx] = out[idx] + expert(h[idx]) * 2",
        ["mask = expert_ids == e"],
        "out + expert(h) * 2",
        "expert_ids == e",
    ),
    (
        "idx = torch.where(expert_ids == e)[0]  # graph-break",
        "out[idx] = expert(h[idx])",
        ["mask = expert_ids == e"],
        "expert(h)",
        "expert_ids == e",
    ),
    (
        "chosen = expert_ids == e",
        "out[chosen] = expert(h[chosen])  # graph-break",
        ["chosen = expert_ids == e"],
        "expert(h)",
        "chosen",
    ),
    (
        "pass",
        "out[expert_ids == e] = expert(h[expert_ids == e])  # graph-break",
        ["pass", "mask = expert_ids == e"],
        "expert(h)",
        "expert_ids == e",
    ),
]


@pytest.mark.parametrize(("index", "store", "mask_lines", "rows", "names"), MASKS)
def test_mask_gathers_become_a_masked_where(
    tmp_path: Path, index: str, store: str, mask_lines: list[str], rows: str, names: str
) -> None:
    result = patched(write(tmp_path, MOE.format(index=index, store=store)), "dynamic_shape")
    mask = "chosen" if names == "chosen" else "mask"
    where = (
        f"out = torch.where({mask}.reshape({mask}.shape + (1,) * (out.dim() - {mask}.dim())),"
        f" {rows}, out)"
    )
    body = "".join(f"        {line}\n" for line in [*mask_lines, where])
    expected = (
        "def dispatch(h, expert_ids, experts):\n    out = torch.zeros_like(h)\n"
        f"    for e, expert in enumerate(experts):\n{body}    return out\n"
    )
    assert result.kind == "mask_gather"
    assert result.edits[0].after == expected
    assert result.names == (names,)


def test_a_mask_name_in_use_is_not_reused(tmp_path: Path) -> None:
    code = """
        import torch

        def dispatch(h, ids, f, mask):
            out = h.clone()
            idx = torch.nonzero(ids > 0).squeeze(1)  # graph-break
            out[idx] = f(h[idx])
            return out, mask
    """
    result = patched(write(tmp_path, code), "dynamic_shape")
    assert "    mask_2 = ids > 0\n" in result.edits[0].after


# --- compile_boundary ------------------------------------------------------------------------


def test_graph_break_calls_are_deleted(tmp_path: Path) -> None:
    code = """
        import torch as th

        def f(x):
            y = x + 1
            th._dynamo.graph_break()  # graph-break
            return y * 2
    """
    result = patched(write(tmp_path, code), "explicit")
    assert result.kind == "compile_boundary"
    assert result.edits[0].after == "def f(x):\n    y = x + 1\n    return y * 2\n"
    assert result.names == ("th._dynamo.graph_break",)


def test_a_call_through_a_disabled_wrapper_calls_the_function(tmp_path: Path) -> None:
    code = """
        import torch

        def helper(x):
            return x.sin()

        helper_eager = torch._dynamo.disable(helper, recursive=False)

        def f(x):
            return helper_eager(x) + helper_eager(x)  # graph-break
    """
    result = patched(write(tmp_path, code), "disabled")
    assert result.edits[0].after == (
        "def f(x):\n    return helper(x) + helper_eager(x)  # graph-break\n"
    )
    assert result.names == ("helper_eager", "helper") and not result.edits[0].unwrap


@pytest.mark.parametrize("decorator", ["@torch.compiler.disable", "@disable(recursive=True)"])
@pytest.mark.parametrize("call", ["rotate(x)", "self.rotate(x)"])
def test_a_disabled_function_loses_its_decorator(tmp_path: Path, decorator: str, call: str) -> None:
    method = call.startswith("self.")
    pad = "    " if method else ""
    head = "class Block:\n" if method else ""
    code = (
        "import torch\nfrom torch.compiler import disable\n\n"
        f"{head}{pad}@staticmethod\n{pad}{decorator}\n{pad}def rotate(x):\n"
        f"{pad}    return x.flip(-1)\n\n"
        f"{pad}def forward(self, x):\n{pad}    return {call}  # graph-break\n"
    )
    path = tmp_path / "x.py"
    path.write_text(code, encoding="utf-8")
    result = patched(path, "disabled")
    (edit,) = result.edits
    assert edit.unwrap and edit.qualname == ("Block.rotate" if method else "rotate")
    assert edit.first_line == (5 if method else 4)
    assert edit.after == f"{pad}@staticmethod\n{pad}def rotate(x):\n{pad}    return x.flip(-1)\n"
    assert result.names == ("rotate",)


# --- refusals --------------------------------------------------------------------------------

REFUSALS = [
    (
        "def f(x):\n    for t in x:\n        if t.item() == 2:  # graph-break\n            break\n",
        "an early exit from a loop on a tensor value (`break`) has no tensor form",
    ),
    (
        "def f(x):\n    if (x < 0).any():  # graph-break\n        raise ValueError('neg')\n",
        "an error raised on a tensor value (`raise`) has no tensor form",
    ),
    (
        "def f(x, out):\n    if x.sum() > 0:  # graph-break\n        x = x + 1\n"
        "    elif x.sum() < -1:\n        out.append(x)\n    return x\n",
        "a branch that does more than assign (`out.append(x)`) needs torch.cond or a hand rewrite",
    ),
    (
        "def f(x, y):\n    if x.sum() > 0:  # graph-break\n        x = x + 1\n"
        "    elif x.sum() < -1:\n        y = x - 1\n    else:\n        x = x * 2\n",
        "the two branches assign different names",
    ),
    (
        "def f(x):\n    if x.sum() > 0:  # graph-break\n        x = x + 1\n"
        "    elif x.sum() < -1:\n        z = x - 1\n    return x\n",
        "the two branches assign different names",
    ),
    (
        "def f(x, flag):\n    if flag:\n        x = x + 1\n"
        "    elif x.sum() < -1:  # graph-break\n        x = x - 1\n    return x\n",
        "an `elif` chain on a tensor value needs torch.cond or a hand rewrite",
    ),
    (
        "def f(x, out):\n    if x.sum() > 0:  # graph-break\n        out.append(x)\n",
        "a branch that does more than assign (`out.append(x)`) needs torch.cond or a hand rewrite",
    ),
    (
        "def f(x):\n    if x.sum() > 0:  # graph-break\n        y = x\n    return x\n",
        "`y` has no value before the `if` to keep when the branch is not taken",
    ),
    (
        "def f(x, y):\n    if x.sum() > 0:  # graph-break\n        x = 1\n    else:\n"
        "        y = 2\n",
        "the two branches assign different names",
    ),
    (
        "def f(x):\n    if x.sum() > 0:  # graph-break\n        x = 1\n        x = 2\n"
        "    return x\n",
        "`x` is assigned twice in one branch",
    ),
    (
        "def f(x, y):\n    if x.sum() > 0:  # graph-break\n        return x, y\n    return x\n",
        "the two branches return results of different forms",
    ),
    (
        "def f(x):\n    if 0 < x.sum() < 1:  # graph-break\n        x = 1\n    return x\n",
        "a chained comparison on a tensor (`a < x < b`) needs a hand rewrite",
    ),
    (
        "def f(x):\n    if x is None:  # graph-break\n        x = 1\n    return x\n",
        "the `if` tests identity or membership (`is`, `in`), not a tensor value",
    ),
    (
        "def f(x, seen):\n    for t in x:\n        seen.append(t.item())  # graph-break\n"
        "        if t.sum() > 9:\n            return seen\n",
        "the loop can be left early (`return`), so the values it collects cannot be converted",
    ),
    (
        "def f(x, seen):\n    for t in x:\n        seen.append(t.item())  # graph-break\n"
        "        print(len(seen))\n",
        "`seen` is used elsewhere in the loop, so its values cannot wait for its end",
    ),
    (
        "def f(x, total):\n    total += x.sum().item()  # graph-break\n    return total\n",
        "a local total is not state kept across calls: a nested function cannot rebind `total`",
    ),
    (
        "def f(self, xs):\n    for x in xs:\n        if x.sum() > 0:\n"
        "            self.seen.append(x.item())  # graph-break\n",
        "the bookkeeping sits in a block inside a loop, so its values cannot be collected",
    ),
    (
        "def f(self, xs):\n    for x in xs:\n"
        "        self.stats.seen.append(x.item())  # graph-break\n        self.stats = x\n",
        "the loop rebinds `self.stats`, so `self.stats.seen` may not be one object at its end",
    ),
    (
        "import torch\ndef f(h, ids, g):\n    out = h.clone()\n"
        "    idx = torch.nonzero(ids).squeeze(-1)  # graph-break\n    out[idx] = g(h[idx])\n"
        "    return out, idx\n",
        "the gathered rows are used in a way a masked where cannot express",
    ),
    (
        "import torch\ndef f(h, ids, g, out):\n"
        "    idx = torch.nonzero(ids).squeeze(-1)  # graph-break\n    out[idx] = g(h[idx])\n",
        "`out[...] = ...` writes into `out` in place, where its caller can see it",
    ),
    (
        "def f(x):\n    print(x); y = x + 1  # graph-break\n    return y\n",
        "the statement shares its line with other code, so it cannot be cut alone",
    ),
    (
        "def f(x):\n    y = x.cumsum(0)  # graph-break\n    return y\n",
        "no rewrite applies to `y = x.cumsum(0)`",
    ),
    (
        "x = 1  # graph-break\n",
        "line 1 is not inside a function",
    ),
]


@pytest.mark.parametrize(("code", "reason"), REFUSALS)
def test_refusals_say_why(tmp_path: Path, code: str, reason: str) -> None:
    assert refusal(write(tmp_path, code), "other").startswith(reason)


def test_a_line_with_no_statement_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "def f(x):\n    y = x\n\n    # graph-break\n    return y\n")
    assert refusal(path, "other") == "line 4 holds no statement"


def test_files_that_are_not_the_users_are_refused(tmp_path: Path) -> None:
    installed = tmp_path / "lib" / "python3.11" / "site-packages" / "pkg"
    installed.mkdir(parents=True)
    path = write(installed, "def f(x):\n    print(x)  # graph-break\n")
    assert refusal(path, "print") == "not the user's code"
    own = Path(rewrite.__file__)
    assert patch_for(str(own), 60, "print") == Refusal("not the user's code")


def test_unreadable_and_unparsable_files_are_refused(tmp_path: Path) -> None:
    missing = patch_for(str(tmp_path / "gone.py"), 1, "print")
    assert isinstance(missing, Refusal) and missing.reason.startswith("cannot read ")
    broken = write(tmp_path, "def f(:\n    pass\n")
    assert refusal(broken, "print", line=1).startswith("cannot parse ")


def test_a_rewrite_that_does_not_compile_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last guard: a rewriter's mistake becomes a refusal, not a broken patch."""
    path = write(tmp_path, "def f(x):\n    print(x)  # graph-break\n    return x\n")

    def broken(site: rewrite.Site) -> Rewrite:
        return Rewrite("side_effect", site.function, (LineEdit(2, 2, ("    return (",)),), ())

    monkeypatch.setitem(rewrite.REWRITERS, "side_effect", broken)
    assert refusal(path, "print").startswith("the rewritten `f` does not compile")

    def overlapping(site: rewrite.Site) -> Rewrite:
        edits = (LineEdit(2, 3, ()), LineEdit(3, 3, ("    pass",)))
        return Rewrite("side_effect", site.function, edits, ())

    monkeypatch.setitem(rewrite.REWRITERS, "side_effect", overlapping)
    assert refusal(path, "print").startswith("the rewrite of this function is inconsistent")


def test_the_package_does_not_import_torch() -> None:
    code = "import sys, advisor.measure.rewrite; print('torch' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert done.stdout.strip() == "False"


# --- the scenario files ----------------------------------------------------------------------


def method_body(file: Path, cls: str, method: str) -> list[str]:
    """The statements of `cls.method` in the file, as `ast.unparse` writes them."""
    tree = ast.parse(file.read_text(encoding="utf-8"))
    owner = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls)
    function = next(n for n in owner.body if isinstance(n, ast.FunctionDef) and n.name == method)
    return [ast.unparse(s) for s in function.body]


def after_body(result: Patch) -> list[str]:
    tree = ast.parse(textwrap.dedent(result.edits[0].after))
    function = tree.body[0]
    assert isinstance(function, ast.FunctionDef)
    return [ast.unparse(s) for s in function.body]


MOE_WHERE = (
    "out = torch.where(mask.reshape(mask.shape + (1,) * (out.dim() - mask.dim())), expert(h), out)"
)
SCENARIO_PATCHES = [
    (
        "print_logging.py",
        "print",
        "side_effect",
        '''
        def trace(self, t: torch.Tensor) -> None:
            """The debugging helper: one line per stage."""
        ''',
    ),
    (
        "data_dependent_branch.py",
        "data_dependent_branch",
        "tensor_branch",
        """
        def to_unit_range(self, x: torch.Tensor) -> torch.Tensor:
            x = torch.where(x.max() > 1.0, x / 255.0, x)
            return x
        """,
    ),
    (
        "loop_frame_skip.py",
        "data_dependent_branch",
        "tensor_branch",
        """
        def forward(self, h: torch.Tensor) -> torch.Tensor:
            for block, gate in zip(self.blocks, self.gates, strict=True):
                keep = torch.sigmoid(gate(h.mean(dim=1))).mean()
                h = torch.where(keep < SKIP_THRESHOLD, h, block(h))
            return h
        """,
    ),
    (
        "moe_nonzero_routing.py",
        "dynamic_shape",
        "mask_gather",
        """
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            batch, seq, dim = x.shape
            h = self.norm(x).reshape(batch * seq, dim)
            gate, expert_ids = self.router(h).softmax(-1).max(dim=-1)
            out = torch.zeros_like(h)
            for e, expert in enumerate(self.experts):
                mask = expert_ids == e
                {WHERE}
            return x + (gate.unsqueeze(-1) * out).reshape(batch, seq, dim)
        """,
    ),
    (
        "disabled_helper.py",
        "disabled",
        "compile_boundary",
        """
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            batch, seq, _ = x.shape
            qkv = self.qkv(self.norm(x)).view(batch, seq, 3, HEADS, HEAD_DIM).transpose(1, 3)
            q, k, v = qkv.unbind(dim=2)  # [B, H, S, Dh]
            q, k = apply_rotary(q, k, self.cos, self.sin)  # graph-break
            return self.attend(x, q, k, v)
        """,
    ),
]


@pytest.mark.parametrize(("name", "category", "kind", "after"), SCENARIO_PATCHES)
def test_scenario_breaks_get_the_patch_a_person_would_write(
    tmp_path: Path, name: str, category: str, kind: str, after: str
) -> None:
    path = tmp_path / name
    shutil.copy(SCENARIOS / name, path)
    result = patched(path, category)
    assert result.kind == kind
    assert textwrap.dedent(result.edits[0].after) == dedented(after).replace("{WHERE}", MOE_WHERE)


SCALAR_SCENARIO_AFTER = """\
    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        chunk_logits = []
        recent_pending = []
        for chunk in token_ids.split(CHUNK, dim=1):
            logits = self.tag_chunk(chunk)
            recent_pending.append(logits.argmax(-1).flatten())
            chunk_logits.append(logits)

        @torch.compiler.disable
        def keep_recent(pending):
            for value in pending:
                self.recent.extend(value.tolist())
            del self.recent[:-RECENT]

        keep_recent(recent_pending)
        return torch.cat(chunk_logits, dim=1)
"""


def test_the_scalar_bookkeeping_scenario_keeps_its_list_out_of_the_trace(tmp_path: Path) -> None:
    """The form measured with Dynamo (torch 2.13) to compile once and keep the same list: the
    list's mutation, trimming included, only in the disabled helper (traced, it recompiles on
    every call)."""
    path = tmp_path / "scalar_bookkeeping.py"
    shutil.copy(SCENARIOS / "scalar_bookkeeping.py", path)
    result = patched(path, "scalar_extraction")
    (edit,) = result.edits
    assert result.kind == "scalar_bookkeeping" and edit.qualname == "ChunkedTagger.forward"
    assert edit.after == SCALAR_SCENARIO_AFTER
    assert result.names == ("self.recent",)
    # the helper's decorator and `def` lines and its call: breaks the patch leaves on purpose
    after = edit.after.splitlines()
    helper = [
        edit.first_line + i
        for i, text in enumerate(after)
        if "@torch.compiler.disable" in text or "keep_recent(" in text
    ]
    assert len(helper) == 3 and result.intended_breaks == tuple(sorted(helper))


@pytest.mark.parametrize(
    ("name", "cls", "method"),
    [
        ("loop_frame_skip.py", "AdaptiveDepthEncoderFixed", "forward"),
        ("disabled_helper.py", "RotaryAttentionBlockFixed", "forward"),
    ],
)
def test_scenario_patches_match_the_fixed_classes(name: str, cls: str, method: str) -> None:
    path = SCENARIOS / name
    result = patch_for(str(path), marker_line(path.read_text(encoding="utf-8")), "other")
    assert isinstance(result, Patch), result
    assert after_body(result) == method_body(path, cls, method)


def test_data_dependent_branch_selects_as_the_fixed_class_does() -> None:
    path = SCENARIOS / "data_dependent_branch.py"
    result = patch_for(str(path), marker_line(path.read_text(encoding="utf-8")), "other")
    assert isinstance(result, Patch), result
    (fixed_return,) = method_body(path, "SmallConvNetFixed", "to_unit_range")
    assert after_body(result)[0] == "x = " + fixed_return.removeprefix("return ")


@pytest.mark.parametrize(
    ("name", "category", "reason"),
    [
        (
            "item_in_decode_loop.py",
            "scalar_extraction",
            "an early exit from a loop on a tensor value (`break`) has no tensor form",
        ),
        (
            "cold_path_check.py",
            "data_dependent_branch",
            "an error raised on a tensor value (`raise`) has no tensor form; check it before "
            "the compiled code runs",
        ),
    ],
)
def test_scenario_breaks_without_a_rewrite_are_refused(
    name: str, category: str, reason: str
) -> None:
    assert refusal(SCENARIOS / name, category) == reason
