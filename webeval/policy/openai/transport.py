"""The policy's model call (chat completions, or the Responses API): one request body in, the reply body out, over
the one model client (webeval.models), and the session-start check of the policy's endpoint.

Past the retries, 429, 5xx, connection errors and timeouts are infrastructure (`policy_unavailable`); 401/403 is a
misconfiguration that stops the session (`PolicyAuthError`); any other HTTP error is `policy_request`. No message
built here ever contains the API key.
"""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable, Mapping, Protocol

from webeval.models import (
    Endpoint, EndpointRefused, EndpointRejected, EndpointUnavailable, Exchange, ModelClient, chat_probe, preflight,
    read_key,
)
from webeval.outcomes.record import InfraError
from webeval.outcomes.redact import PLACEHOLDER
from webeval.policy.openai.profile import Profile


class PolicyAuthError(InfraError):
    """The endpoint refused the credentials (401/403): every task would fail the same way, so the session stops."""

    def __init__(self, message: str) -> None:
        super().__init__("policy_auth", message)


class Transport(Protocol):
    async def complete(self, body: dict[str, Any]) -> Exchange: ...

    async def close(self) -> None: ...


def api_key_from(environ: Mapping[str, str], profile: Profile) -> str:
    """The key from the profile's variable (declared a secret), or the placeholder when it is not set: vLLM and
    SGLang accept any key, and the client refuses an empty one."""
    return read_key(environ, profile.api_key_env) or PLACEHOLDER


def policy_endpoint(profile: Profile, api_key: str | None) -> Endpoint:
    return Endpoint(base_url=profile.base_url, model=profile.model, api_key=api_key, api_key_env=profile.api_key_env,
                    timeout_s=profile.timeout_s, retries=profile.retries, backoff_s=profile.backoff_s,
                    max_wait_s=profile.max_wait_s)


def check_policy_endpoint(profile: Profile, environ: Mapping[str, str]) -> None:
    """Before any task: the policy's endpoint answers, takes the key and serves the model (else PreflightError)."""
    key = read_key(environ, profile.api_key_env)
    if profile.api == "responses":  # 16 is the Responses API's smallest output limit
        probe = "responses", {"model": profile.model, "input": "Reply with OK.", "max_output_tokens": 16}
    else:
        probe = chat_probe(profile.model, profile.max_tokens_param)
    preflight(policy_endpoint(profile, key), "policy", probe)


class HttpTransport:
    """Model calls to the profile's endpoint."""

    def __init__(self, profile: Profile, api_key: str,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.profile = profile
        self.path = "/responses" if profile.api == "responses" else "/chat/completions"
        self._client = ModelClient(policy_endpoint(profile, api_key), "model", sleep)

    async def complete(self, body: dict[str, Any]) -> Exchange:
        try:
            return await self._client.post(self.path, body)
        except EndpointRefused as exc:
            raise PolicyAuthError(str(exc)) from None
        except EndpointRejected as exc:
            raise InfraError("policy_request", str(exc)) from None
        except EndpointUnavailable as exc:
            raise InfraError("policy_unavailable", str(exc)) from None

    async def close(self) -> None:
        await self._client.close()
