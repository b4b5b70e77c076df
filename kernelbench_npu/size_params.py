"""The size parameters of a problem file: every int literal that sets a tensor size, with its role.

A *site* is one place in the source that holds a size:
- a module-level constant: a literal (``batch_size = 16``), a constant expression
  (``N = 2048 * 2``), an element of a tuple or list (``input_shape = (8192 * 2,)``,
  ``hidden = [1024] * 16``: the 1024), a chained or unpacked assignment (``height = width = 128``,
  ``D, H, W = 16, 32, 32``); names and derived expressions (``out = in_features * 2``,
  ``bias_shape = (out_channels, 1, 1)``) are not sites: they follow their inputs when the file is
  re-executed;
- an int literal argument of a tensor factory in ``get_inputs`` (``torch.rand(batch_size, 3, 224,
  224)``: the 3 and both 224s), keyed ``get_inputs:LINE:COL``;
- a layer width written inside the model's code (a network's architecture: VGG's
  ``nn.Conv2d(64, 128, kernel_size=3)``, ``nn.Linear(512 * 7 * 7, 4096)``: the 512 and the 4096,
  GoogLeNet's ``InceptionModule(192, 64, 96, ...)``): an int literal, or an int literal factor of
  a product, passed to a torch.nn layer or to a function, class or method of the file, or the
  int default of such a parameter (Swin's ``def __init__(self, embed_dim=96, ...)``), keyed
  ``Class.method:LINE:COL``. Its role comes from the parameter it is passed to (``in_channels``,
  ``hidden_size``; ``kernel_size``, ``num_layers``, ``stride`` are geometry). Only widths that
  can shrink are sites. Equal widths shrink together, so ``Conv2d(256, 512)`` still feeds
  ``Linear(512 * 7 * 7, ...)``; a width that is also used where no site is (``x.view(-1, 512)``)
  makes the model fail on the meta device when halved, and is then pinned (see sizing).

Each site has a role from its name (or, in ``get_inputs``, its position): ``batch``, ``gemm``
(single-letter matrix dims such as M, N, K), ``channels``, ``spatial``, ``sequence``, ``group``
(group counts, which shrink with the channels they divide) or ``geometry`` (kernel, stride,
padding, dilation, heads, layers, axes: never scaled). :func:`rewrite` puts new values back into
the source, everything else byte for byte.
"""

from __future__ import annotations

import ast
import operator
import re
from dataclasses import dataclass

# The smallest size a role may shrink to: a GEMM keeps M, N, K >= 64, a batch 2, a sequence 32,
# channels, spatial extents and group counts 8 (a conv with groups=4 keeps 4). A size below twice
# its floor is never scaled.
FLOORS = {"batch": 2, "gemm": 64, "sequence": 32, "spatial": 8, "channels": 8, "group": 8}
_GEOMETRY = re.compile(r"kernel|stride|pad|dilation|(^|_)(n|num)_?heads?$|^n?heads?$|axis|(^|_)layers$|(^|_)num_layers|(^|_)n_layers?$|reduce_dim|dim_idx|patch|stage|ratio", re.I)
_ROLES = (  # (role, name pattern), first match wins
    ("batch", re.compile(r"batch|^b$", re.I)),
    ("group", re.compile(r"group", re.I)),
    ("sequence", re.compile(r"seq|token", re.I)),
    ("spatial", re.compile(r"(^|_)(height|width|depth|length)(_in)?$|image|img|spatial|^[dhw](_in)?$|^dim\d$", re.I)),
    ("gemm", re.compile(r"^[a-z]$", re.I)),
)
_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
              ast.Mod: operator.mod, ast.Pow: operator.pow}
_FACTORIES = {"rand", "randn", "zeros", "ones", "empty"}
_SPATIAL_POSITIONS = 2  # torch.rand(B, C, H, W): positions >= 2 of a 3D+ shape are spatial


@dataclass(frozen=True)
class Site:
    """One size literal in the source."""

    key: str  # "batch_size", "height=width", "input_shape[0]", "get_inputs:12:27"
    value: int
    role: str  # batch | gemm | channels | spatial | sequence | group | geometry
    span: tuple[int, int, int, int]  # (line, col, end line, end col) of the node to rewrite
    dead: bool = False  # the name is assigned again later: this value is never used

    @property
    def floor(self) -> int:
        return min(self.value, FLOORS.get(self.role, self.value))

    @property
    def scalable(self) -> bool:
        return self.role in FLOORS and self.value >= 2 * FLOORS[self.role] and not self.dead


def find_sites(source: str) -> tuple[Site, ...]:
    """Every size site of the source, in file order."""
    tree = ast.parse(source)
    sites: list[Site] = []
    for node in tree.body:
        if isinstance(node, ast.Assign):
            sites += _assignment_sites(node)
        elif isinstance(node, ast.FunctionDef) and node.name == "get_inputs":
            sites += _input_literal_sites(node)
    sites += _layer_width_sites(tree)
    return tuple(_mark_dead(sorted(sites, key=lambda s: s.span)))


def role_of(name: str, position: int | None = None, arity: int = 0) -> str:
    """The role of a constant (``position``/``arity``: the element's place in a tuple constant)."""
    base = name.split("[")[0]
    if position is not None and "shape" in base.lower() and arity >= 3 and position >= arity - 2:
        return "spatial"  # input_shape = (batch_size, 3, 224, 224): the last two are an image
    if _GEOMETRY.search(base):
        return "geometry"
    for role, pattern in _ROLES:
        if any(pattern.search(part) for part in base.split("=")):
            return role
    return "channels"


def _assignment_sites(node: ast.Assign) -> list[Site]:
    found = []
    for target in node.targets:
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(node.value, (ast.Tuple, ast.List)) \
                and len(target.elts) == len(node.value.elts):
            for name_node, value_node in zip(target.elts, node.value.elts):
                if isinstance(name_node, ast.Name):
                    found += _value_sites(name_node.id, value_node)
    names = [t.id for t in node.targets if isinstance(t, ast.Name)]
    if names:
        found += _value_sites("=".join(names), node.value)
    return found


def _value_sites(key: str, node: ast.expr, position: int | None = None, arity: int = 0) -> list[Site]:
    value = _fold_int(node)
    if value is not None:
        return [_site(key, value, role_of(key, position, arity), node)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and isinstance(node.left, (ast.Tuple, ast.List)) \
            and _fold_int(node.right) is not None:  # [1024] * 16: the sizes are the elements, 16 is a count
        node = node.left
    if isinstance(node, (ast.Tuple, ast.List)):
        n = len(node.elts)
        return [s for i, elt in enumerate(node.elts) for s in _value_sites(f"{key}[{i}]", elt, i, n)]
    return []


def _fold_int(node: ast.expr) -> int | None:
    """The value of an int constant expression (literals and + - * // % ** only), else None."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, int) and not isinstance(node.value, bool) else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _fold_int(node.operand)
        return None if inner is None else (-inner if isinstance(node.op, ast.USub) else inner)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _fold_int(node.left), _fold_int(node.right)
        if left is None or right is None or (isinstance(node.op, (ast.FloorDiv, ast.Mod)) and right == 0):
            return None
        if isinstance(node.op, ast.Pow) and not 0 <= right <= 64:
            return None
        return _OPERATORS[type(node.op)](left, right)
    return None


def _input_literal_sites(func: ast.FunctionDef) -> list[Site]:
    found = []
    for call in ast.walk(func):
        if not (isinstance(call, ast.Call) and _factory_name(call.func) in _FACTORIES):
            continue
        dims = call.args[0].elts if len(call.args) == 1 and isinstance(call.args[0], (ast.Tuple, ast.List)) else call.args
        for position, dim in enumerate(dims):
            value = _fold_int(dim)
            if value is None:
                continue
            role = "batch" if position == 0 and len(dims) > 1 else \
                "spatial" if position >= _SPATIAL_POSITIONS else "channels"
            found.append(_site(f"get_inputs:{dim.lineno}:{dim.col_offset}", value, role, dim))
    return found


def _factory_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "torch":
        return func.attr
    return None


# Parameter names of the torch.nn layers whose constructor arguments are widths (positional order).
_CONV = ("in_channels", "out_channels", "kernel_size", "stride", "padding")
_NN_PARAMETERS = {
    **{f"Conv{d}d": _CONV for d in (1, 2, 3)}, **{f"ConvTranspose{d}d": _CONV for d in (1, 2, 3)},
    "Linear": ("in_features", "out_features"), "Bilinear": ("in1_features", "in2_features", "out_features"),
    **{f"{kind}Norm{d}d": ("num_features",) for kind in ("Batch", "Instance") for d in (1, 2, 3)},
    "GroupNorm": ("num_groups", "num_channels"), "LayerNorm": ("normalized_shape",),
    **{rnn: ("input_size", "hidden_size", "num_layers") for rnn in ("LSTM", "GRU", "RNN")},
    "MultiheadAttention": ("embed_dim", "num_heads"), "Embedding": ("num_embeddings", "embedding_dim"),
    "TransformerEncoderLayer": ("d_model", "nhead", "dim_feedforward"),
    "TransformerDecoderLayer": ("d_model", "nhead", "dim_feedforward"),
}
_INPUT_FUNCTIONS = ("get_inputs", "get_init_inputs")


def _layer_width_sites(tree: ast.Module) -> list[Site]:
    """Widths passed to layers inside the file's classes and functions (see the module docstring)."""
    callables = _callable_parameters(tree)
    found = []
    for owner, node in _code_owners(tree):
        for name, default in _defaults(node.args):
            site = _site(f"{owner}:{default.lineno}:{default.col_offset}", default.value, role_of(name), default)
            found += [site] if site.scalable else []
        for call in ast.walk(node):
            if not isinstance(call, ast.Call):
                continue
            params = _callee_parameters(call.func, callables)
            if params is None:
                continue
            named = [(params[i], arg) for i, arg in enumerate(call.args) if i < len(params)]
            named += [(kw.arg, kw.value) for kw in call.keywords if kw.arg]
            for name, arg in named:
                for leaf in _int_factors(arg):
                    site = _site(f"{owner}:{leaf.lineno}:{leaf.col_offset}", leaf.value, role_of(name), leaf)
                    if site.scalable:
                        found.append(site)
    return found


def _code_owners(tree: ast.Module):
    """(name, node) of every top-level function and every method of a top-level class."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name not in _INPUT_FUNCTIONS:
            yield node.name, node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    yield f"{node.name}.{item.name}", item


def _defaults(args: ast.arguments) -> list[tuple[str, ast.Constant]]:
    """(parameter, int literal default) of a signature (``def __init__(self, embed_dim=96)``)."""
    positional = args.posonlyargs + args.args
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    return [(a.arg, d) for a, d in pairs if isinstance(d, ast.Constant) and type(d.value) is int]


def _callable_parameters(tree: ast.Module) -> dict[str, tuple[str, ...]]:
    """Parameter names (without self) of the file's functions, classes (their __init__) and methods."""
    found: dict[str, tuple[str, ...]] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            found[node.name] = tuple(a.arg for a in node.args.args)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    params = tuple(a.arg for a in item.args.args[1:])
                    found.setdefault(f"self.{item.name}", params)
                    if item.name == "__init__":
                        found[node.name] = params
    return found


def _callee_parameters(func: ast.expr, callables: dict[str, tuple[str, ...]]) -> tuple[str, ...] | None:
    if isinstance(func, ast.Name):
        return callables.get(func.id)
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        if func.value.id == "self":
            return callables.get(f"self.{func.attr}")
        if func.value.id == "nn":
            return _NN_PARAMETERS.get(func.attr)
    if isinstance(func, ast.Attribute) and ast.unparse(func.value) == "torch.nn":
        return _NN_PARAMETERS.get(func.attr)
    return None


def _int_factors(node: ast.expr) -> list[ast.Constant]:
    """The int literal itself, or the int literal factors of a product (``512 * 7 * 7``)."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return [node]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return _int_factors(node.left) + _int_factors(node.right)
    return []


def _site(key: str, value: int, role: str, node: ast.expr) -> Site:
    return Site(key, value, role, (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset))


def _mark_dead(sites: list[Site]) -> list[Site]:
    """A constant assigned again later is dead (KernelBench's L2/11 assigns height/width twice)."""
    result = []
    for i, site in enumerate(sites):
        names = set(site.key.split("[")[0].split("="))
        later = {n for s in sites[i + 1:] if s.span[0] > site.span[0] for n in s.key.split("[")[0].split("=")}
        dead = not site.key.startswith("get_inputs:") and names <= later
        result.append(Site(site.key, site.value, site.role, site.span, dead) if dead else site)
    return result


def rewrite(source: str, sites: tuple[Site, ...], values: dict[str, int]) -> str:
    """The source with each site whose key is in ``values`` set to its new value."""
    lines = source.encode().splitlines(keepends=True)  # ast column offsets count UTF-8 bytes
    edits = sorted(((s.span, values[s.key]) for s in sites if s.key in values and values[s.key] != s.value),
                   reverse=True)
    for (line, col, end_line, end_col), value in edits:
        start, end = line - 1, end_line - 1
        text = b"".join(lines[start:end + 1])
        suffix_start = len(text) - (len(lines[end]) - end_col)
        lines[start:end + 1] = [text[:col] + str(value).encode() + text[suffix_start:]]
    return b"".join(lines).decode()


def constants_json(sites: tuple[Site, ...], values: dict[str, int] | None = None) -> dict[str, int]:
    """{key: value} of every site (``values`` overriding), for the manifest's shape columns."""
    values = values or {}
    return {s.key: values.get(s.key, s.value) for s in sites}
