"""What in a triton-ascend candidate cannot run on this machine, found statically (parent side).

- Ascend-only Triton language: triton-ascend 3.2.0 adds ``tl.parallel``, ``tl.insert_slice``,
  ``tl.extract_slice``, ``tl.get_element``, ``tl.index_select``, ``tl.compile_hint``,
  ``tl.multibuffer``, ``tl.sync_block_*``, ``tl.tanh`` and the ``triton.language.extra.ascend``
  library. triton-ascend compiles them, but upstream Triton's interpreter (the correctness gate
  here) has none of them, so such a candidate gets "correctness unavailable here: <feature>"
  instead of a misleading interpreter crash. The list is the difference of the two packages'
  ``triton.language`` namespaces (a test recomputes it from the installed toolchain).
- NPU-only Python modules (``torch_npu``, CANN's ``acl``, ``te``, ``tbe``, ``hccl``): where they are
  not installed, a candidate importing them fails with a clear reason instead of an ImportError
  traceback (the static hack gate forbids them anyway; this is the message when it is disabled).
"""

from __future__ import annotations

import ast
from importlib.util import find_spec

ASCEND_ONLY_LANGUAGE = frozenset({
    "compile_hint", "extract_slice", "get_element", "index_select", "insert_slice", "multibuffer", "parallel",
    "sync_block_all", "sync_block_set", "sync_block_wait", "tanh",
})
ASCEND_ONLY_MODULES = ("triton.language.extra.ascend",)
NPU_ONLY_MODULES = ("torch_npu", "acl", "te", "tbe", "hccl")


def _language_aliases(tree: ast.Module) -> tuple[set[str], set[str]]:
    """Names bound to ``triton.language`` and to ``triton`` itself."""
    language, triton = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "triton.language":
                    (language if alias.asname else triton).add(alias.asname or "triton")
                elif alias.name == "triton":
                    triton.add(alias.asname or "triton")
        elif isinstance(node, ast.ImportFrom) and node.module == "triton" and not node.level:
            language.update(a.asname or a.name for a in node.names if a.name == "language")
    return language, triton


def ascend_only_features(source: str) -> tuple[str, ...]:
    """The Ascend-only language features the candidate uses, e.g. ("tl.parallel",)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ()
    language, triton = _language_aliases(tree)
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ASCEND_ONLY_LANGUAGE:
            base = node.value
            if isinstance(base, ast.Name) and base.id in language:
                found.append(f"{base.id}.{node.attr}")
            elif (isinstance(base, ast.Attribute) and base.attr == "language" and isinstance(base.value, ast.Name)
                  and base.value.id in triton):
                found.append(f"{base.value.id}.language.{node.attr}")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            found.extend(n for n in names if n.startswith(ASCEND_ONLY_MODULES))
    return tuple(dict.fromkeys(found))


def missing_npu_modules(source: str) -> tuple[str, ...]:
    """NPU-only modules the candidate imports that are not installed here."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ()
    imported = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported += [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            imported.append(node.module.split(".")[0])
    return tuple(dict.fromkeys(m for m in imported if m in NPU_ONLY_MODULES and find_spec(m) is None))


def npu_modules_reason(modules: tuple[str, ...]) -> str:
    return (f"the candidate imports {', '.join(modules)}, which is not installed here (NPU-only: torch_npu and "
            f"CANN's Python modules exist only on an Ascend host with CANN); remove the import: inputs and "
            f"outputs are plain torch tensors already on the right device, and kernels launch through triton")
