"""LLM failures, classified once: retryable (rate limit, 5xx, timeout, connection, malformed
response) or fatal (authentication, bad request, spending budget exhausted, retry budget spent).

:func:`classify_sdk_error` maps the official openai and anthropic SDK exceptions (both SDKs use
the same class names) onto these two kinds; anything that is not an SDK error is a bug and is
not wrapped.
"""

from __future__ import annotations

import json


class LLMError(Exception):
    """Base class; ``retryable`` says whether trying the same request again may succeed."""

    retryable: bool = False

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


class RetryableLLMError(LLMError):
    """Rate limit (429), server error (5xx), timeout, connection failure, malformed response."""

    retryable = True

    def __init__(self, message: str, *, status_code: int | None = None,
                 retry_after_s: float | None = None) -> None:
        super().__init__(message, status_code=status_code)
        self.retry_after_s = retry_after_s


class FatalLLMError(LLMError):
    """Authentication (401/403), bad request (400/404/413/422), spending budget exhausted."""

    retryable = False


class RetryBudgetExhausted(FatalLLMError):
    """Retryable failures kept coming until the retry budget (count or seconds) was spent.

    Fatal on purpose: our retry policy is the only one, so callers must not retry again.
    ``last_error`` is the final retryable error; ``retries`` how many retries were made.
    """

    def __init__(self, message: str, *, last_error: RetryableLLMError, retries: int) -> None:
        super().__init__(message, status_code=last_error.status_code)
        self.last_error = last_error
        self.retries = retries


_QUOTA_CODES = {"insufficient_quota", "billing_hard_limit_reached", "billing_not_active"}


def _error_code(exc: BaseException) -> str | None:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            code = inner.get("code") or inner.get("type")
            return str(code) if code is not None else None
    return None


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    try:
        value = float(headers.get("retry-after", ""))
    except (TypeError, ValueError):
        return None
    return value if value >= 0 else None


def _first_line(exc: BaseException, limit: int = 300) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:limit]


def _url(exc: BaseException) -> str:
    """" to <url>" of the request that failed (the endpoint the user must check), or ""."""
    url = getattr(getattr(exc, "request", None), "url", None)
    return f" to {url}" if url else ""


def classify_status(status: int, message: str, code: str | None = None,
                    retry_after_s: float | None = None) -> LLMError:
    """The error for an HTTP status from an LLM API."""
    if status == 402 or code in _QUOTA_CODES:
        return FatalLLMError(f"spending budget exhausted (HTTP {status}): {message}", status_code=status)
    if status == 429:
        return RetryableLLMError(f"rate limited (HTTP 429): {message}", status_code=status,
                                 retry_after_s=retry_after_s)
    if status in (401, 403):
        return FatalLLMError(f"authentication failed (HTTP {status}): {message}", status_code=status)
    if status in (408, 409) or status >= 500:
        return RetryableLLMError(f"server error (HTTP {status}): {message}", status_code=status,
                                 retry_after_s=retry_after_s)
    return FatalLLMError(f"bad request (HTTP {status}): {message}", status_code=status)


def classify_sdk_error(exc: BaseException) -> LLMError | None:
    """Map an openai/anthropic SDK exception to an LLMError; None if it is not an SDK error."""
    module = type(exc).__module__.split(".")[0]
    if module not in ("openai", "anthropic"):
        return None
    names = {cls.__name__ for cls in type(exc).__mro__}
    message = _first_line(exc)
    if "APITimeoutError" in names:
        return RetryableLLMError(f"timeout{_url(exc)}: {message}")
    if "APIConnectionError" in names:
        return RetryableLLMError(f"connection failed{_url(exc)}: {message}")
    status = getattr(exc, "status_code", None)
    if "APIStatusError" in names and isinstance(status, int):
        return classify_status(status, message, _error_code(exc), _retry_after(exc))
    if "APIResponseValidationError" in names or "APIError" in names:
        return RetryableLLMError(f"malformed response: {message}")
    return None


def translate_sdk_errors(call):
    """Run ``call()``; re-raise an SDK exception as its LLMError (chained), anything else as is."""
    try:
        return call()
    except LLMError:
        raise
    except json.JSONDecodeError as exc:  # the SDKs parse the body with json and let this through
        raise RetryableLLMError(f"malformed response: body is not JSON ({exc.msg})") from exc
    except Exception as exc:
        mapped = classify_sdk_error(exc)
        if mapped is None:
            raise
        raise mapped from exc
