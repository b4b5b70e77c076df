"""EvoKernel settings: one typed object, read from EVOKERNEL_* environment variables, an
optional TOML file (``EVOKERNEL_CONFIG`` or ``--config``), and explicit overrides, in that order
of increasing priority. Unknown keys are errors, never silently ignored.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

Method = Literal["evokernel", "pass-at-k", "refinement", "heuristic", "no-memory"]


class ConfigError(ValueError):
    """A configuration problem, reported as one line naming the source and the key."""


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="EVOKERNEL_", extra="forbid", frozen=True)

    # where things live
    lake: Path = Path("runs/lake")
    build: Path = Path("runs/build-cpu")
    reports: Path = Path("runs/reports")

    # what to run
    backend: str | None = None  # None: the build's; a campaign refuses a build of another backend
    llm: str = "scripted:demo"
    method: Method = "evokernel"

    # budget per task (shared by drafting and refining)
    budget: int = Field(30, ge=1)
    max_tokens_per_task: int = Field(2_000_000, ge=1)
    max_seconds_per_task: float = Field(3600.0, gt=0)

    # value-driven retrieval (paper: K = lambda * N); defaults chosen with the learning simulation
    # (benchmarks/memory_learning; README "How the memory learns")
    alpha: float = Field(0.1, gt=0, le=1)
    epsilon: float = Field(0.1, ge=0, le=1)
    retrieval_n: int = Field(5, ge=1)
    retrieval_lambda: int = Field(3, ge=1)
    q_init: float = 0.0  # the lake's initial Q: Q2 of an item never used in a refinement
    q1_init: float = Field(-1.0, ge=-1, le=1)  # Q1 of an item never used in a draft: assumed of no help
    # ... unless it is a lesson (experience, best practice) of the task itself or its op category
    q1_init_related: float = Field(0.0, ge=-1, le=1)
    # value-driven choice within the pool: score = (1 - w) z(similarity) + w z(Q) (MemRL's blend; 1 = Q only)
    retrieval_q_weight: float = Field(0.5, ge=0, le=1)
    # refining retrieves items at least this share of the best candidate's similarity (fewer, not noise)
    refine_min_relevance: float = Field(0.3, ge=0, le=1)

    # LLM calls
    llm_max_retries: int = Field(5, ge=0)
    llm_retry_budget_s: float = Field(300.0, gt=0)
    llm_max_output_tokens: int = Field(8192, ge=256)
    llm_temperature: float = Field(0.7, ge=0, le=2)
    # a task's distillation is asked once per campaign; one whose answer held no lesson in the expected
    # form is recorded (llm_calls.items_stored = 0, the answer in llm_calls.response) and asked again
    # only when this is on (--retry-empty-distillations): a rerun of a finished campaign calls no LLM
    retry_empty_distillations: bool = False

    # verification
    verify_threads: int = Field(2, ge=1)
    verify_timeout_s: float = Field(300.0, gt=0)
    verify_concurrency: int = Field(1, ge=1)
    correctness_trials: int = Field(5, ge=5)
    latency_rounds: int = Field(16, ge=5)  # as the verifier's own default (docs: How a kernel is timed)
    # the shortest timed window (ms; the verifier's own default): shorter verifies faster, but a window's
    # fixed cost and its cold first call weigh more in the figure (docs/timing.md: smoke runs, tests)
    latency_window_ms: float = Field(40.0, ge=1.0)
    # the latency rounds end once the speedup's 95% CI is within this (half its width, log terms: +-2.5%)
    # of its median, after the verifier's settle_rounds; 0 plays every round (docs/timing.md)
    latency_settle_ci: float = Field(0.025, ge=0.0)

    # orchestration: tasks of the same level may run concurrently (they share the memory lake);
    # levels stay in order (L1 before L2). threads by default; dask for a cluster (prefect-dask):
    # a local cluster of parallel_tasks worker processes, or the scheduler at dask_address
    # (tcp://host:8786) whose workers have the project installed and reach the lake and Prefect API.
    task_runner: Literal["threads", "dask"] = "threads"
    parallel_tasks: int = Field(1, ge=1)
    dask_address: str | None = Field(None, pattern=r"^(tcp|tls|inproc|ucx|ws|wss)://\S+$")

    @field_validator("dask_address")
    @classmethod
    def _dask_address_needs_dask(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and info.data.get("task_runner") != "dask":
            raise ValueError('a scheduler address needs task_runner = "dask" (EVOKERNEL_TASK_RUNNER=dask)')
        return value


# Environment variables with the prefix that are not settings (pydantic-settings ignores them):
# the config file; memory_lake's data path for new catalog lakes; the project directory that
# prefect.yaml's pull step changes into (a worker running scheduled campaigns has it exported).
ENV_NOT_SETTINGS = {"EVOKERNEL_CONFIG", "EVOKERNEL_LAKE_DATA_PATH", "EVOKERNEL_HOME"}


def _reject_unknown_env() -> None:
    known = {f"EVOKERNEL_{name.upper()}" for name in Settings.model_fields} | ENV_NOT_SETTINGS
    for key in sorted(os.environ):
        if key.upper().startswith("EVOKERNEL_") and key.upper() not in known:
            raise ConfigError(f"environment: {key}: unknown setting (known: see `evokernel config`)")


def load_settings(config_file: str | Path | None = None, **overrides) -> Settings:
    """Build Settings from env, an optional TOML file and overrides; raise ConfigError on bad input.

    The error names where the bad value came from: the option (``--budget 0``: overrides are what a
    command was given), the config file and key, or the environment variable."""
    file_values: dict = {}
    config_file = config_file if config_file is not None else os.environ.get("EVOKERNEL_CONFIG")
    if config_file is not None:
        path = Path(config_file)
        try:
            file_values = tomllib.loads(path.read_text())
        except FileNotFoundError:
            raise ConfigError(f"{path}: config file not found") from None
        except IsADirectoryError:
            raise ConfigError(f"{path}: is a directory, not a TOML config file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: cannot read the config file ({exc})") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: invalid TOML ({exc})") from None
        file_values = file_values.get("evokernel", file_values)
    _reject_unknown_env()
    given = {k: v for k, v in overrides.items() if v is not None}
    try:
        return Settings(**{**file_values, **given})
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"]) or "?"
        raise ConfigError(f"{_source(key, given, file_values, config_file)}: {err['msg']}") from None


def _source(key: str, given: dict, file_values: dict, config_file: str | Path | None) -> str:
    """Where the value of ``key`` came from, as the user wrote it."""
    if key in given:
        return f"--{key.replace('_', '-')} {given[key]}"
    if key in file_values:
        return f"{config_file}: {key}"
    env = f"EVOKERNEL_{key.upper()}"
    if env in os.environ:
        return f"environment: {env}={os.environ[env]}"
    return f"setting {key}"
