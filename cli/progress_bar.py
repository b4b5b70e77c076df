"""The CLI's campaign progress bar (rich, which typer already depends on).

Steps are counted in the lake, not from callbacks: the campaign's tasks may run in Dask workers on
other processes or machines, and every committed attempt lands in the shared lake. A thread polls
``Lake.campaign_progress`` every ``poll_s`` seconds; the flow's own events (in this process) give
the campaign id and the steps planned, and say when a task ended (it then counts its whole budget).
"""

from __future__ import annotations

import threading

import duckdb
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from evokernel.agent.progress import ProgressEvent, steps_done
from memory_lake import Lake, LakeError, TaskProgress

POLL_S = 1.5


class CampaignProgress:
    """Steps done over steps planned, read from the lake at ``lake`` while the campaign runs."""

    def __init__(self, lake: str, poll_s: float = POLL_S) -> None:
        self._uri = str(lake)
        self._poll_s = poll_s
        self._progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                  TimeElapsedColumn(), transient=False)
        self._bar = None
        self._campaign_id = ""
        self._budget = 0
        self._tasks = 0
        self._ended: set[str] = set()
        self._lake: Lake | None = None
        self._stop = threading.Event()
        self._poller: threading.Thread | None = None
        self._refresh_lock = threading.Lock()

    def __enter__(self) -> "CampaignProgress":
        self._progress.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._stop_polling()
        if self._bar is not None:
            self.refresh()
        if self._lake is not None:
            self._lake.close()
        self._progress.__exit__(*exc)

    def stop_display(self) -> None:
        """Stop drawing now (the terminal gets its cursor back), touching no lake: for an immediate exit."""
        self._stop.set()
        self._progress.stop()

    def note(self, text: str) -> None:
        """A line above the bar."""
        self._progress.console.print(text, markup=False, highlight=False)

    @property
    def completed(self) -> int:
        return 0 if self._bar is None else int(self._progress.tasks[0].completed)

    def on_event(self, event: ProgressEvent) -> None:
        if event.kind == "campaign-start":
            self._campaign_id, self._budget = event.campaign_id, max(event.budget, 1)
            self._tasks = event.total_steps // self._budget
            self._bar = self._progress.add_task(f"campaign {event.campaign_id}", total=event.total_steps)
            self._poller = threading.Thread(target=self._poll, name="campaign-progress", daemon=True)
            self._poller.start()
        elif event.kind == "task-end" and self._bar is not None and event.task_id:
            self._ended.add(event.task_id)
            self.refresh()
        elif event.kind == "campaign-end" and self._bar is not None:
            self._stop_polling()
            self.refresh()

    def refresh(self) -> None:
        """Read the campaign's committed attempts from the lake and move the bar."""
        with self._refresh_lock:
            try:
                self._lake = self._lake or Lake.open(self._uri)
                tasks = self._lake.campaign_progress(self._campaign_id)
            except (LakeError, duckdb.Error):  # not created yet, or busy: the next poll reads it
                return
            done = steps_done({t.task_id: t.attempts for t in tasks}, self._ended, self._budget)
            self._progress.update(self._bar, completed=done, description=self._describe(tasks))

    def _describe(self, tasks: tuple[TaskProgress, ...]) -> str:
        latest = max((t for t in tasks if t.last_at is not None), key=lambda t: t.last_at, default=None)
        head = f"{len(self._ended)}/{self._tasks} tasks done, {sum(t.feasible for t in tasks)} feasible"
        return f"{head} · {latest.task_id} #{latest.last_iteration}" if latest else head

    def _poll(self) -> None:
        while not self._stop.wait(self._poll_s):
            self.refresh()

    def _stop_polling(self) -> None:
        self._stop.set()
        if self._poller is not None and self._poller is not threading.current_thread():
            self._poller.join()
