"""How a latency-based cell reads for a campaign whose machine measured no latency: "not measured on
this machine", never a number (a fast_p of 0% would claim every kernel was timed and found slow)."""

from __future__ import annotations

from typing import Any, Callable, Mapping

NOT_MEASURED = "not measured on this machine"


def latency_cell(fmt: Callable[[Mapping[str, Any]], str]) -> Callable[[Mapping[str, Any]], str]:
    """A column formatter that says NOT_MEASURED where the row's ``latency_not_measured`` is set
    (reports.machine.adjust_groups sets it)."""
    return lambda row: NOT_MEASURED if row.get("latency_not_measured") else fmt(row)


def attempts_cell(row: Mapping[str, Any], count: str) -> str:
    """The attempts count, with the machine's outcomes among them said apart."""
    machine = row.get("n_machine_outcomes") or 0
    return f"{count} ({machine} the machine's)" if machine else count
