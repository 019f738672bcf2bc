"""Before any task: the endpoint answers, accepts the key, and serves the model. Otherwise one message says why.

The model list (`GET /models`) answers all three on vLLM, SGLang and hosted APIs; an endpoint without it is asked
for a one-token completion instead.

The check speaks HTTP through the library under the openai client (same proxies, same TLS settings), not through
the client itself: importing `openai` costs 0.6-0.8 s of CPU, and the controller would spend it before any worker
starts, on a run whose workers import it anyway.
"""

from __future__ import annotations

import time
from typing import Any, Mapping

from webeval.outcomes.redact import redact
from webeval.policy.openai.client import api_key_from, message_of, tls
from webeval.policy.openai.profile import Profile

_PREFLIGHT_TIMEOUT_S = 30.0


class PreflightError(Exception):
    """The endpoint cannot serve this run; the message is one line for the user, with no secret in it."""


def preflight(profile: Profile, environ: Mapping[str, str]) -> None:
    try:  # the HTTP library under the openai client: httpx2 from openai 3 on, httpx before
        import httpx2 as http
    except ImportError:  # pragma: no cover - older openai
        import httpx as http

    key = api_key_from(environ, profile)
    where = f"the policy endpoint {profile.base_url}"
    timeout = min(profile.timeout_s, _PREFLIGHT_TIMEOUT_S)

    def clean(text: str) -> str:
        return redact(text, key)

    def refused(response: Any) -> PreflightError:
        unset = "" if environ.get(profile.api_key_env) else f" (${profile.api_key_env} is not set)"
        return PreflightError(clean(f"{where} refused the API key from ${profile.api_key_env}{unset}: HTTP "
                                    f"{response.status_code}: {_said(response)}"))

    with http.Client(base_url=profile.base_url.rstrip("/") + "/", headers={"Authorization": f"Bearer {key}"},
                     timeout=timeout, verify=tls()) as client:
        def send(method: str, path: str, **kwargs: Any) -> Any:
            """The policy's retries: connection failures, timeouts, 429 and 5xx, with a doubling backoff."""
            wait, tries = profile.backoff_s, profile.retries
            while True:
                try:
                    response = client.request(method, path, **kwargs)
                    if tries == 0 or not (response.status_code == 429 or response.status_code >= 500):
                        return response
                except http.TimeoutException:
                    if tries == 0:
                        raise PreflightError(f"{where} did not answer within {timeout:g} s") from None
                except http.TransportError as exc:
                    if tries == 0:
                        raise PreflightError(clean(f"cannot reach {where}: {exc}")) from None
                time.sleep(min(wait, profile.max_wait_s))
                wait, tries = wait * 2, tries - 1

        listing = send("GET", "models")
        if listing.status_code in (401, 403):
            raise refused(listing)
        if listing.status_code >= 400 and listing.status_code != 404:
            raise PreflightError(clean(f"{where} answered HTTP {listing.status_code}: {_said(listing)}"))
        served = _model_ids(listing)
        if served is None:  # no model list here: a tiny completion answers the same questions
            path, body = _tiny_request(profile)
            completion = send("POST", path, json=body)
            if completion.status_code in (401, 403):
                raise refused(completion)
            if completion.status_code == 404:
                raise PreflightError(clean(f"{where} does not serve model {profile.model!r}: HTTP 404: "
                                           f"{_said(completion)}"))
            if completion.status_code >= 400:
                raise PreflightError(clean(f"{where} answered HTTP {completion.status_code}: {_said(completion)}"))
            return
    if profile.model not in served:
        listed = ", ".join(served[:10]) + (" ..." if len(served) > 10 else "") if served else "nothing"
        raise PreflightError(clean(f"{where} does not serve model {profile.model!r}; it serves: {listed}"))


def _tiny_request(profile: Profile) -> tuple[str, dict[str, Any]]:
    if profile.api == "responses":  # 16 is the Responses API's smallest output limit
        return "responses", {"model": profile.model, "input": "Reply with OK.", "max_output_tokens": 16}
    return "chat/completions", {"model": profile.model, "messages": [{"role": "user", "content": "Reply with OK."}],
                                profile.max_tokens_param: 1}


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
