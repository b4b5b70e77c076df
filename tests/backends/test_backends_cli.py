"""`evokernel backends` lists every backend with its availability and per-gate capabilities."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from cli.main import app


def test_backends_lists_all_four_with_reasons():
    result = CliRunner().invoke(app, ["backends"])
    assert result.exit_code == 0, result.output
    lines = {line.split(":")[0]: line for line in result.output.splitlines()}
    assert set(lines) >= {"cpu", "cuda", "triton", "ascendc"}
    for name in ("cuda", "triton", "ascendc"):
        line = lines[name]
        assert line.startswith(f"{name}: available") or line.startswith(f"{name}: unavailable: "), line
        assert "compile " in line and "correctness " in line and "latency " in line, line


def test_backends_json_has_gates():
    result = CliRunner().invoke(app, ["backends", "--json"])
    assert result.exit_code == 0, result.output
    rows = {row["backend"]: row for row in json.loads(result.output)}
    assert set(rows["ascendc"]["gates"]) == {"compile", "correctness", "latency"}
    if not rows["ascendc"]["available"]:
        assert rows["ascendc"]["reason"]


def test_prechecks_reject_malformed_candidates_before_any_toolchain():
    from verifier.backends import get_backend

    # cuda: nothing to read statically (its load_inline call is recorded when the runner imports it; a
    # candidate without one fails the compile gate with "no native code")
    assert get_backend("cuda").precheck("class ModelNew: pass\n") == ""
    assert get_backend("ascendc").precheck("class ModelNew: pass\n").startswith("ascendc candidate format: ASCENDC_")
    assert "no @triton.jit kernel" in get_backend("triton").precheck("class ModelNew: pass\n")
    assert get_backend("triton").precheck("import triton\n@triton.jit\ndef k(x_ptr):\n    pass\n") == ""


def test_ascendc_candidate_files_are_read_statically():
    from cann_stubs import scaffold_example

    from verifier.backends.ascendc.candidate import parse_candidate

    files = dict(parse_candidate(scaffold_example()).files)
    assert set(files) == {"kernel/relu_custom.cpp", "binding/relu_custom.cpp"}
