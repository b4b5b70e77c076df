"""The device protocol, end to end on the CPU: a test-only backend (tests/verifier/recording_backend)
asks for staged calls, as a GPU backend does, and records the hooks the runner calls. On a device every
window holds one call: staged first (inputs placed, the device's cache flushed, synchronized: untimed),
then run and synchronized (timed by the monitor), then collected; correctness calls go the same way."""

from __future__ import annotations

from pathlib import Path

from recording_backend import NAME, read_log
from verifier_taskutil import make_task

from verifier.api import verify
from verifier.monitor.sites import RunnerSite
from verifier.settings import VerifySettings

ROOT = Path(__file__).resolve().parents[2]
BACKENDS = ROOT / "verifier" / "backends"
EXAMPLE_TASK = (BACKENDS / "cpu_example_task.txt").read_text()
EXAMPLE_CANDIDATE = (BACKENDS / "cpu_example_candidate.txt").read_text()


def test_every_call_is_staged_run_and_collected_through_the_backend_hooks(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))  # the monitor resolves the backend name too
    settings = VerifySettings.for_tests(tmp_path / "cache", pool_size=0)
    logs: list[str] = []
    close = RunnerSite.close

    def keep_log(site):  # the runner's log goes with its site
        if site.process is not None:
            logs.append(site.process.log_text())
        return close(site)

    monkeypatch.setattr(RunnerSite, "close", keep_log)
    verdict = verify(make_task(EXAMPLE_TASK, "example/linear_relu", tmp_path), EXAMPLE_CANDIDATE, NAME, settings)
    assert verdict.passed, verdict.feedback
    log = read_log("".join(logs))
    forwards = [e for e in log if e.startswith("forward ")]
    assert forwards and all(e.split(" | ")[0].split()[1:] + e.split(" | ")[1].split() == ["cpu"] * 3 for e in forwards)
    checks = 5 + 1 + 1  # the correctness trials, the repeat of trial 0, the perturbation probe
    from verifier.monitor.timing import CALIBRATION_ROUNDS, OBSERVED_ROUNDS

    # the calibration rounds, warm-up, the rounds, and the rounds observed from outside among them
    timed = (CALIBRATION_ROUNDS + settings.warmup_rounds + settings.latency_rounds
             + min(OBSERVED_ROUNDS, settings.latency_rounds))
    assert len(forwards) == checks + timed + 2  # one call per window on a device; then two post-timing trials
    inputs = [e.split(" | ")[2] for e in forwards]
    for k in range(checks, checks + timed):  # every timed window's inputs are new to the candidate
        assert inputs[k] not in inputs[:k], (k, inputs)
    assert log.count("flush") == len(forwards)  # every window staged: cache flushed before its call, untimed
    first = log.index(forwards[0])
    assert log[first - 2:first] == ["flush", "sync"] and log[first + 1] == "sync"  # staged, then run and synced
