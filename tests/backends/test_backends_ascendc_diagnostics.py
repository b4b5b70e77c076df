"""Parsing CANN build output into feedback."""

from __future__ import annotations

from verifier.backends.ascendc.diagnostics import parse_diagnostics, stage_feedback
from verifier.backends.toolrun import ToolRun

BISHENG_OUT = """/tmp/b/ascendc-1/kernel/add.cpp:12:18: error: no member named 'Softmax' in namespace 'AscendC'
        AscendC::Softmax(y, x, n);
        ~~~~~~~~~^
/tmp/b/ascendc-1/kernel/add.cpp:3:1: warning: unused variable 'q'
CMake Error at CMakeLists.txt:20 (add_library):
/usr/bin/ld: add.o: in function `f': undefined reference to `add_custom_launch'
[ERROR] msopgen: input json is invalid
"""


def test_each_kind_of_line_is_parsed():
    found = parse_diagnostics(BISHENG_OUT, ("/tmp/b/ascendc-1",))
    assert [d.severity for d in found] == ["error", "warning", "error", "linker", "tool"]
    assert found[0].render() == "kernel/add.cpp:12:18: error: no member named 'Softmax' in namespace 'AscendC'"
    assert found[2].file == "CMakeLists.txt" and found[2].line == 20
    assert found[3].message == "undefined reference to 'add_custom_launch'"
    assert found[4].message == "msopgen: input json is invalid"


def test_stage_feedback_drops_warnings_strips_paths_and_adds_hints():
    run = ToolRun(("bisheng",), "/tmp/b", 1, "", BISHENG_OUT, 0.1)
    text = stage_feedback("kernel", run, ("/tmp/b/ascendc-1",))
    assert text.startswith("ascendc kernel failed (exit 1):")
    assert "warning" not in text and "/tmp/b" not in text
    assert "hint: the API does not exist in AscendC" in text and "hint: a declared function" in text


def test_unparsed_output_falls_back_to_the_tail():
    run = ToolRun(("bash", "build.sh"), "/x", 2, "step 1\nstep 2\nsegfault in opc\n", "", 0.1)
    assert "segfault in opc" in stage_feedback("build.sh", run)
