"""One Prefect API for a run whose tasks execute in other processes (Dask workers).

Prefect has no API-less mode: a process with no ``PREFECT_API_URL`` starts a temporary server of
its own. prefect-dask sends the flow's settings to the workers with every task, so a flow on such a
server would send "no API" along, and every worker process would start yet another server (10-20 s
each, racing on one database): runs scattered over servers that vanish with their workers.

:func:`shared_api` gives the run one API: the configured ``PREFECT_API_URL`` (environment or Prefect
profile) when there is one; otherwise a Prefect server started for the run (Prefect's own
``SubprocessASGIServer`` on a free loopback port, over the ``PREFECT_HOME`` database, where the
temporary server would have kept the runs too), set as ``PREFECT_API_URL`` in Prefect's settings
(which prefect-dask sends to the workers) and in the environment (which local worker processes
inherit), and stopped when the run ends, after its logs and events are flushed to it.
Workers on other hosts cannot reach a loopback server: :func:`needs_reachable_api` says when the
user must name a server they can reach.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator
from urllib.parse import urlparse

from prefect.settings import PREFECT_API_URL, temporary_settings


@dataclass(frozen=True)
class PrefectApi:
    url: str
    started_here: bool  # a server started for this run (stopped when it ends)
    server_pid: int | None = None  # that server's process


def configured_api_url() -> str | None:
    """The Prefect API the settings name (environment, profile or an enclosing settings context)."""
    return PREFECT_API_URL.value() or None


def needs_reachable_api(dask_address: str | None) -> bool:
    """Whether a scheduler at ``dask_address`` may have workers on other hosts while no API is
    configured: a server started here listens on loopback only, out of their reach."""
    if not dask_address or configured_api_url():
        return False
    host = urlparse(dask_address).hostname or ""
    return not _is_loopback(host)


@contextmanager
def shared_api(startup_timeout_s: int | None = None) -> Iterator[PrefectApi]:
    """The run's one Prefect API (see the module docstring); startup timeout: Prefect's setting
    ``PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS`` unless given."""
    url = configured_api_url()
    if url:
        yield PrefectApi(url, started_here=False)
        return
    server = _run_server(_free_port())  # a port of its own: not Prefect's ephemeral singleton
    try:
        server.start(timeout=startup_timeout_s)
    except RuntimeError as exc:
        raise RuntimeError(f"{str(exc).splitlines()[0]} (its output: {server_log()})") from None
    try:
        with temporary_settings(updates={PREFECT_API_URL: server.api_url}), _environ("PREFECT_API_URL", server.api_url):
            try:
                yield PrefectApi(server.api_url, started_here=True, server_pid=server.server_process.pid)
            finally:
                _flush_logs_and_events()
    finally:
        server.stop()


def server_log() -> Path:
    """Where a server started for a run writes its output (PREFECT_HOME/api-server.log)."""
    from prefect.settings import PREFECT_HOME

    return Path(PREFECT_HOME.value()) / "api-server.log"


def _run_server(port: int):
    """Prefect's own server subprocess, started in a session of its own, so that a Ctrl-C at the
    terminal reaches the campaign and not its API (the campaign reports its end to the API, then
    stops it), and with the kernel's parent-death signal, so that it never outlives this process
    (a crash, a kill -9, the interrupt's immediate exit). Start it from the main thread: the
    parent-death signal follows the thread that started it. Its output goes to :func:`server_log`,
    not the campaign's terminal: what it prints while it is stopped (a websocket cut short logs a
    CancelledError traceback) is the server's business."""
    from prefect.server.api import server as server_module

    class RunServer(server_module.SubprocessASGIServer):
        def _run_uvicorn_command(self):
            real = server_module.subprocess
            server_module.subprocess = _DetachedSubprocess(real)
            try:
                return super()._run_uvicorn_command()
            finally:
                server_module.subprocess = real

    return RunServer(port=port)


class _DetachedSubprocess:
    """The ``subprocess`` module as Prefect's server module sees it while it starts its server."""

    def __init__(self, real) -> None:
        self._real = real

    def __getattr__(self, name: str):
        return getattr(self._real, name)

    def Popen(self, *args, **kwargs):  # noqa: N802 (the name Prefect calls)
        log = server_log()
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as out:
            return self._real.Popen(*args, **kwargs, stdout=out, stderr=self._real.STDOUT,
                                    start_new_session=True, preexec_fn=_die_with_parent)


def _die_with_parent() -> None:
    """In the forked server, before exec: SIGTERM when the process that started it ends (Linux)."""
    import ctypes
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the server is stopped on the way out instead
        pass


def _flush_logs_and_events() -> None:
    """Send what this process still queues for the API before its server stops."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    try:
        APILogWorker.drain_all(timeout=10)
        EventsWorker.drain_all(timeout=10)
    except RuntimeError:  # a worker that never started has nothing to send
        pass


@contextmanager
def _environ(key: str, value: str) -> Iterator[None]:
    previous = os.environ.get(key)
    os.environ[key] = value
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = previous


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _is_loopback(host: str) -> bool:
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
