"""Who may call the service, and how much they may send.

- A bearer token on every route when the service listens beyond loopback (`--token-env NAME` names the variable that
  holds it; the service refuses to start on another address without one).
- A cap on request bodies: over it, 413 before the body is read (by its Content-Length) or as soon as the streamed
  bytes pass it.
- Session cookies that only this process can have made: `<session id>.<HMAC of the id under a key made at start>`,
  so a cookie cannot be forged, and one session's cookie names that session only.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import secrets

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from webeval.outcomes.redact import redact

COOKIE = "webeval_session"
MIN_TOKEN_LENGTH = 16


class AccessError(ValueError):
    """The service cannot start as asked (one line: what to do)."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name that is not `localhost` may resolve anywhere


def bearer_token(host: str, token_env: str | None, environ) -> str | None:
    """The token every request must carry, or None on loopback without `--token-env`; AccessError when the service
    must not start: a non-loopback address without a token, or a token that is missing or too short."""
    if token_env is None:
        if not is_loopback(host):
            raise AccessError(f"--host {host} listens beyond this machine: pass --token-env NAME, the environment "
                              "variable holding the bearer token every request must carry")
        return None
    token = environ.get(token_env, "")
    if len(token) < MIN_TOKEN_LENGTH:
        raise AccessError(f"--token-env {token_env}: ${token_env} is {'not set' if not token else 'too short'}; "
                          f"set it to a random token of at least {MIN_TOKEN_LENGTH} characters")
    return token


async def refuse(send: Send, status: int, detail: str, headers: dict[str, str] | None = None) -> None:
    body = redact(json.dumps({"detail": detail})).encode("utf-8")
    extra = [(name.lower().encode(), value.encode()) for name, value in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *extra]})
    await send({"type": "http.response.body", "body": body})


class BearerToken:
    """Every HTTP request carries `Authorization: Bearer <token>`, or is refused with 401."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope["headers"]).get(b"authorization", b"")
        if not hmac.compare_digest(given, self._expected):
            await refuse(send, 401, "missing or wrong bearer token: send Authorization: Bearer <the token in "
                                     "the service's --token-env variable>", {"WWW-Authenticate": "Bearer"})
            return
        await self.app(scope, receive, send)


class BodyTooLarge(HTTPException):
    def __init__(self, limit: int) -> None:
        super().__init__(413, f"the request body is over the service's cap of {limit} bytes (--max-body)")


class BodyCap:
    """Bodies over `limit` bytes are refused with 413, whether their length is declared or streamed."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            await refuse(send, 413, BodyTooLarge(self.limit).detail)
            return
        seen = 0

        async def capped() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise BodyTooLarge(self.limit)
            return message

        await self.app(scope, capped, send)


class CookieSigner:
    """Session cookies: the session's id and a MAC of it under a key that never leaves this process."""

    def __init__(self) -> None:
        self._key = secrets.token_bytes(32)

    def new_id(self) -> str:
        return f"s{secrets.token_hex(12)}"

    def cookie(self, session_id: str) -> str:
        return f"{session_id}.{self._mac(session_id)}"

    def session_of(self, cookie: str) -> str | None:
        """The session id a cookie names, or None when this process did not make it."""
        session_id, dot, mac = cookie.partition(".")
        if not dot or not session_id or not hmac.compare_digest(mac.encode(), self._mac(session_id).encode()):
            return None
        return session_id

    def _mac(self, session_id: str) -> str:
        return hmac.new(self._key, session_id.encode("utf-8"), hashlib.sha256).hexdigest()
