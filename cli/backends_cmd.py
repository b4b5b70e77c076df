"""`evokernel backends`: each backend's availability on this machine, what each gate can do, and the
machine's measured peaks (memory bandwidth, compute) that verdicts' roofline positions use."""

from __future__ import annotations

import json

import typer


def register(app: typer.Typer) -> None:
    @app.command("backends")
    def backends(
        as_json: bool = typer.Option(False, "--json", help="print JSON instead of lines"),
        probe: bool = typer.Option(False, "--probe", help="measure the peaks again (on a quiet machine)"),
        threads: int = typer.Option(2, "--threads", min=1, help="thread budget the peaks are measured with"),
    ) -> None:
        """List backends: available or why not, per gate (compile, correctness, latency) yes/no, and the
        measured peaks of those that time kernels here (probed once per machine, then cached)."""
        from verifier.backends import backend_names, get_backend

        rows, confined = [], {}
        for name in backend_names():
            try:
                backend = get_backend(name)
                availability = backend.availability()
            except Exception as exc:  # an optional backend that cannot even be imported
                typer.echo(f"{name}: unavailable: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
                continue
            if not as_json:
                typer.echo(availability.line())
            device = backend.device() if availability.available else "cpu"
            if device != "cpu":
                if device not in confined:
                    confined[device] = _starts_confined(device)
                if not as_json:
                    typer.echo(f"  in the sandbox: {confined[device] or f'the {device} device starts'}")
            peaks = _peaks(availability, threads, probe, quiet=as_json)
            rows.append((availability, peaks, confined.get(device) if device != "cpu" else None))
        if as_json:
            typer.echo(json.dumps([_json_row(*row) for row in rows], indent=2))


def _starts_confined(device: str) -> str:
    """"" where the device starts in a confined process, else why not, said as the machine's problem."""
    from verifier.monitor.device_start import starts_confined
    from verifier.settings import VerifySettings

    why = starts_confined(device, VerifySettings().memory_limit_mb)
    return f"the {device} device cannot start: {why} (every verification on it would end as the machine's outcome)" \
        if why else ""


def _peaks(availability, threads: int, refresh: bool, quiet: bool):
    """The backend's peaks lookup, or None where it does not time kernels here."""
    from verifier.machine_peaks import cache_path, machine_peaks

    if not any(g.gate == "latency" and g.available for g in availability.gates):
        return None
    if not quiet and (refresh or not cache_path(availability.backend, threads).is_file()):
        typer.echo(f"  probing {availability.backend} peaks with {threads} threads (once per machine)...")
    lookup = machine_peaks(availability.backend, threads, refresh=refresh)
    if not quiet:
        if lookup.peaks is None:
            typer.echo(f"  peaks: none ({lookup.problem})")
        else:
            peaks = lookup.peaks
            typer.echo(f"  peaks: {peaks.summary()}")
            typer.echo(f"  probed {peaks.probed_at} in {peaks.probe_seconds:.1f} s at load {peaks.load_average:.1f}"
                       f"{_load_warning(peaks)}; cached in {lookup.path}")
    return lookup


def _load_warning(peaks) -> str:
    import os

    cpus = os.cpu_count() or 1
    if peaks.load_average <= cpus:
        return ""
    return f" (busy machine, {cpus} CPUs: peaks may be understated; rerun with --probe when quiet)"


def _json_row(availability, lookup, confined: str | None) -> dict:
    from dataclasses import asdict

    row = {"backend": availability.backend, "available": availability.available, "reason": availability.reason,
           "gates": {g.gate: {"available": g.available, "note": g.note} for g in availability.gates}}
    if confined is not None:  # a device backend: whether its device starts in a sandbox process
        row["sandbox"] = {"device_starts": not confined, "why": confined}
    if lookup is not None:
        row["peaks"] = asdict(lookup.peaks) if lookup.peaks else None
        row["peaks_problem"] = lookup.problem
    return row
