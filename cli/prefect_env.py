"""Environment defaults for running flows from the CLI without a Prefect server.

Must run before prefect is imported: Prefect reads its settings at import time. Explicit user
settings (already in the environment) always win.
"""

from __future__ import annotations

import os

DEFAULTS = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_UI_ENABLED": "false",
    # the ephemeral server takes 10-23 s to start on a loaded 2-core machine (default limit 20 s)
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
}


def apply_prefect_defaults() -> None:
    for key, value in DEFAULTS.items():
        os.environ.setdefault(key, value)
