"""Verifications back to back in one process (what a campaign does): a session that ends early must
leave no reader thread behind, or it could read the next session's pipe under a reused fd number."""

from __future__ import annotations

import threading
from pathlib import Path

from verifier_taskutil import make_task

from verifier.api import verify
from verifier.settings import VerifySettings

BACKENDS = Path(__file__).resolve().parents[2] / "verifier" / "backends"
EXAMPLE_TASK = (BACKENDS / "cpu_example_task.txt").read_text()
EXAMPLE_CANDIDATE = (BACKENDS / "cpu_example_candidate.txt").read_text()
LINK_ERROR = EXAMPLE_CANDIDATE.replace('load_c(SOURCE, {"linear_relu"', 'load_c(SOURCE, {"no_such_symbol"')


def _readers() -> list[threading.Thread]:
    """The reference readers (verifier.monitor.reference.Reference._collect) still running, but for the one
    of a worker primed for the next verification (verifier.monitor.pool: it reads that worker's own channel)."""
    from verifier.monitor.pool import POOL

    with POOL._lock:
        primed = {p.reference._thread for p in POOL._primed.values()}
    return [t for t in threading.enumerate() if t.name.endswith("(_collect)") and t.is_alive() and t not in primed]


def test_the_reader_check_sees_a_reader():
    """_readers() finds a reader thread by its name (it once looked for a name no thread had any more)."""
    from verifier.monitor.reference import Reference

    stop = threading.Event()
    reader = threading.Thread(target=Reference._collect, args=(None, None), daemon=True)
    reader.run = stop.wait  # the name is the real one's; the body only waits
    reader.start()
    try:
        assert _readers() == [reader]
    finally:
        stop.set()
        reader.join(5)


def test_early_failure_leaves_no_reader_and_the_next_verification_is_intact(tmp_path, verify_cache):
    task = make_task(EXAMPLE_TASK, "example/linear_relu", tmp_path)
    settings = VerifySettings.for_tests(verify_cache)
    for _ in range(2):
        failed = verify(task, LINK_ERROR, "cpu", settings)
        assert failed.failed_gate == "compile", failed.feedback
        assert not _readers(), "the reference reader outlived its session"
        passed = verify(task, EXAMPLE_CANDIDATE, "cpu", settings)
        assert passed.passed, passed.feedback
        assert not _readers()


def _held() -> dict:
    """{task key: pid} of the reference workers held for the next verification of their task, primed or not."""
    from verifier.monitor.pool import POOL

    with POOL._lock:
        return {**{key[-1]: site.process.pid() for key, site in POOL._used},
                **{key[-1]: primed.site.process.pid() for key, primed in POOL._primed.items()}}


def test_the_next_verification_of_the_same_task_reuses_its_reference_worker_with_the_same_outcome(tmp_path,
                                                                                                  verify_cache):
    """A reference worker never sees candidate code: released cleanly, it serves the next verification of
    the same task (no start-up), computing the same references from the same seed; another task gets a
    worker of its own, and a failed build still releases the worker (it finished its references)."""
    from verifier.monitor.reference import task_key

    task = make_task(EXAMPLE_TASK, "example/linear_relu", tmp_path)
    other = make_task(EXAMPLE_TASK.replace("get_inputs():", "get_inputs():  # another task"), "example/other", tmp_path)
    settings = VerifySettings.for_tests(verify_cache, seed=11)
    key, other_key = task_key(task.source, task.dtype), task_key(other.source, other.dtype)
    first = verify(task, EXAMPLE_CANDIDATE, "cpu", settings)
    assert first.passed, first.feedback
    worker = _held()[key]
    again = verify(task, EXAMPLE_CANDIDATE, "cpu", settings)
    assert again.passed, again.feedback
    assert _held()[key] == worker  # taken, used and held again
    assert again.gates[2].detail == first.gates[2].detail  # the float64 check's worst ratio too: same references
    assert verify(other, EXAMPLE_CANDIDATE, "cpu", settings).passed
    held = _held()
    assert held[key] == worker and held[other_key] != worker
    failed = verify(task, LINK_ERROR, "cpu", settings)
    assert failed.failed_gate == "compile", failed.feedback
    assert not _readers()


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def test_spares_still_booting_stay_stopped_while_a_latency_phase_times_and_boot_after_it():
    """No start-up shares the cores with a timed window, and none is waited for: the latency phase times
    inside Pool.paused, which stops the spares still booting and continues them after. Blocks may
    overlap (verifications in threads): a spare runs again when the last one ends, or at once when a
    verification takes it."""
    import time

    from verifier.monitor.pool import Pool
    from verifier.monitor.sites import RunnerSpec

    s = VerifySettings()
    spec = RunnerSpec("cpu", 1, s.memory_limit_mb, s.file_size_limit_mb)
    pool = Pool()
    try:
        pool.replenish(spec, 1, s.memory_limit_mb, False, 1)
        with pool._lock:
            spares = pool._held()
        with pool.paused() as stopped:
            assert stopped == 2
            with pool.paused() as again:
                assert again == 2
            assert {_state(site.process.pid()) for site in spares} <= {"T", "t"}  # the outer block still holds them
            taken = pool.runner(spec, 1)
            assert taken in spares and _state(taken.process.pid()) not in ("T", "t")
            assert {_state(site.process.pid()) for site in spares if site is not taken} <= {"T", "t"}
        for site in spares:  # continued: each boots to Ready
            assert site.wait_ready(time.monotonic() + 120)
        with pool.paused() as stopped:
            assert stopped == 0  # booted spares (their Ready read) are left alone
        taken.close()
    finally:
        pool.close()


def test_a_spare_taken_while_a_latency_phase_stops_the_others_is_never_left_stopped(monkeypatch):
    """Two verifications in threads: one enters its latency phase and stops the spares still booting while
    the other takes one of them. Stopped after the take, the spare stayed stopped under the verification
    that took it (no block held it any more), whose reference worker then timed out drawing inputs (240 s,
    a CI run under load 10). A take now waits for the stop in progress and continues what it takes."""
    import threading
    import time

    from verifier.monitor import pool as pool_module
    from verifier.monitor.pool import Pool
    from verifier.monitor.sites import RunnerSpec

    s = VerifySettings()
    spec = RunnerSpec("cpu", 1, s.memory_limit_mb, s.file_size_limit_mb)
    pool = Pool()
    real_hold, taken, racer = pool_module.hold, [], []

    def hold_after_a_take(pid: int) -> int:
        if not racer:  # the other verification takes a spare between the registration and the stops
            racer.append(threading.Thread(target=lambda: taken.append(pool.runner(spec, 1))))
            racer[0].start()
            racer[0].join(0.5)  # it waits for the pool's lock while a stop is in progress
        return real_hold(pid)

    try:
        pool.replenish(spec, 1, s.memory_limit_mb, False, 1)
        monkeypatch.setattr(pool_module, "hold", hold_after_a_take)
        with pool.paused() as stopped:
            assert stopped == 2
            racer[0].join(30)
            assert taken and _state(taken[0].process.pid()) not in ("T", "t")  # continued at once
        assert _state(taken[0].process.pid()) not in ("T", "t")
        assert taken[0].wait_ready(time.monotonic() + 120)
        taken[0].close()
    finally:
        pool.close()


def test_a_task_verified_again_and_again_gets_a_worker_primed_with_its_next_seed(tmp_path, verify_cache):
    """From the second verification of a task on, the worker it releases is handed the next verification's
    seeds at once and computes its trials meanwhile: the third verification takes it, with the same
    references as an unprimed one under the same fixed seed, and without a fixed seed it runs under the
    seed the worker was primed with. A verification that asks for more trials closes the primed worker."""
    from dataclasses import replace

    from verifier.monitor.pool import POOL
    from verifier.monitor.reference import task_key

    source = EXAMPLE_TASK.replace("get_inputs():", "get_inputs():  # a task no other test verified")
    task = make_task(source, "example/linear_relu_primed", tmp_path)
    key = task_key(task.source, task.dtype)
    fixed = VerifySettings.for_tests(verify_cache, seed=23)
    verdicts = [verify(task, EXAMPLE_CANDIDATE, "cpu", fixed) for _ in range(3)]
    assert all(v.passed for v in verdicts), [v.feedback for v in verdicts]
    assert [v.facts.reference_primed for v in verdicts] == [False, False, True]
    assert verdicts[2].facts.seed == 23 and verdicts[2].gates[2].detail == verdicts[0].gates[2].detail

    free = replace(fixed, seed=None)
    held_as = next(k for k in POOL._primed if k[-1] == key)
    assert POOL._primed[held_as].seed == 23 and POOL.primed_seed(held_as) is None  # a fixed seed is offered to none
    unfixed = verify(task, EXAMPLE_CANDIDATE, "cpu", free)
    assert unfixed.passed and not unfixed.facts.reference_primed, unfixed.feedback  # a secret seed of its own
    seed = POOL.primed_seed(held_as)
    assert seed not in (None, 23, unfixed.facts.seed)  # a fresh secret seed primed for the next one
    again = verify(task, EXAMPLE_CANDIDATE, "cpu", free)
    assert again.passed and again.facts.reference_primed and again.facts.seed == seed

    more = verify(task, EXAMPLE_CANDIDATE, "cpu", replace(free, correctness_trials=free.correctness_trials + 1))
    assert more.passed and not more.facts.reference_primed, more.feedback
    # every worker, booted, reused or primed, drew its timed sets with the native fill where it builds here
    from verifier.sandbox.fast_fill import drawn_with
    from verifier.sandbox import fast_fill

    path, why = fast_fill.library()
    drawn = "native fill" if path is not None else drawn_with("torch's generator", why)
    assert {v.facts.timed_inputs_drawn for v in (*verdicts, unfixed, again, more)} == {drawn}


def test_a_primed_worker_still_computing_is_stopped_while_a_latency_phase_times(tmp_path):
    """Priming is start-up work: it never shares the cores with a timed window (Pool.paused stops it, and
    continues it after), and the verification that takes it gets its trials."""
    import time

    from verifier.monitor.pool import Pool
    from verifier.monitor.sites import ReferenceSite
    from verifier.sandbox import messages as msg

    slow = EXAMPLE_TASK.replace("def get_inputs():\n", "def get_inputs():\n    import time\n    time.sleep(0.5)\n")
    s = VerifySettings()
    pool = Pool()
    key = (1, s.memory_limit_mb, False, "slow task")
    start = msg.RefStart(slow, "float32", 1, 2, s.correctness_trials, 1)
    try:
        sites = [ReferenceSite(1, s.memory_limit_mb) for _ in range(2)]
        assert all(site.wait_ready(time.monotonic() + 120) for site in sites)
        pool.keep(sites[0], key)  # the task's first verification: held, not primed
        pool.keep(sites[1], key, lambda: (5, True, start))
        assert pool.primed_seed(key) == 5
        with pool.paused() as stopped:
            assert stopped == 1 and _state(sites[1].process.pid()) in ("T", "t")
            time.sleep(0.6)
        primed = pool.take_primed(key, start)
        assert primed is not None and primed.site is sites[1] and pool.primed_seed(key) is None
        primed.reference.wait_done(time.monotonic() + 120)
        assert not primed.reference.error and len(primed.reference.trials) == len(primed.reference.trials) > 0
        primed.site.close()
    finally:
        pool.close()
