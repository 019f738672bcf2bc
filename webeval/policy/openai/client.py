"""The model call (chat completions, or the Responses API): one request body in, the reply body out, with a
per-call timeout and bounded retries.

429 (honouring Retry-After), 5xx, connection errors and timeouts are retried with a doubling backoff, then they are
infrastructure (`policy_unavailable`); 401/403 is a misconfiguration that stops the session; other HTTP errors are
not retried. No message built here ever contains the API key.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import json
import ssl
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Protocol

from webeval.outcomes.cost import read_usage
from webeval.outcomes.record import InfraError
from webeval.outcomes.redact import PLACEHOLDER, declare, redact
from webeval.policy.openai.profile import Profile

if TYPE_CHECKING:  # imported where a client is made: `openai` costs 0.6 s of CPU, and an oracle run never needs it
    import openai

_NO_KEY = PLACEHOLDER  # vLLM and SGLang accept any key; the client refuses an empty one
MAX_REPLY_BYTES = 2 << 20  # a reasoning model's longest turn is a few hundred kB
KEPT_BYTES = 64 << 10  # of a reply too large to be one, what the trajectory keeps


class PolicyAuthError(InfraError):
    """The endpoint refused the credentials (401/403): every task would fail the same way, so the session stops."""

    def __init__(self, message: str) -> None:
        super().__init__("policy_auth", message)


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


class Transport(Protocol):
    async def complete(self, body: dict[str, Any]) -> Exchange: ...

    async def close(self) -> None: ...


def api_key_from(environ: dict[str, str] | Any, profile: Profile) -> str:
    """The key from the profile's variable (declared a secret), or the placeholder when it is not set."""
    key = environ.get(profile.api_key_env)
    declare(key)
    return key or _NO_KEY


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


def retry_after(headers: Any) -> float | None:
    """Seconds the server asked us to wait (retry-after-ms, Retry-After as seconds or as an HTTP date)."""
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    try:
        if millis is not None:
            return max(0.0, float(millis) / 1000)
    except ValueError:
        pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value.strip() else None
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


def server_message(exc: openai.APIStatusError) -> str:
    """What the server said about an HTTP error, cut short."""
    return message_of(exc.body, exc.response.text, exc.response.reason_phrase)


def message_of(body: Any, text: str, reason: str) -> str:
    """The error message of an error body (`{"error": {"message": ...}}` and its variants), else the text."""
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else inner
        if message:
            return str(message)[:300]
    return (text or reason or "")[:300]


@functools.cache
def tls() -> ssl.SSLContext:
    """The TLS settings the client would make (CA bundle included), made once: each task opens its own client, and
    loading the CA bundle again costs 30-40 ms of CPU."""
    try:
        from httpx2 import create_ssl_context
    except ImportError:  # pragma: no cover - older openai
        from httpx import create_ssl_context
    return create_ssl_context()


class HttpTransport:
    """Model calls over the real `openai.AsyncOpenAI` client; its own retries are off so ours are counted."""

    def __init__(self, profile: Profile, api_key: str,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        import openai

        try:  # the HTTP library under the openai client: httpx2 from openai 3 on, httpx before
            from openai import DefaultAsyncHttpx2Client as HttpClient
        except ImportError:  # pragma: no cover - older openai
            from openai import DefaultAsyncHttpxClient as HttpClient

        self.profile = profile
        self.path = "/responses" if profile.api == "responses" else "/chat/completions"
        self._secrets = (api_key,)
        self._sleep = sleep
        self._client = openai.AsyncOpenAI(base_url=profile.base_url, api_key=api_key, max_retries=0,
                                          timeout=profile.timeout_s, http_client=HttpClient(verify=tls()))

    def _where(self) -> str:
        return f"model {self.profile.model} at {self.profile.base_url}"

    def _clean(self, text: str) -> str:
        return redact(text, *self._secrets)

    async def complete(self, body: dict[str, Any]) -> Exchange:
        import openai

        try:  # the HTTP library under the openai client: httpx2 from openai 3 on, httpx before
            from httpx2 import Response
        except ImportError:  # pragma: no cover - older openai
            from httpx import Response
        profile = self.profile
        began = time.monotonic()
        errors: list[str] = []
        backoff = profile.backoff_s
        while True:
            try:
                # The client's documented raw request: the body goes out exactly as built (and as recorded).
                # The client's timeout bounds each read; this bounds the whole reply, however slowly it trickles.
                raw = await asyncio.wait_for(self._client.post(self.path, body=body, cast_to=Response),
                                             profile.timeout_s)
                text, unreadable = body_text(raw.content)
                reply, unreadable = (None, unreadable) if unreadable else parse_reply(text)
                return Exchange(text=text, reply=reply, unreadable=unreadable, retries=len(errors),
                                latency_s=time.monotonic() - began, errors=errors)
            except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
                raise PolicyAuthError(self._clean(
                    f"{self._where()} refused the API key from ${profile.api_key_env} (HTTP {exc.status_code}): "
                    f"{server_message(exc)}")) from None
            except openai.APIStatusError as exc:
                problem = self._clean(f"HTTP {exc.status_code}: {server_message(exc)}")
                if exc.status_code != 429 and exc.status_code < 500:
                    raise InfraError("policy_request", f"{self._where()} rejected the request: {problem}") from None
                asked = retry_after(exc.response.headers)
            except (openai.APITimeoutError, asyncio.TimeoutError):
                problem, asked = f"no reply within {profile.timeout_s:g} s", None
            except openai.APIConnectionError as exc:
                problem, asked = self._clean(f"connection failed: {exc.__cause__ or exc}"), None
            errors.append(problem)
            if len(errors) > profile.retries:
                tries = f"{len(errors)} attempt{'s' if len(errors) > 1 else ''}"
                raise InfraError("policy_unavailable", f"{self._where()}: {problem} ({tries})")
            wait = min(backoff, profile.max_wait_s)
            if asked is not None:
                if asked > profile.max_wait_s:
                    raise InfraError("policy_unavailable", f"{self._where()}: {problem}; it asked to wait "
                                                           f"{asked:g} s, more than max_wait_s {profile.max_wait_s:g}")
                wait = asked
            backoff = backoff * 2 if backoff else 0.0
            await self._sleep(wait)

    async def close(self) -> None:
        await self._client.close()


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
