"""One call to a model endpoint: a request body posted exactly as built, the reply body back as received, every
attempt bounded by the endpoint's timeout (the whole reply, however slowly it trickles) and retried by the one
policy.

What ends a call is one of three errors, each one line with no secret in it: `EndpointRefused` (401/403: the key;
every later call would fail the same way), `EndpointRejected` (any other 4xx: this request), `EndpointUnavailable`
(429, 5xx, connection failures and timeouts after the retries). A reply that arrives but cannot be read is no
error here: the `Exchange` says why, and the caller decides what that means.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from webeval.models.endpoint import Endpoint, http_library
from webeval.models.retry import Cause, GaveUp, Transient, is_retried, retry_after
from webeval.outcomes.cost import read_usage

if TYPE_CHECKING:
    import openai

MAX_REPLY_BYTES = 2 << 20  # a reasoning model's longest turn is a few hundred kB
KEPT_BYTES = 64 << 10  # of a reply too large to be one, what the trajectory keeps


class EndpointError(Exception):
    """A call that ended without a reply; the message is one line for the user, with no secret in it."""


class EndpointRefused(EndpointError):
    """401/403: the endpoint refused the key."""


class EndpointRejected(EndpointError):
    """Another 4xx: the endpoint refused this request; trying it again cannot help."""


class EndpointUnavailable(EndpointError):
    """429, 5xx, connection failures or timeouts, after the retries."""

    def __init__(self, message: str, cause: Cause) -> None:
        super().__init__(message)
        self.cause = cause


@dataclass
class Exchange:
    text: str  # the reply body exactly as received
    reply: dict[str, Any] | None  # the reply body, parsed; None when it is not a JSON object
    unreadable: str | None = None  # why it could not be parsed
    retries: int = 0
    latency_s: float = 0.0
    errors: list[str] = field(default_factory=list)  # what went wrong on the attempts that were retried

    @property
    def usage(self) -> dict[str, int]:
        """Tokens of the call: prompt (cached included) and completion (reasoning included) as reported, and cached
        and reasoning where the usage's details report them."""
        return read_usage((self.reply or {}).get("usage"))


def body_text(content: bytes) -> tuple[str, str | None]:
    """A reply body as text, and why it is no reply: larger than any reply should be, or not UTF-8 (JSON is). The
    text of an oversized body is cut, so that the trajectory that keeps it stays readable."""
    if len(content) > MAX_REPLY_BYTES:
        return (content[:KEPT_BYTES].decode("utf-8", "replace"),
                f"the endpoint's reply is {len(content)} bytes, more than the {MAX_REPLY_BYTES} a reply may be")
    try:
        return content.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return (content.decode("utf-8", "replace"),
                f"the endpoint's reply is not UTF-8 (byte {content[exc.start]:#04x} at offset {exc.start})")


def parse_reply(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """The reply body as a JSON object, or why it is not one."""
    try:
        reply = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"the endpoint's reply is not JSON ({exc.msg} at column {exc.colno}): {text[:120]!r}"
    except RecursionError:
        return None, "the endpoint's reply is JSON nested too deeply to read"
    if not isinstance(reply, dict):
        return None, f"the endpoint's reply is not a JSON object: {text[:120]!r}"
    return reply, None


def message_of(body: Any, text: str, reason: str) -> str:
    """The error message of an error body (`{"error": {"message": ...}}` and its variants), else the text."""
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else inner
        if message:
            return str(message)[:300]
    return (text or reason or "")[:300]


def _server_message(exc: openai.APIStatusError) -> str:
    return message_of(exc.body, exc.response.text, exc.response.reason_phrase)


class ModelClient:
    """Calls to one endpoint over the real `openai` client. `role` names the endpoint in messages ("model",
    "judge"); `sleep` is the wait between attempts."""

    def __init__(self, endpoint: Endpoint, role: str,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.endpoint = endpoint
        self.where = f"{role} {endpoint.model} at {endpoint.base_url}"
        self._sleep = sleep
        self._client = endpoint.client()

    async def post(self, path: str, body: dict[str, Any]) -> Exchange:
        began = time.monotonic()
        try:
            (text, reply, unreadable), errors = await self.endpoint.retrying.call(
                lambda: self._attempt(path, body), self._sleep)
        except GaveUp as exc:
            raise EndpointUnavailable(f"{self.where}: {exc}", exc.cause) from None
        return Exchange(text=text, reply=reply, unreadable=unreadable, retries=len(errors),
                        latency_s=time.monotonic() - began, errors=errors)

    async def _attempt(self, path: str, body: dict[str, Any]) -> tuple[str, dict[str, Any] | None, str | None]:
        import openai

        endpoint = self.endpoint
        try:
            # The client's documented raw request: the body goes out exactly as built (and as recorded).
            # The client's timeout bounds each read; this bounds the whole reply, however slowly it trickles.
            raw = await asyncio.wait_for(self._client.post(path, body=body, cast_to=http_library().Response),
                                         endpoint.timeout_s)
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            variable = f" from ${endpoint.api_key_env}" if endpoint.api_key_env else ""
            raise EndpointRefused(endpoint.redact(f"{self.where} refused the API key{variable} (HTTP "
                                                  f"{exc.status_code}): {_server_message(exc)}")) from None
        except openai.APIStatusError as exc:
            problem = endpoint.redact(f"HTTP {exc.status_code}: {_server_message(exc)}")
            if not is_retried(exc.status_code):
                raise EndpointRejected(f"{self.where} rejected the request: {problem}") from None
            raise Transient(problem, "http", retry_after(exc.response.headers)) from None
        except (openai.APITimeoutError, asyncio.TimeoutError):
            raise Transient(f"no reply within {endpoint.timeout_s:g} s", "timeout") from None
        except openai.APIConnectionError as exc:
            raise Transient(endpoint.redact(f"connection failed: {exc.__cause__ or exc}"), "connection") from None
        text, unreadable = body_text(raw.content)
        reply, unreadable = (None, unreadable) if unreadable else parse_reply(text)
        return text, reply, unreadable

    async def close(self) -> None:
        await self._client.close()
