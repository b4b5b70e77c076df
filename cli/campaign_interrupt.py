"""How `evokernel campaign` ends when it does not finish: Ctrl-C, a fatal error, a busy campaign id.

Ctrl-C (SIGINT; SIGTERM until the flow takes that signal over) asks the campaign to stop
(evokernel.agent.interrupt) and starts a watchdog thread, which within STOP_DEADLINE_S:

1. silences logging (Prefect's lines about the tasks the stop cuts short are noise now) and the bar;
2. kills the verifications in flight (the run's Prefect server is spared);
3. waits up to COMMIT_WAIT_S for a step that is writing its attempt (a step commits whole or not
   at all; the one in flight is redone on resume under the same attempt id);
4. records the campaign ``interrupted`` in the lake (the flow's finisher; once) and marks its
   Prefect flow run Cancelled;
5. prints one line: the campaign stopped and the exact command that resumes it;
6. exits with 130 (``os._exit``: a task thread blocked in an LLM call cannot be stopped otherwise;
   the Prefect server goes with this process, see flows/prefect_api.py).

A second Ctrl-C exits at once. A fatal error (an LLM endpoint that cannot be reached, a verifier that
cannot run) stops the campaign inside the flow, which records it ``failed``: one error line with the
same resume command, exit 2. A campaign id that another live process runs is refused before
anything starts ("campaign X is running on HOST pid N").
"""

from __future__ import annotations

import logging
import os
import shlex
import signal
import sys
import threading
import time
from typing import Any, Callable

from cli.errors import fail

STOP_DEADLINE_S = 9.0  # Ctrl-C to exit, whatever the campaign's threads are doing
COMMIT_WAIT_S = 3.0
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it


class Interruptible:
    """Installs the handlers for a campaign run in the CLI (a context manager; main thread only)."""

    def __init__(self, kwargs: dict[str, Any], on_exit: Callable[[], None] = lambda: None) -> None:
        self.kwargs = kwargs
        self.campaign_id: str | None = kwargs.get("campaign_id")
        self.on_exit = on_exit  # stops the progress display before the last line
        self._watchdog: threading.Thread | None = None
        self._previous: dict[int, Any] = {}
        self._exiting = threading.Lock()

    def __enter__(self) -> "Interruptible":
        from evokernel.agent import interrupt

        interrupt.reset()
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._previous[sig] = signal.signal(sig, self._on_signal)
        return self

    def __exit__(self, *exc) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def on_event(self, event) -> None:
        """Progress events: the campaign's id once the flow has named it."""
        if event.kind == "campaign-start":
            self.campaign_id = event.campaign_id

    def spare(self, pid: int | None) -> None:
        from evokernel.agent import interrupt

        if pid:
            interrupt.spare(pid)

    def _on_signal(self, signum: int, _frame) -> None:
        from evokernel.agent import interrupt

        if self._watchdog is not None:  # a second Ctrl-C: now
            os._exit(EXIT_INTERRUPTED)
        interrupt.request_stop(interrupt.INTERRUPTED, "Ctrl-C" if signum == signal.SIGINT else "SIGTERM")
        self._watchdog = threading.Thread(target=self._stop, name="campaign-interrupt", daemon=True)
        self._watchdog.start()

    @property
    def interrupted(self) -> bool:
        return self._watchdog is not None

    def wait_for_exit(self) -> None:
        """The flow returned while the watchdog stops the process: let it finish its work."""
        if self._watchdog is not None:
            self._watchdog.join(STOP_DEADLINE_S + 5)
            os._exit(EXIT_INTERRUPTED)

    def _stop(self) -> None:
        from evokernel.agent import interrupt

        started = time.monotonic()
        hard = threading.Timer(STOP_DEADLINE_S, self._exit, args=(None,))
        hard.daemon = True
        hard.start()
        logging.disable(logging.CRITICAL)
        interrupt.kill_verifications()
        interrupt.wait_for_commits(COMMIT_WAIT_S)
        note = ""
        try:
            stop = interrupt.finish(timeout_s=max(0.5, STOP_DEADLINE_S - 2 - (time.monotonic() - started)))
            if stop is not None:
                from flows.campaign import abandon_flow_run

                abandon_flow_run(stop, timeout_s=1.5)
        except Exception as exc:  # the status could not be written: say so, still stop
            note = f" (status not recorded: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
        self._exit(note)

    def _exit(self, note: str | None) -> None:
        if not self._exiting.acquire(blocking=False):  # the deadline and the watchdog: one line, once
            threading.Event().wait()
        try:
            self.on_exit()
        except Exception:
            pass
        late = " (status not recorded in time)" if note is None else note
        if self.campaign_id:
            line = (f"interrupted: campaign {self.campaign_id} stopped{late}; resume with: "
                    f"{resume_command(self.kwargs, self.campaign_id)}")
        else:
            line = "interrupted before the campaign started; nothing was recorded"
        sys.stdout.flush()
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
        os._exit(EXIT_INTERRUPTED)


def interrupted_before_start(kwargs: dict[str, Any]) -> None:
    """Ctrl-C while the campaign was starting (its first requests going out, Prefect starting): no step
    was committed; one line with the command that starts it again, exit 130 at once."""
    sys.stdout.flush()
    sys.stderr.write(f"interrupted: campaign {kwargs['campaign_id']} stopped before its first step; resume with: "
                     f"{resume_command(kwargs, kwargs['campaign_id'])}\n")
    sys.stderr.flush()
    os._exit(EXIT_INTERRUPTED)


def ended(result: dict[str, Any], kwargs: dict[str, Any], handlers: Interruptible) -> None:
    """A flow that stopped early: wait for the watchdog (Ctrl-C), or one error line (exit 2)."""
    stopped = result.get("stopped")
    if not stopped:
        return
    if stopped["status"] == "refused":
        fail(stopped["reason"])
    handlers.wait_for_exit()
    fail(f"campaign {result['campaign_id']} {stopped['status']}: {stopped['reason']}; resume with: "
         f"{resume_command(kwargs, result['campaign_id'])}")


def refuse_running(lake: str, campaign_id: str | None) -> None:
    """One line, before anything starts, when another live process runs this campaign id."""
    from memory_lake import LakeError
    from memory_lake.campaign_lock import holder, running_line
    from memory_lake.storage import parse

    if not campaign_id:
        return
    try:
        location = parse(lake)
        if location.catalog_exists() is False:
            return
        found = holder(location, campaign_id)
    except LakeError as exc:
        fail(str(exc))
    if found is not None:
        fail(running_line(found))


def resume_command(kwargs: dict[str, Any], campaign_id: str) -> str:
    """The `evokernel campaign` command that continues this campaign (options left at their
    defaults are left out)."""
    words = ["evokernel", "campaign", "--build", str(kwargs["build"]), "--lake", str(kwargs["lake"]),
             "--llm", str(kwargs["llm"])]
    optional = (("--method", kwargs.get("method"), "evokernel"), ("--budget", kwargs.get("budget"), 30),
                ("--order", kwargs.get("order"), "level"), ("--report", kwargs.get("report"), None),
                ("--config", kwargs.get("config_file"), None))
    for flag, value, default in optional:
        if value is not None and value != default:
            words += [flag, str(value)]
    if kwargs.get("tasks"):
        words += ["--tasks", ",".join(kwargs["tasks"])]
    overrides = kwargs.get("settings_overrides") or {}
    for flag, key in (("--parallel-tasks", "parallel_tasks"), ("--dask-address", "dask_address")):
        if overrides.get(key):
            words += [flag, str(overrides[key])]
    if overrides.get("retry_empty_distillations"):
        words.append("--retry-empty-distillations")
    return shlex.join([*words, "--campaign-id", campaign_id])
