"""The candidate's AST as the Python policy reads it, prepared so that two everyday spellings are
judged by what they do rather than how they look:

* ``if __name__ == "__main__":`` at module level: the body never runs in the verifier, which
  imports the candidate under another module name, so it is dropped (self-tests import ``time``,
  seed the RNG and call the reference freely). Kept when the candidate binds ``__name__``
  anywhere (an assignment, import alias, def, class, loop or ``global`` declaration), since then
  the test may hold.
* module-level functions nothing names (a ``main()`` the self-test block alone called) never run
  either: their bodies are dropped too, until none is left (a function is only reached by its name:
  ``globals()``, ``vars()`` and ``__dict__`` are refused). Decorated ones are kept: the decorator
  receives them.
* ``getattr(obj, "name")`` and ``getattr(obj, "name", default)`` with a constant identifier are
  read as ``obj.name`` (``obj.name or default``): the same attribute access, so every check that
  judges ``obj.name`` judges it. A computed name stays a call of ``getattr`` (refused).

Line numbers are kept; nothing is executed.
"""

from __future__ import annotations

import ast


def prepare(tree: ast.Module) -> ast.Module:
    """The tree with dead self-test blocks dropped and constant getattr calls read as attributes
    (changed in place; one walk over the tree)."""
    bound: set[str] = set()
    getattrs: list[tuple[ast.AST, ast.Call]] = []
    for node in ast.walk(tree):
        bound.update(_bound_names(node) & {"__name__", "getattr"})
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Name) and child.func.id == "getattr":
                getattrs.append((node, child))
    if "__name__" not in bound:
        dead = [node for node in tree.body if isinstance(node, ast.If) and _is_main_test(node.test)]
        for node in dead:
            node.body = [ast.copy_location(ast.Pass(), node.body[0])]
        if dead:
            _drop_unnamed_functions(tree)
    if "getattr" not in bound:
        for parent, call in reversed(getattrs):  # inner calls first: an outer one reads their result
            access = _attribute(call)
            if access is not None:
                _replace(parent, call, access)
    return tree


def _drop_unnamed_functions(tree: ast.Module) -> None:
    while True:
        loaded = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        unnamed = [node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                   and not node.decorator_list and node.name not in loaded and not node.name.startswith("__")
                   and not (len(node.body) == 1 and isinstance(node.body[0], ast.Pass))]
        if not unnamed:
            return
        for node in unnamed:
            node.body = [ast.copy_location(ast.Pass(), node.body[0])]


def _is_main_test(test: ast.expr) -> bool:
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    mains = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return len(names) == 1 and len(mains) == 1


def _bound_names(node: ast.AST) -> set[str]:
    """Names a node may bind, in whatever scope."""
    if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
        return {node.id}
    if isinstance(node, ast.alias):
        return {node.asname or node.name.split(".")[0]}
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return set(node.names)
    if isinstance(node, ast.arg):
        return {node.arg}
    if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
        return {node.name}
    if isinstance(node, ast.MatchMapping) and node.rest:
        return {node.rest}
    return set()


def _attribute(call: ast.Call) -> ast.expr | None:
    """``obj.name`` (``obj.name or default``) for ``getattr(obj, "name"[, default])``, else None."""
    if call.keywords or len(call.args) not in (2, 3) or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    name = call.args[1]
    if not (isinstance(name, ast.Constant) and isinstance(name.value, str) and name.value.isidentifier()):
        return None
    access = ast.copy_location(ast.Attribute(value=call.args[0], attr=name.value, ctx=ast.Load()), call)
    if len(call.args) == 2:
        return access
    return ast.copy_location(ast.BoolOp(op=ast.Or(), values=[access, call.args[2]]), call)


def _replace(parent: ast.AST, old: ast.AST, new: ast.AST) -> None:
    for field, value in ast.iter_fields(parent):
        if value is old:
            setattr(parent, field, new)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if item is old:
                    value[i] = new
