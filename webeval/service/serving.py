"""`webeval serve`: one suite's rollout service on uvicorn, until it is interrupted.

The slots start before the socket takes requests; then one line on stdout says where the service listens
(`webeval serve: listening on http://HOST:PORT ...`), which is what a script waits for. SIGINT and SIGTERM end it
(exit 0): the sessions still running are masked `interrupted`, the slots closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import uvicorn

from webeval.outcomes.redact import redact
from webeval.policy.openai import Profile, load_profile
from webeval.policy.openai.profile import ProfileError
from webeval.policy.oracle import oracle
from webeval.rollouts import EngineStopped
from webeval.rollouts.model_policies import ModelPolicies
from webeval.service.access import bearer_token
from webeval.service.http_app import build_app
from webeval.service.rollout_service import RolloutService, RunPolicy, ServiceSettings
from webeval.service.suite_sources import open_suite

POLICIES = ("oracle", "openai")
LOG = logging.getLogger("webeval.service")


class ServeError(ValueError):
    """The service cannot start as asked; one line."""


@dataclass(frozen=True)
class PolicyOptions:
    name: str | None = None
    profile: str | None = None
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    token_ids: bool = True
    history: str = "append-only"


def run_policy(options: PolicyOptions, default: str | None, screen: tuple[int, int]) -> RunPolicy | None:
    """What runs whole episodes (/run): the oracle, a model endpoint through ModelPolicies, or nothing."""
    name = options.name or default
    if name is None:
        return None
    if name not in POLICIES:
        raise ServeError(f"--policy {name!r}: the service runs episodes with one of {', '.join(POLICIES)}")
    if name == "oracle":
        return lambda request: oracle
    overrides = {"base_url": options.base_url, "model": options.model, "api_key_env": options.api_key_env}
    reference: Path | str | None = options.profile
    if reference is not None and Path(reference).suffix in (".toml", ".json"):
        reference = Path(reference)
    try:
        profile: Profile = load_profile(reference, overrides)
    except ProfileError as exc:
        raise ServeError(str(exc)) from None
    return ModelPolicies(profile, screen, token_ids=options.token_ids, history=options.history)


class _Server(uvicorn.Server):
    """uvicorn's server, except that a SIGINT or SIGTERM that stopped it is not raised again once it has stopped:
    the sessions and slots are closed after it (a re-raised SIGTERM would kill the process first, leaving Xvfb and
    Chromium behind), and the command then exits 0."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        original = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in original.items():
                signal.signal(sig, handler)


def _redacting_logs() -> None:
    """Every log record is redacted as it is made, whoever handles it (uvicorn's access and error logs too)."""
    made = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = made(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad format is the logging module's to report
            return record
        masked = redact(message)
        if masked != message:
            record.msg, record.args = masked, ()
        if record.exc_info and record.exc_info[0] is not None:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        return record

    logging.setLogRecordFactory(factory)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")


def _socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # The protocol named: asyncio sets TCP_NODELAY only on sockets that say they are TCP, and without it a response
    # written as headers then body waits out the client's delayed ACK (40 ms) on every request.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(2048)
    sock.setblocking(False)
    return sock


async def serve(suite: str, settings: ServiceSettings, policy: PolicyOptions, *, host: str, port: int, out: Path,
                token_env: str | None, max_body: int) -> None:
    token = bearer_token(host, token_env, os.environ)  # AccessError: refuse before anything starts
    sock = _socket(host, port)
    _redacting_logs()
    try:
        async with open_suite(suite, policy.name) as source:
            service = RolloutService(source, out, settings, run_policy(policy, source.default_policy, settings.screen))
            try:
                await service.start()
            except EngineStopped as exc:
                raise ServeError(str(exc)) from None
            try:
                app = build_app(service, token=token, max_body=max_body)
                config = uvicorn.Config(app, log_config=None, access_log=True, timeout_graceful_shutdown=10,
                                        limit_concurrency=4096, backlog=2048)
                server = _Server(config)
                listening = sock.getsockname()
                print(f"webeval serve: listening on http://{_host(listening[0])}:{listening[1]} (suite {suite}, "
                      f"{settings.slots} slots, collection {out})", flush=True)
                await server.serve(sockets=[sock])
            finally:
                await service.close()
    finally:
        sock.close()


def _host(address: str) -> str:
    return f"[{address}]" if ":" in address else address


def run_serve(suite: str, settings: ServiceSettings, policy: PolicyOptions, **where: Any) -> None:
    asyncio.run(serve(suite, settings, policy, **where))
