"""The CLI's campaign progress bar (rich, which typer already depends on)."""

from __future__ import annotations

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from evokernel.agent.progress import ProgressEvent


class CampaignProgress:
    """Steps done over steps planned (a task that stops early completes its remaining steps)."""

    def __init__(self) -> None:
        self._progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                  TimeElapsedColumn(), transient=False)
        self._bar = None
        self._task_steps = 0
        self._budget_per_task = 0

    def __enter__(self) -> "CampaignProgress":
        self._progress.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._progress.__exit__(*exc)

    def on_event(self, event: ProgressEvent) -> None:
        if event.kind == "campaign-start":
            self._bar = self._progress.add_task(f"campaign {event.campaign_id}", total=event.total_steps)
        elif self._bar is None:
            return
        elif event.kind == "task-start":
            self._task_steps = 0
            self._progress.update(self._bar, description=f"{event.task_id}")
        elif event.kind == "step" and event.outcome is not None:
            self._task_steps += 1
            self._progress.advance(self._bar)
            o = event.outcome
            status = "feasible" if o.feasible else f"failed {o.failed_gate}"
            self._progress.update(self._bar, description=f"{o.task_id} #{o.iteration} {status}")
        elif event.kind == "task-end":
            self._progress.update(self._bar, description=f"{event.task_id}: {event.message}")
