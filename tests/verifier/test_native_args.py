"""Native sources read through build helpers: a loader call's arguments bound at each call site of
the helpers that make it (verifier.native_args), for the cpu extraction, the cuda extraction and
the hack gate, which must scan every source a call path can compile."""

from __future__ import annotations

import pytest

from verifier.backends.cuda_sources import CandidateFormatError, extract_inline_extensions
from verifier.gates.hack import static_findings
from verifier.native_sources import SourceExtractionError, extract
from verifier.static_values import resolve_static

HEAD = ('from verifier.cpu_native import load_c\n'
        'SIGS = {"relu": "const float*, float*, int64"}\n'
        'GOOD = "int good;"\n')  # lines 1-3


def test_helper_parameters_bind_to_what_the_call_site_passes():
    src = HEAD + ('def _build(source, signatures=SIGS):\n'   # 4
                  '    return load_c(source, signatures)\n'  # 5
                  'lib = _build(GOOD)\n')                    # 6
    (native,) = extract(src)
    assert (native.code, native.line, native.via, native.where) == ("int good;", 5, (6,), "line 5 via line 6")


def test_chains_of_helpers_fstrings_keywords_and_locals():
    src = HEAD + ('N = 4\n'
                  'def _inner(src, sigs=SIGS):\n'
                  '    return load_c(src, sigs)\n'
                  'def _build(body, *, unroll=2):\n'
                  '    text = f"#define U {unroll}\\n#define N {N:>3}\\n" + body\n'
                  '    return _inner(text)\n'
                  'lib = _build(GOOD, unroll=8)\n')
    (native,) = extract(src)
    assert native.code == "#define U 8\n#define N   4\nint good;" and native.via == (9, 10)


def test_each_call_path_is_one_source_and_identical_builds_are_read_once():
    src = HEAD + ('def _build(source):\n'
                  '    return load_c(source, SIGS)\n'
                  'a = _build(GOOD)\n'
                  'b = _build("int other;")\n'
                  'c = _build(GOOD)\n')
    assert [(n.code, n.via) for n in extract(src)] == [("int good;", (6,)), ("int other;", (7,))]


def test_method_helpers_bind_self_and_static_helpers_do_not():
    src = HEAD + ('class Builder:\n'
                  '    def build(self, source):\n'
                  '        return load_c(source, SIGS)\n'
                  '    @staticmethod\n'
                  '    def build_static(source):\n'
                  '        return load_c(source, SIGS)\n'
                  'class ModelNew:\n'
                  '    def __init__(self):\n'
                  '        self.lib = Builder().build(GOOD)\n'
                  '        self.other = Builder.build_static("int other;")\n')
    assert {n.code for n in extract(src)} == {"int good;", "int other;"}


def test_a_helper_never_called_builds_nothing_and_a_direct_literal_call_still_builds():
    src = HEAD + ('def _unused(source):\n'
                  '    return load_c(source, SIGS)\n'
                  'def _fixed():\n'
                  '    return load_c(GOOD, SIGS)\n')
    assert [n.code for n in extract(src)] == ["int good;"]


@pytest.mark.parametrize("body, reason", [
    ('def _build(source):\n    return load_c(source, SIGS)\nlib = _build(GOOD.replace("good", "bad"))\n',
     "parameter source of _build(), called at line 6: line 6: `GOOD.replace('good', 'bad')` is not a static "
     "constant (a call, computed at run time)"),
    ('def _build(source):\n    return load_c(source, SIGS)\nmake = _build\nlib = make(GOOD)\n',
     "_build() is used as a value at line 6 (`make = _build`)"),
    ('class ModelNew:\n    def __init__(self, n):\n        self.lib = load_c(f"int a[{n}];", SIGS)\n',
     "parameter n of __init__(): __init__() is called by the harness"),
    ('def _build(source):\n    text = source\n    text = text + ";"\n    return load_c(text, SIGS)\nlib = _build(GOOD)\n',
     "text is bound more than once in _build()"),
    ('def _build(*parts):\n    return load_c(parts[0], SIGS)\nlib = _build(GOOD)\n', "an attribute or item"),
    ('def _build(source):\n    return load_c(source, SIGS)\nARGS = [GOOD]\nlib = _build(*ARGS)\n',
     "passes source through *args/**kwargs"),
    ('def _build(source):\n    return load_c(source, SIGS)\nfor s in (GOOD,):\n    lib = _build(s)\n',
     "s is a loop or unpacking target"),
])
def test_what_stays_dynamic_is_refused_with_the_line_and_the_reason(body, reason):
    with pytest.raises(SourceExtractionError) as info:
        extract(HEAD + body)
    message = str(info.value)
    assert message.startswith("line ") and "load_c: source must be" in message and "\n" not in message
    assert reason in message, message


def test_recursion_is_not_followed_and_deep_chains_are_refused():
    recursive = HEAD + ('def _build(source, n):\n'
                        '    return _build(source + ";", n - 1) if n else load_c(source, SIGS)\n'
                        'lib = _build(GOOD, 2)\n')
    assert [n.code for n in extract(recursive)] == ["int good;"]  # the loader refuses what recursion builds
    chain = "".join(f"def h{i}(s):\n    return h{i + 1}(s)\n" for i in range(10))
    deep = HEAD + chain + "def h10(s):\n    return load_c(s, SIGS)\nlib = h0(GOOD)\n"
    with pytest.raises(SourceExtractionError, match="more than 8 deep"):
        extract(deep)


def test_load_inline_through_a_helper_with_positional_arguments_in_torchs_order():
    src = ('from torch.utils.cpp_extension import load_inline\n'
           'CPP = "int f();"\n'
           'def _build(name, cpp, fns, **flags):\n'
           '    return load_inline(name, cpp, None, None, fns, **flags)\n'
           'ext = _build("e", CPP, ["f"])\n')
    with pytest.raises(SourceExtractionError, match="collects"):
        extract(src)  # **flags is not a static dict
    (native,) = extract(src.replace(", **flags", "").replace("fns, **flags)", "fns)"))
    assert dict(native.inline_args) == {"name": "e", "cpp_sources": "int f();", "cuda_sources": None,
                                        "sycl_sources": None, "functions": ["f"]}


def test_cuda_extensions_are_read_through_build_helpers():
    src = ('from torch.utils.cpp_extension import load_inline\n'
           'KERNEL = "__global__ void k() {}"\n'
           'def _build(name: str, cuda_src: str, functions: list[str]):\n'
           '    return load_inline(name=name, cpp_sources="void f();", cuda_sources=cuda_src, functions=functions)\n'
           'a = _build("ext_a", KERNEL, ["f"])\n'
           'b = _build(f"ext_{2}", KERNEL + "// b", ["f"])\n')
    exts = extract_inline_extensions(src)
    assert [(e.name, e.cuda_sources, e.functions) for e in exts] == [
        ("ext_a", "__global__ void k() {}", ("f",)), ("ext_2", "__global__ void k() {}// b", ("f",))]
    with pytest.raises(CandidateFormatError, match=r"line 4: name must be a string literal.*`input\(\)`"):
        extract_inline_extensions(src.replace('"ext_a"', "input()"))


def test_the_hack_gate_scans_the_source_of_every_call_path():
    src = HEAD + ('FORKING = "extern \\"C\\" void relu() { asm(\\"nop\\"); }"\n'  # 4: a text-tier refusal
                  'def _build(source):\n'
                  '    return load_c(source, SIGS)\n'
                  'lib = _build(GOOD)\n'
                  'class ModelNew:\n'
                  '    def __init__(self):\n'
                  '        self.lib = _build(FORKING)\n')
    assert [n.via for n in extract(src)] == [(7,), (10,)]
    assert any("asm" in f.message for f in static_findings(src, "float32"))
    assert not any("asm" in f.message for f in static_findings(src.replace("(FORKING)", "(GOOD)"), "float32"))


def test_module_constants_still_resolve_alone_for_other_readers():
    import ast

    tree = ast.parse('A = "x"\nB = f"{A}-{1 + 0}"\n')
    with pytest.raises(SourceExtractionError, match=r"line 2: `1 \+ 0` is not a static constant \(only strings"):
        resolve_static(tree.body[1].value, {"A": tree.body[0].value})
    assert resolve_static(ast.parse('f"{A!r}:{3:03d}"').body[0].value, {"A": tree.body[0].value}) == "'x':003"
