"""A recorded ``load_inline`` call is rebuilt exactly as torch's own ``load_inline`` builds it (issue 36,
class 7): the ``main.cpp`` (and ``cuda.cu``) the confined builder writes (verifier.sandbox.inline_builder,
from the job the monitor made of the recorded arguments: verifier.backends.cpu_builds) are compared byte for
byte with what torch's ``load_inline`` writes for the same call, for every ``load_inline`` call of the honest
corpus and for the forms no fixture uses (no ``functions=``, a name, a dict of docstrings, a list of sources,
``no_implicit_headers``, no error handling). torch's own function writes its sources and is stopped before
it compiles (its ``_jit_compile``): nothing is built here.
"""

from __future__ import annotations

import json
import types
from pathlib import Path

import pytest
from torch.utils import cpp_extension
from verifier_taskutil import FIXTURES

from verifier.backends.base import BuildRejected
from verifier.backends.cpu_builds import load_inline_job
from verifier.sandbox.inline_builder import cuda_source, module_source
from verifier.sandbox.loaders import inline_arguments

TORCH_LOAD_INLINE = cpp_extension.load_inline  # torch's own (the runner replaces it only in its own process)


class _Stop(Exception):
    pass


def torch_written(tmp: Path, args: tuple, kwargs: dict) -> dict[str, str]:
    """The files torch's load_inline writes for this call (stopped before it compiles)."""
    kwargs = {**kwargs, "build_directory": str(tmp)}

    def stop(*_a, **_k):
        raise _Stop

    real, cpp_extension._jit_compile = cpp_extension._jit_compile, stop
    try:
        TORCH_LOAD_INLINE(*args, **kwargs)
    except _Stop:
        pass
    finally:
        cpp_extension._jit_compile = real
    return {p.name: p.read_text() for p in tmp.iterdir() if p.name in ("main.cpp", "cuda.cu")}


def ours(args: tuple, kwargs: dict) -> dict[str, str]:
    """The files the builder writes for the job the monitor makes of the recorded call."""
    named = inline_arguments(args, kwargs)
    implicit = not named.get("no_implicit_headers", False)
    files = {}
    if named.get("cuda_sources"):  # the cuda backend's GPU build writes the same two files (cuda_build.gpu_job)
        cuda = named["cuda_sources"]
        files["cuda.cu"] = cuda_source("\n".join(cuda) if isinstance(cuda, list) else cuda, implicit)
        named = {k: v for k, v in named.items() if k not in ("cuda_sources", "with_cuda")}
    job = json.loads(dict(load_inline_job(named).files)["job.json"])
    files["main.cpp"] = module_source(job["cpp_sources"], job["functions"], job["with_pytorch_error_handling"],
                                      not job["no_implicit_headers"])
    return files


def recorded_calls() -> list[tuple[str, tuple, dict]]:
    """Every load_inline call the honest fixtures make at import, as (fixture, args, kwargs)."""
    calls = []
    for path in sorted(FIXTURES.glob("honest_*.py")):
        text = path.read_text()
        if "load_inline" not in text:
            continue

        def record(*args, _name=path.stem, **kwargs):
            calls.append((_name, args, kwargs))
            return types.SimpleNamespace()

        cpp_extension.load_inline = record
        try:
            exec(compile(text, str(path), "exec"), {"__name__": "candidate"})
        except (AttributeError, TypeError):
            pass  # a fixture that uses its module at import: its call is recorded already
        finally:
            cpp_extension.load_inline = TORCH_LOAD_INLINE
    return calls


CALLS = recorded_calls()
SOURCE = "torch::Tensor twice(torch::Tensor x) { return x; }"
FORMS = {
    "no_functions_own_module": ((), dict(name="own", cpp_sources=SOURCE + "\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) "
                                                                           "{ m.def(\"twice\", &twice); }")),
    "functions_as_a_name": ((), dict(name="one", cpp_sources=SOURCE, functions="twice")),
    "functions_with_docstrings": ((), dict(name="doc", cpp_sources=SOURCE, functions={"twice": "Twice x."})),
    "sources_as_a_list": ((), dict(name="parts", cpp_sources=["#include <cmath>", SOURCE], functions=["twice"])),
    "no_implicit_headers": ((), dict(name="bare", cpp_sources="#include <torch/extension.h>\n" + SOURCE,
                                     functions=["twice"], no_implicit_headers=True)),
    "no_error_handling": ((), dict(name="plain", cpp_sources=SOURCE, functions=["twice"],
                                   with_pytorch_error_handling=False)),
    "positional": (("pos", SOURCE), dict(functions=["twice"])),
    "empty_functions": ((), dict(name="empty", cpp_sources=SOURCE, functions=[])),
}


def test_the_honest_corpus_has_load_inline_calls_with_and_without_cuda():
    assert len(CALLS) >= 30, len(CALLS)
    assert any(k.get("cuda_sources") for _, _, k in CALLS) and any(not k.get("cuda_sources") for _, _, k in CALLS)
    assert any("functions" not in k for _, _, k in CALLS), "the corpus has a call without functions= (class 7)"


@pytest.mark.parametrize("call", CALLS, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(CALLS)])
def test_every_honest_load_inline_call_is_written_as_torch_writes_it(call, tmp_path):
    _name, args, kwargs = call
    assert ours(args, kwargs) == torch_written(tmp_path, args, kwargs)


@pytest.mark.parametrize("form", sorted(FORMS))
def test_every_form_of_the_call_is_written_as_torch_writes_it(form, tmp_path):
    args, kwargs = FORMS[form]
    assert ours(args, kwargs) == torch_written(tmp_path, args, kwargs)


def test_a_docstring_that_would_end_its_string_is_refused():
    """torch pastes a docstring into the generated C++, after the lines the checks read: a quote in it would
    add code no check sees."""
    bad = {"twice": 'x"); } static int evil = system("id"); void f() { ("'}
    with pytest.raises(BuildRejected, match="docstring"):
        load_inline_job(inline_arguments((), dict(name="evil", cpp_sources=SOURCE, functions=bad)))
