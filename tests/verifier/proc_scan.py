"""Which processes on this machine are still alive with a marker in their command line (what a sandbox test
leaves behind when something it started outlived the sandbox)."""

from __future__ import annotations

from pathlib import Path


def processes_naming(marker: str) -> list[str]:
    """The pids whose /proc/<pid>/cmdline holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker in (entry / "cmdline").read_bytes().decode(errors="replace"):
                found.append(entry.name)
        except OSError:
            continue
    return found
