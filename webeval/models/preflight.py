"""Before any task: the endpoint answers, accepts the key, and serves the model. Otherwise one line says why.

One check for every endpoint the harness calls, the policy's and the judge's. The model list (`GET /models`)
answers all three questions on vLLM, SGLang and hosted APIs; an endpoint without one is asked for a one-token
completion instead. Failures worth another attempt (an endpoint still loading its model answers 503) are retried by
the one retry policy, with the endpoint's own retries.

The check speaks HTTP through the library under the `openai` client (same proxies, same TLS settings), not through
the client itself: importing `openai` costs 0.6-0.8 s of CPU, and the controller would spend it before any worker
starts, on a run whose workers import it anyway.
"""

from __future__ import annotations

from typing import Any, Callable

from webeval.models.endpoint import Endpoint, http_library
from webeval.models.exchange import message_of
from webeval.models.retry import GaveUp, Transient, is_retried, retry_after

PREFLIGHT_TIMEOUT_S = 30.0


class PreflightError(Exception):
    """The endpoint cannot serve this run; the message is one line for the user, with no secret in it."""


def chat_probe(model: str, max_tokens_param: str = "max_tokens") -> tuple[str, dict[str, Any]]:
    """The smallest chat completion: what an endpoint without a model list is asked instead."""
    return "chat/completions", {"model": model, "messages": [{"role": "user", "content": "Reply with OK."}],
                                max_tokens_param: 1}


def preflight(endpoint: Endpoint, role: str, probe: tuple[str, dict[str, Any]] | None = None) -> None:
    """Check the endpoint of the `role` ("policy", "judge"); `probe` is the (path, body) of the one-token request
    that stands in for a model list (a chat completion unless given)."""
    http = http_library()
    where = f"the {role} endpoint {endpoint.base_url}"
    timeout = min(endpoint.timeout_s, PREFLIGHT_TIMEOUT_S)
    with endpoint.blocking_client(timeout) as client:
        def send(method: str, path: str, **kwargs: Any) -> Any:
            return _retried(endpoint, where, timeout, lambda: _attempt(http, client, method, path, **kwargs))

        listing = send("GET", "models")
        _refused(endpoint, where, listing)
        if listing.status_code >= 400 and listing.status_code != 404:
            raise PreflightError(endpoint.redact(f"{where} answered HTTP {listing.status_code}: {_said(listing)}"))
        served = _model_ids(listing)
        if served is None:  # no model list here: a tiny completion answers the same questions
            path, body = probe or chat_probe(endpoint.model)
            completion = send("POST", path, json=body)
            _refused(endpoint, where, completion)
            if completion.status_code == 404:
                raise PreflightError(endpoint.redact(f"{where} does not serve model {endpoint.model!r}: HTTP 404: "
                                                     f"{_said(completion)}"))
            if completion.status_code >= 400:
                raise PreflightError(endpoint.redact(f"{where} answered HTTP {completion.status_code}: "
                                                     f"{_said(completion)}"))
            return
    if endpoint.model not in served:
        listed = ", ".join(served[:10]) + (" ..." if len(served) > 10 else "") if served else "nothing"
        raise PreflightError(endpoint.redact(f"{where} does not serve model {endpoint.model!r}; it serves: {listed}"))


class _Retryable(Transient):
    """A 429 or 5xx answer, kept so that the last one can be reported as it was."""

    def __init__(self, response: Any) -> None:
        super().__init__(f"HTTP {response.status_code}", "http", retry_after(response.headers))
        self.response = response


def _attempt(http: Any, client: Any, method: str, path: str, **kwargs: Any) -> Any:
    try:
        response = client.request(method, path, **kwargs)
    except http.TimeoutException:
        raise Transient("no reply", "timeout") from None
    except http.TransportError as exc:
        raise Transient(str(exc), "connection") from None
    if is_retried(response.status_code):
        raise _Retryable(response)
    return response


def _retried(endpoint: Endpoint, where: str, timeout: float, attempt: Callable[[], Any]) -> Any:
    """The attempt under the one retry policy; past it, the last answer (a 429 or 5xx) or why there was none."""
    try:
        return endpoint.retrying.call_blocking(attempt)
    except GaveUp as exc:
        if isinstance(exc.last, _Retryable):
            return exc.last.response
        if exc.cause == "timeout":
            raise PreflightError(f"{where} did not answer within {timeout:g} s") from None
        raise PreflightError(endpoint.redact(f"{where} is unreachable: {exc.last.problem}")) from None


def _refused(endpoint: Endpoint, where: str, response: Any) -> None:
    if response.status_code not in (401, 403):
        return
    variable = f" from ${endpoint.api_key_env}" if endpoint.api_key_env else ""
    unset = f" (${endpoint.api_key_env} is not set)" if endpoint.api_key_env and not endpoint.api_key else ""
    raise PreflightError(endpoint.redact(f"{where} refused the API key{variable}{unset}: HTTP "
                                         f"{response.status_code}: {_said(response)}"))


def _said(response: Any) -> str:
    try:
        body = response.json()
    except ValueError:
        body = None
    return message_of(body, response.text, response.reason_phrase)


def _model_ids(response: Any) -> list[str] | None:
    """The served model ids; None when the endpoint has no model list (404, or an answer that is not one)."""
    if response.status_code == 404:
        return None
    try:
        data = response.json().get("data")
        return [str(model["id"]) for model in data]
    except (ValueError, AttributeError, TypeError, KeyError):
        return None

