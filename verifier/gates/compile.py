"""The compile gate from the monitor's build outcomes (verifier.monitor.builds) and the runner's
import and construction of ModelNew."""

from __future__ import annotations

from verifier.result import GateResult


def failed(reason: str, seconds: float, detail: str = "") -> GateResult:
    return GateResult("compile", False, reason[:300], seconds, detail=detail[:4000])


def passed(seconds: float, built: int, cached: int, build_s: float, notes: tuple[str, ...]) -> GateResult:
    what = f"{built} native build{'s' if built != 1 else ''} in {build_s:.2f} s" + (f" ({cached} cached)" if cached else "")
    note = "; ".join(n for n in notes if n)
    return GateResult("compile", True, note[:300], seconds, detail=f"{what}\n{note}".strip())


def load_failed(phase: str, error: str, seconds: float) -> GateResult:
    last = error.strip().splitlines()[-1][:250] if error.strip() else "an exception"
    what = "import" if phase == "import" else "construct"
    return GateResult("compile", False, f"ModelNew failed to {what}: {last}", seconds, detail=error[:4000])
