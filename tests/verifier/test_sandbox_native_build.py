"""The verifier's native helpers are built once per machine (verifier.sandbox.native_build): a target
already built is used as it is, a failed build says why in one line naming the library and leaves
nothing behind."""

from __future__ import annotations

import shutil

import pytest

from verifier.sandbox import native_build

CC = shutil.which("cc") or shutil.which("gcc")
pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler on PATH")


def test_a_library_is_built_once_then_read_from_its_target(tmp_path):
    source = tmp_path / "one.c"
    source.write_text("int one(void) { return 1; }\n")
    target = tmp_path / "cache" / "key" / "one.so"
    argv = lambda out: [CC, "-O2", "-fPIC", "-shared", str(source), "-o", str(out)]  # noqa: E731
    assert native_build.build_once(target, argv, "the one library", 60.0) == (target, "")
    built = target.stat().st_mtime_ns
    source.write_text("this is not C\n")  # the key, not the source, decides: the built target is reused
    assert native_build.build_once(target, argv, "the one library", 60.0) == (target, "")
    assert target.stat().st_mtime_ns == built


def test_a_failed_build_names_the_library_and_leaves_nothing(tmp_path):
    source = tmp_path / "bad.c"
    source.write_text("int broken(void) { return }\n")
    target = tmp_path / "cache" / "key" / "bad.so"
    path, why = native_build.build_once(target, lambda out: [CC, "-shared", str(source), "-o", str(out)],
                                        "the bad library", 60.0)
    assert path is None and why.startswith("building the bad library failed: ") and "\n" not in why
    assert list(target.parent.iterdir()) == []
    path, why = native_build.build_once(target, lambda out: ["/nonexistent/cc"], "the bad library", 60.0)
    assert path is None and why.startswith("building the bad library failed: ")
