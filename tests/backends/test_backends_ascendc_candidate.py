"""Ascend C container format: path validation, required files, the scaffold's own example."""

from __future__ import annotations

import pytest

from verifier.backends.ascendc.candidate import (AscendCFormatError, parse_candidate, required_files,
                                                 validate_relative_path)
from cann_stubs import candidate, scaffold_example


OK_FILES = '{"kernel/k.cpp": "// k", "binding/b.cpp": "// b"}'


def test_scaffold_example_is_a_valid_direct_launch_candidate():
    parsed = parse_candidate(scaffold_example())
    assert parsed.format == "direct-launch" and parsed.op_pascal == "ReluCustom"
    assert parsed.paths() == ("binding/relu_custom.cpp", "kernel/relu_custom.cpp")
    assert "TPipe" in dict(parsed.files)["kernel/relu_custom.cpp"]


@pytest.mark.parametrize("path, why", [
    ("/etc/passwd.h", "absolute"), ("~/x.cpp", "absolute"), ("C:/x.cpp", "absolute"),
    ("kernel/../../x.cpp", "'..'"), ("..", "'..'"), ("kernel\\x.cpp", "absolute"),
    ("kernel//x.cpp", "bad path component"), ("./x.cpp", "bad path component"),
    ("kernel/x.py", "file type"), ("kernel/$(rm).cpp", "bad path component"), ("", "non-empty"),
])
def test_unsafe_paths_are_rejected_with_the_reason(path, why):
    with pytest.raises(AscendCFormatError, match=why.replace("(", r"\(").replace(")", r"\)")):
        validate_relative_path(path)


def test_safe_paths_pass():
    assert validate_relative_path("op_host/add_custom_tiling.h") == "op_host/add_custom_tiling.h"


def test_a_bad_path_inside_the_container_is_reported():
    with pytest.raises(AscendCFormatError, match=r"'\.\.' is not allowed"):
        parse_candidate(candidate('{"kernel/../k.cpp": "x", "binding/b.cpp": "y"}'))


@pytest.mark.parametrize("source, message", [
    (candidate(OK_FILES, fmt="graph"), "ASCENDC_FORMAT"),
    (candidate(OK_FILES, op="ReluCustom"), "ASCENDC_OP"),
    (candidate('{"kernel/k.cpp": "// k"}'), "binding/<name>.cpp"),
    (candidate("{}"), "non-empty dict"),
    (candidate('{"kernel/k.cpp": 3, "binding/b.cpp": "y"}'), "content must be a string"),
    (candidate("make_files()"), "ASCENDC_FILES: line"),
    ("ASCENDC_FORMAT = 'direct-launch'\n", "no class ModelNew"),
    ("class ModelNew(:\n", "syntax error"),
])
def test_malformed_containers_name_the_field(source, message):
    with pytest.raises(AscendCFormatError, match=message.replace("(", r"\(")):
        parse_candidate(source)


def test_operator_project_requires_its_five_files():
    need = required_files("operator-project", "add_custom")
    assert need == ("add_custom.json", "op_host/add_custom_tiling.h", "op_host/add_custom.cpp",
                    "op_kernel/add_custom.cpp", "CppExtension/csrc/op.cpp")
    partial = '{"add_custom.json": "{}", "op_kernel/add_custom.cpp": "// k"}'
    with pytest.raises(AscendCFormatError, match="op_host/add_custom_tiling.h"):
        parse_candidate(candidate(partial, fmt="operator-project", op="add_custom"))


def test_files_may_be_given_through_module_constants():
    source = ('K = "// kernel"\nB = "// " + "binding"\n'
              + candidate('{"kernel/k.cpp": K, "binding/b.cpp": B}'))
    assert dict(parse_candidate(source).files) == {"kernel/k.cpp": "// kernel", "binding/b.cpp": "// binding"}
