"""Issue 23, class 6: ``#include </some/path>`` as an oracle for which paths exist.

The compiler runs on the candidate's source, so an absolute include names any path: a file the
sandbox hides answers "Permission denied", a missing one "No such file or directory", and the
compile gate's feedback hands the difference back. Two pairs of candidates, each pair the same but
for the path (an existing hidden file, and a missing one beside it), static checks off:

* ``#include </path>``: the two verdicts must read the same once the path itself is masked;
* ``#if __has_include(</path>)`` choosing between a right and a wrong kernel (the same question,
  answered through the verdict instead of the diagnostics): the two must fail or pass alike.
"""

from __future__ import annotations

import re

import pytest
from verifier_taskutil import fixture_task

from verifier.api import verify
from verifier.gates.hack_native import NATIVE_CHECKS
from verifier.gates.hack_python import CHECKS
from verifier.sandbox import landlock
from verifier.settings import VerifySettings

pytestmark = pytest.mark.skipif(not landlock.abi_version()[0], reason="a path is hidden only where Landlock works")
ALL_STATIC = tuple(CHECKS) + tuple(NATIVE_CHECKS) + ("c_undefined_symbols",)
INCLUDE = '''import torch
import torch.nn as nn
from verifier.cpu_native import load_c

SOURCE = r"""
{directive}
extern "C" void relu(const float* x, float* y, long n) {{
    for (long i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}}
"""

lib = load_c(SOURCE, {{"relu": "const float*, float*, int64"}})


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.relu(x, y, x.numel())
        return y
'''
HAS_INCLUDE = '''#if __has_include(<{path}>)
#define RELU(v) ((v) > 0.0f ? (v) : 0.0f)
#else
#define RELU(v) (v)
#endif'''


def _masked(text: str, path: str) -> str:
    """The verdict's text with the path, its underline and timings masked (they differ legitimately)."""
    text = text.replace(path, "<PATH>")
    text = re.sub(r"\^~+", "^~", text)  # the caret's underline is as long as the path
    return re.sub(r"\d+(\.\d+)?\s*(ms|s)\b", "<T>", text)


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    hidden = tmp_path_factory.mktemp("z23-oracle")  # not in any sandbox rule: hidden from the compiler
    (hidden / "present.h").write_text("int z23_present;\n")
    return str(hidden / "present.h"), str(hidden / "absent.h")


def _verify(source: str, cache):
    settings = VerifySettings.for_tests(cache, seed=41, disabled_checks=ALL_STATIC)
    return verify(fixture_task("relu"), source, "cpu", settings)


def test_an_absolute_include_does_not_tell_a_hidden_file_from_a_missing_one(paths, verify_cache):
    present, absent = paths
    verdicts = [_verify(INCLUDE.format(directive=f"#include <{p}>"), verify_cache) for p in (present, absent)]
    assert all(not v.infrastructure_error for v in verdicts), [v.infrastructure_error for v in verdicts]
    assert not verdicts[0].passed and not verdicts[1].passed
    texts = [_masked(v.feedback, p) for v, p in zip(verdicts, (present, absent))]
    assert texts[0] == texts[1], f"the verdicts differ:\n--- hidden file:\n{texts[0]}\n--- missing file:\n{texts[1]}"


def test_has_include_does_not_tell_a_hidden_file_from_a_missing_one(paths, verify_cache):
    present, absent = paths
    sources = [INCLUDE.format(directive=HAS_INCLUDE.format(path=p)).replace(
        "x[i] > 0.0f ? x[i] : 0.0f", "RELU(x[i])") for p in (present, absent)]
    verdicts = [_verify(s, verify_cache) for s in sources]
    outcomes = [(v.passed, v.failed_gate) for v in verdicts]
    assert outcomes[0] == outcomes[1], (f"__has_include answered through the verdict: hidden file -> {outcomes[0]}, "
                                        f"missing file -> {outcomes[1]}")
