"""Stopping a running campaign promptly, with nothing lost and nothing half-written.

A stop is requested once per campaign run, by Ctrl-C in the CLI (cli/campaign_interrupt.py) or by a
fatal error in one of its tasks (an LLM endpoint that cannot be reached, a verifier that cannot
run): :func:`request_stop`. From then on

- every step checks before it writes its attempt (:func:`committing`): a step commits whole before the
  stop or not at all, and one not committed is redone on resume under the same attempt id, with the
  retrievals it recorded (evokernel.agent.step). A verdict that arrives after the stop (its
  verification was killed) is never scored;
- the task loops return at their next check (:func:`stopping`) with the reason as their stop reason;
- on Ctrl-C, the verifications in flight are killed (:func:`kill_verifications`): every process this
  one started, except the ones it spares (the Prefect server the run reports to);
- the campaign's status (``interrupted`` or ``failed``) is recorded once, by whichever side gets there
  first: the flow as it winds down, or the CLI's watchdog when a thread is stuck in an LLM call
  (:func:`on_finish` registers what records it; :func:`finish` runs it once).

One campaign runs per process at a time (the flow calls :func:`begin` when it starts).
"""

from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

INTERRUPTED, FAILED = "interrupted", "failed"


class CampaignStopped(Exception):
    """Raised where a step would commit after a stop was requested (never scored, redone on resume)."""


@dataclass(frozen=True)
class Stop:
    status: str  # interrupted | failed
    reason: str  # one line: "Ctrl-C", "openai:gpt-4o: cannot connect ..."


_stopped = threading.Event()
_stop: Stop | None = None
_cond = threading.Condition()
_committing = 0
_finishers: list[Callable[[Stop], None]] = []
_finished = False
_finish_done = threading.Event()
_spared: set[int] = set()


def begin() -> None:
    """A campaign run starts in this process: the stop and finishers of an earlier run are
    forgotten; a stop requested before this run started (Ctrl-C during start-up) stays."""
    with _cond:
        pending = _stop is not None and not _finished
    if not pending:
        reset()


def reset() -> None:
    """No stop, no finishers (a new run; the CLI before it installs its handlers)."""
    global _stop, _finished
    with _cond:
        _stopped.clear()
        _stop, _finished = None, False
        _finishers.clear()
        _finish_done.clear()


def request_stop(status: str, reason: str) -> bool:
    """Ask the running campaign to stop; False when a stop was already requested (the first wins)."""
    global _stop
    with _cond:  # under the lock: no commit starts after this returns
        if _stop is not None:
            return False
        _stop = Stop(status, reason)
        _stopped.set()
        return True


def stopping() -> Stop | None:
    """The requested stop, if any."""
    return _stop if _stopped.is_set() else None


@contextmanager
def committing() -> Iterator[None]:
    """Around a step's writes: refuses to start once a stop was requested (CampaignStopped)."""
    global _committing
    with _cond:
        if _stop is not None:
            raise CampaignStopped(_stop.reason)
        _committing += 1
    try:
        yield
    finally:
        with _cond:
            _committing -= 1
            _cond.notify_all()


def pause(seconds: float) -> None:
    """A sleep that a stop ends at once (CampaignStopped): between retries of a verification."""
    if _stopped.wait(seconds):
        raise CampaignStopped(_stop.reason if _stop else "stopped")


def wait_for_commits(timeout_s: float) -> bool:
    """Wait until no step is writing (True), or ``timeout_s`` passed (False)."""
    with _cond:
        return _cond.wait_for(lambda: _committing == 0, timeout_s)


def on_finish(finisher: Callable[[Stop], None]) -> None:
    """Register what records a stopped campaign's status (run once, by :func:`finish`)."""
    with _cond:
        _finishers.append(finisher)


def settled() -> None:
    """The campaign recorded its own end (finished): a later stop has nothing to record for it."""
    with _cond:
        _finishers.clear()


def finish(timeout_s: float = 30.0) -> Stop | None:
    """Run the finishers once for the requested stop (a second caller waits until the first is
    done, at most ``timeout_s``); the stop (None: none requested)."""
    global _finished
    with _cond:
        stop = _stop
        first = stop is not None and not _finished
        if first:
            _finished = True
            finishers = list(_finishers)
    if stop is None:
        return None
    if not first:
        _finish_done.wait(timeout_s)
        return stop
    try:
        for finisher in finishers:
            finisher(stop)
    finally:
        _finish_done.set()
    return stop


def spare(pid: int) -> None:
    """Never kill ``pid`` (and what it started) in :func:`kill_verifications`."""
    _spared.add(pid)


def kill_verifications() -> int:
    """SIGKILL every process this one started (verifier monitors, builders, compilers, sandbox
    runners, local Dask workers), except the spared ones; how many were killed."""
    children = _children()
    targets, todo, spared = [], list(children.get(os.getpid(), ())), set(_spared)
    while todo:
        pid = todo.pop()
        if pid in spared:
            continue
        targets.append(pid)
        todo += children.get(pid, ())
    killed = 0
    for pid in targets:
        try:
            os.kill(pid, signal.SIGKILL)
            killed += 1
        except (ProcessLookupError, PermissionError):
            pass
    return killed


def _children() -> dict[int, list[int]]:
    """Parent pid -> child pids, from /proc (Linux)."""
    out: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        out.setdefault(ppid, []).append(int(entry.name))
    return out
