"""Whether a provider's endpoint answers, asked once before a campaign starts anything (issue 39).

An unreachable endpoint used to be found by the first generation, after a Prefect server had started
and the client's retries had run out (66 s). :func:`endpoint_problem` sends one GET of the API's
model list (free, no tokens) with a short timeout and reads only the transport's answer:

- no connection (refused, no route, DNS, TLS) within ``PROBE_TIMEOUT_S``: the problem, naming the URL;
- HTTP 401: the key was refused (named by its variable);
- any other answer, even 404 (a server without the route) or 403 (a key restricted to some
  endpoints), or a connection that answers slowly: reachable; the generation's own errors say the rest.

Providers with an HTTP endpoint say where it is (``probe_target``: the URL and headers of that
GET); others (the scripted player, plugins without it) are not probed.
"""

from __future__ import annotations

import httpx

PROBE_TIMEOUT_S = 5.0


def endpoint_problem(llm: object, timeout_s: float = PROBE_TIMEOUT_S) -> str:
    """"" when the provider's endpoint answers (or it has none), else one line naming the URL."""
    target = getattr(llm, "probe_target", None)
    if target is None:
        return ""
    url, headers, key_variable = target()
    try:
        response = httpx.get(url, headers=headers, timeout=httpx.Timeout(timeout_s), follow_redirects=True)
    except httpx.TimeoutException as exc:
        if isinstance(exc, httpx.ConnectTimeout):
            return f"connection failed to {_base(url)}: no answer within {timeout_s:.0f} s"
        return ""  # connected; the server is slow to answer this GET, not gone
    except httpx.TransportError as exc:
        return f"connection failed to {_base(url)}: {_reason(exc)}"
    if response.status_code == 401:
        return f"authentication failed (HTTP 401) at {_base(url)}: check {key_variable}"
    return ""


def _base(url: str) -> str:
    """The endpoint as the user configured it (the probe's path left out)."""
    return url.rsplit("/models", 1)[0]


def _reason(exc: Exception) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:200]
