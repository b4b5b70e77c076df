"""The verifier's native helpers are built once per machine (verifier.sandbox.native_build): a target
already built is used as it is, a failed build says why in one line naming the library and leaves
nothing behind."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from verifier.sandbox import native_build

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "kernels"

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


def test_two_builders_of_one_key_at_once_compile_it_once(tmp_path):
    """Two verifications starting together (a campaign's parallel tasks): the second waits for the first's
    compile and reads its library (without the key's lock both compiled)."""
    from concurrent.futures import ThreadPoolExecutor

    source = tmp_path / "slow.c"
    source.write_text("int slow(void) { return 2; }\n")
    target = tmp_path / "cache" / "key" / "slow.so"
    compiled = []

    def argv(out):
        compiled.append(out)
        return ["sh", "-c", f'sleep 0.5 && exec "$0" -fPIC -shared {source} -o {out}', CC]

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda _: native_build.build_once(target, argv, "the slow library", 60.0), range(2)))
    assert results == [(target, ""), (target, "")] and len(compiled) == 1


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



def test_the_helpers_live_in_the_users_cache_whichever_verifier_cache_a_verification_names(tmp_path, monkeypatch):
    """One build per machine: a test run's or a user's many verifier caches share the observer and the
    shim; where the user's cache cannot be written, the verifier cache given is used."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    root = native_build.machine_root(tmp_path / "verifier-a")
    assert root == tmp_path / "xdg" / "evokernel" / "native" and root.is_dir()
    assert native_build.machine_root(tmp_path / "verifier-b") == root
    (tmp_path / "file").write_text("not a directory\n")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))
    assert native_build.machine_root(tmp_path / "verifier-a") == tmp_path / "verifier-a"


def test_a_verification_takes_the_observer_from_the_users_cache_not_its_own(tmp_path):
    """Two verifier caches, one observer: the one built in the user's cache (this run's, shared by the suite)."""
    from verifier_taskutil import fixture_task

    from verifier.prepare import Prepared, prepare
    from verifier.settings import VerifySettings

    task = fixture_task("relu")
    source = (FIXTURES / "honest_cpu_avx2_relu.py").read_text()
    observers = set()
    for name in ("a", "b"):
        prepared = prepare(task, source, "cpu", VerifySettings.for_tests(tmp_path / name, seed=1))
        assert isinstance(prepared, Prepared), prepared
        observers.add(prepared.session.observer)
        assert not (tmp_path / name / "observer").exists()
    (observer,) = observers
    if not observer:
        pytest.skip("the observer cannot be built here (the verification warns and observes in Python)")
    assert Path(observer).is_relative_to(native_build.machine_root(tmp_path))


def test_a_library_compiled_and_linked_apart_is_linked_from_its_object_and_a_failed_link_says_so(tmp_path):
    source = tmp_path / "two.c"
    source.write_text("int two(void) { return 2; }\n")
    target = tmp_path / "cache" / "key" / "two.so"
    compile_ = lambda obj: [CC, "-fPIC", "-c", str(source), "-o", str(obj)]  # noqa: E731
    linked = []

    def link(obj, out):
        linked.append(obj.suffix)
        return [CC, "-shared", str(obj), "-o", str(out)]

    assert native_build.build_once(target, compile_, "the two library", 60.0, link_for=link) == (target, "")
    assert linked == [".o"] and sorted(p.name for p in target.parent.iterdir()) == ["two.so"]
    bad = tmp_path / "cache" / "other" / "two.so"
    path, why = native_build.build_once(bad, compile_, "the two library", 60.0,
                                        link_for=lambda obj, out: [CC, "-shared", str(obj), "-lnonexistent_lib_x",
                                                                   "-o", str(out)])
    assert path is None and why.startswith("building the two library failed: ") and list(bad.parent.iterdir()) == []
