"""Every input of ``evokernel campaign`` (and of the demo's campaign), checked in one pass before a
Prefect server starts or a lake is created: settings, build, backend and its toolchain, tasks, lake
path, Dask address, LLM provider, the existing lake's backend and a resumed campaign's inputs, then
whether the LLM endpoint answers (cheap checks first).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from cli import inputs, inputs_lake

if TYPE_CHECKING:
    from evokernel.config import Settings

ORDERS = ("level", "given")


@dataclass(frozen=True)
class CampaignInputs:
    settings: "Settings"
    backend: str
    model: str


def check_campaign(build: Path, lake: str, llm: str, method: str, budget: int, tasks: Sequence[str],
                   campaign_id: str | None, order: str, config_file: Path | None,
                   settings_overrides: dict | None = None) -> CampaignInputs:
    """Raise InputError (one line) for the first bad input; nothing is created or started."""
    inputs.choice("--order", order, ORDERS)
    if campaign_id is not None and not campaign_id.strip():
        raise inputs.InputError("--campaign-id: empty (omit it for a new campaign with a generated id)")
    settings = inputs.settings(config_file, **{**(settings_overrides or {}), "build": build, "lake": lake,
                                               "llm": llm, "method": method, "budget": budget})
    found = inputs.build(Path(settings.build))
    inputs.settings_backend(settings, found)
    inputs.runnable_tasks(found, tasks)
    inputs.backend_toolchain(found)
    inputs_lake.lake_path(str(settings.lake), must_exist=False)
    _check_dask(settings)
    provider = inputs.llm(settings.llm, settings)
    inputs_lake.campaign_lake(str(settings.lake), found.backend, campaign_id, found.build_hash, settings.method,
                              provider.model)
    inputs.llm_endpoint(provider)  # last: the only check that waits on the network (at most a few seconds)
    return CampaignInputs(settings=settings, backend=found.backend, model=provider.model)


def _check_dask(settings: "Settings") -> None:
    """A Dask scheduler whose workers may be on other hosts needs a Prefect API they can reach."""
    if not settings.dask_address:
        return  # importing prefect costs seconds: only where a scheduler is named
    from cli.prefect_env import apply_prefect_defaults

    apply_prefect_defaults()  # before prefect is imported
    from flows.prefect_api import needs_reachable_api

    if needs_reachable_api(settings.dask_address):
        raise inputs.InputError(
            f"--dask-address {settings.dask_address}: its workers may run on other hosts, which cannot reach a "
            "Prefect server started here on loopback; set PREFECT_API_URL to a server they reach "
            "(README: distributed campaigns)")
