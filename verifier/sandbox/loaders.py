"""The runner's native loaders: each call's actual arguments go to the monitor, which builds, checks
and places the library; the runner only loads what the monitor put where only the monitor writes.

Whatever Python computed the sources and flags (a build helper, an f-string, a loop), the monitor
sees the real call. :class:`BuildClient` is the runner's side of BuildRequest/BuildReply; the
backends' ``install_loaders`` route their loaders through it: ``verifier.cpu_native.load_c`` and
``torch.utils.cpp_extension.load_inline`` (:func:`inline_arguments` gives its arguments as data).
"""

from __future__ import annotations

import time
from typing import Any

from verifier.sandbox import messages as msg
from verifier.sandbox.channel import Channel

INLINE_PARAMETERS = ("name", "cpp_sources", "cuda_sources", "sycl_sources", "functions", "extra_cflags",
                     "extra_cuda_cflags", "extra_sycl_cflags", "extra_ldflags", "extra_include_paths",
                     "build_directory", "verbose", "with_cuda", "with_sycl", "is_python_module",
                     "with_pytorch_error_handling", "keep_intermediates", "use_pch", "no_implicit_headers")
BUILD_WAIT_S = 3600.0  # the monitor enforces the compile deadline; the runner just waits
MAX_REPLY = 1 << 20


class NativeBuildError(RuntimeError):
    """The monitor did not build this call (compile error, refused flags or sources); the message says why."""


class BuildClient:
    def __init__(self, channel: Channel, load: bool) -> None:
        self.channel, self.load = channel, load
        self.count = 0
        self.closed = False

    def build(self, loader: str, args: dict[str, Any]) -> str:
        """The path of the library the monitor built for this call ("" when nothing is loaded here)."""
        if self.closed:
            raise NativeBuildError(f"{loader}: native code is built when the candidate is imported or ModelNew is "
                                   f"constructed; call {loader} at module level or in __init__, not in forward")
        msg.send(self.channel, msg.BuildRequest(loader, args))
        reply, _ = msg.receive(self.channel, time.monotonic() + BUILD_WAIT_S, MAX_REPLY, (msg.BuildReply,))
        self.count += 1
        if not reply.ok:
            raise NativeBuildError(reply.error)
        return reply.path


def _plain(name: str, value: Any) -> Any:
    """A loader argument as JSON data: strings, bools, None, lists of strings, {str: str} dicts."""
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    if isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        return dict(value)
    raise NativeBuildError(f"{name} must be a string, a list of strings or a dict of strings, "
                           f"not {type(value).__name__}")


def inline_arguments(args: tuple, kwargs: dict) -> dict[str, Any]:
    """load_inline's arguments by name, as data (positional ones in torch's order)."""
    if len(args) > len(INLINE_PARAMETERS):
        raise NativeBuildError("load_inline: too many positional arguments")
    named = dict(zip(INLINE_PARAMETERS, args))
    for key, value in kwargs.items():
        if key not in INLINE_PARAMETERS:
            raise NativeBuildError(f"load_inline: unexpected argument {key!r}")
        if key in named:
            raise NativeBuildError(f"load_inline: {key} given twice")
        named[key] = value
    if "name" not in named or "cpp_sources" not in named:
        raise NativeBuildError("load_inline needs name and cpp_sources")
    return {key: _plain(f"load_inline: {key}", value) for key, value in named.items()}


class NotLoadedHere:
    """What a loader returns where the build is compiled and checked but cannot run (no device)."""

    def __init__(self, what: str) -> None:
        self._what = what

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"{self._what} was compiled but cannot run on this machine")
