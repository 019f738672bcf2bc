"""`webeval serve`: one suite's rollout service on uvicorn, until it is interrupted.

The slots start before the socket takes requests; then one line on stdout says where the service listens
(`webeval serve: listening on http://HOST:PORT ...`), which is what a script waits for. SIGINT, SIGTERM and SIGHUP
end it (exit 0): the sessions still running are masked `interrupted`, the slots closed. With `--ray ADDRESS` the
slots are the Ray cluster's node actors (placed and started before the socket takes requests, ended with the
service), and this process starts no display or browser of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, AsyncIterator, Mapping

import uvicorn

from webeval.benchmarks import BenchmarkSetup, benchmark_setup, open_benchmark, open_setup
from webeval.flags import OptionError
from webeval.models import PreflightError
from webeval.outcomes.redact import redact_log_records
from webeval.policy.choice import PolicyChoice
from webeval.policy.openai import check_policy_endpoint
from webeval.rollouts import EngineStopped
from webeval.rollouts.interrupts import SIGNALS, stop_on_signals
from webeval.rollouts.model_policies import ModelPolicies
from webeval.service.access import bearer_token
from webeval.service.http_app import build_app
from webeval.service.http_thread import HttpThread
from webeval.service.rollout_service import RolloutService, RunPolicy, ServiceSettings

class ServeError(ValueError):
    """The service cannot start as asked; one line."""


class EndpointDown(ServeError):
    """The policy's endpoint cannot serve (unreachable, refusing the key, not serving the model): every /run would
    be masked, so the service does not start."""


def run_policy(values: Mapping[str, Any], default: str | None, screen: tuple[int, int], *, token_ids: bool,
               history: str) -> tuple[PolicyChoice, RunPolicy | None]:
    """Who acts in whole episodes (/run): the policy options' choice (the benchmark's default policy when none is
    given), and what makes each rollout's policy: a model endpoint through the engine's model policies (token ids,
    the request's sampling and seed), the oracle, or recorded replies; None when there is no policy at all."""
    chosen = dict(values)
    if chosen.get("policy") is None:
        chosen["policy"] = default
    try:
        choice = PolicyChoice.from_values(chosen)
    except OptionError as exc:
        raise ServeError(str(exc)) from None
    if choice.name is None:
        return choice, None
    if choice.dump:
        raise ServeError("--dump-observation is evaluation's: the service keeps every rollout's screenshots and "
                         "trajectory in its collection folder")
    if choice.name == "openai":
        return choice, ModelPolicies(choice.profile, screen, token_ids=token_ids, history=history,
                                     record=choice.record)
    factory = choice.factory(screen)
    return choice, lambda request: factory

def _redacting_logs() -> None:
    """Every log record is redacted as it is made, whoever handles it (uvicorn's access and error logs too)."""
    redact_log_records()
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


@dataclass(frozen=True)
class Listening:
    host: str
    port: int
    out: Path
    token_env: str | None
    max_body: int


@dataclass(frozen=True)
class OnRay:
    """`--ray ADDRESS`: whole episodes on the node actors of the Ray cluster whose head is at `address`
    (webeval.service.ray_episodes); `resubmit_lost`: a /run lost with its actor runs once more on another."""

    address: str
    resubmit_lost: bool = False


async def serve(suite: str, suite_values: Mapping[str, Any], policy_values: Mapping[str, Any],
                settings: ServiceSettings, where: Listening, *, token_ids: bool = True,
                ray: OnRay | None = None) -> None:
    """The benchmark opened, the engine started (or the actors on the Ray cluster), the service on uvicorn until a
    signal ends it."""
    token = bearer_token(where.host, where.token_env, os.environ)  # AccessError: refused before anything starts
    setup = benchmark_setup(suite, suite_values)  # OptionError: a bad suite or suite option
    choice, policy = run_policy(policy_values, setup.default_policy, settings.screen, token_ids=token_ids,
                                history=settings.history or "append-only")
    if ray is not None and policy is None:
        raise ServeError("--ray serves whole episodes (/run) only, and there is no policy for them: pass --policy")
    if choice.name != "openai":
        settings = replace(settings, history=None)  # no model keeps a prompt
    else:
        await _preflight(choice)
    sock = _socket(where.host, where.port)
    _redacting_logs()
    try:
        async with _running(setup, suite_values, choice, policy, replace(settings, suite=suite), where.out, ray,
                            token_ids) as service:
            where_slots = f" on {service.remote.where}" if service.remote is not None else ""
            await _listen(service, sock, token, where, f"suite {suite}, {len(service.engine.slots)} slots"
                                                       f"{where_slots}, /run policy {choice.name or 'none'}")
    finally:
        sock.close()


@contextlib.asynccontextmanager
async def _running(setup: BenchmarkSetup, suite_values: Mapping[str, Any], choice: PolicyChoice,
                   policy: RunPolicy | None, settings: ServiceSettings, out: Path, ray: OnRay | None,
                   token_ids: bool) -> AsyncIterator[RolloutService]:
    """The service started: over the benchmark opened here, or over actors on the Ray cluster (nothing opened here);
    closed when the block ends."""
    values = {**suite_values, "policy": choice.name}
    async with contextlib.AsyncExitStack() as stack:
        if ray is None:
            benchmark = await stack.enter_async_context(open_setup(settings.suite, setup, values))
            service = RolloutService(benchmark, out, settings, policy)
        else:
            service = _on_ray(ray, setup, values, choice, policy, settings, out, token_ids)
        try:
            await service.start()
        except EngineStopped as exc:
            raise ServeError(str(exc)) from None
        stack.push_async_callback(service.close)
        yield service


def _on_ray(ray: OnRay, setup: BenchmarkSetup, values: Mapping[str, Any], choice: PolicyChoice,
            policy: RunPolicy | None, settings: ServiceSettings, out: Path, token_ids: bool) -> RolloutService:
    """The service whose /run goes to actors on the cluster at `ray.address` (joined here if this process is not a
    driver of it yet): each opens the benchmark with `values` and makes its policies on its node."""
    try:
        from webeval.rollouts.ray import ChosenPolicies, RayUnreachable, connect
        from webeval.service.ray_episodes import PopulationTasks, RayEpisodes
    except ImportError:
        raise ServeError("--ray needs Ray on every node: pip install 'pytest-webeval[ray]'") from None
    try:
        connect(ray.address)
    except RayUnreachable as exc:
        raise ServeError(str(exc)) from None
    tasks = PopulationTasks(setup)
    opener = partial(open_benchmark, settings.suite, dict(values), Path.cwd().resolve())
    policies = ChosenPolicies(choice, settings.screen, token_ids, settings.history or "append-only")
    # no step sessions here: a step keeps its own bound, not one raised past a session's time to live
    engine = replace(settings.engine(), budgets=settings.budgets)
    episodes = RayEpisodes(ray.address, Path(out), opener, policies, engine, tasks, resubmit_lost=ray.resubmit_lost)
    return RolloutService(tasks, out, settings, policy, remote=episodes)


async def _preflight(choice: PolicyChoice) -> None:
    """An endpoint that cannot serve would mask every /run: said once, before the service starts."""
    try:
        await asyncio.to_thread(check_policy_endpoint, choice.profile, os.environ)
    except PreflightError as exc:
        raise EndpointDown(str(exc)) from None


async def _listen(service: RolloutService, sock: socket.socket, token: str | None, where: Listening,
                  what: str) -> None:
    """Serve until SIGINT, SIGTERM or SIGHUP (or the HTTP thread ends): uvicorn on a thread of its own, the engine here."""
    app = build_app(service, token=token, max_body=where.max_body)
    config = uvicorn.Config(app, log_config=None, access_log=True, timeout_graceful_shutdown=10,
                            limit_concurrency=4096, backlog=2048)
    http = HttpThread(uvicorn.Server(config), sock)
    stop = asyncio.Event()
    restore = stop_on_signals(stop, (signal.SIGINT, *SIGNALS))
    try:
        await http.start()
        host, port = sock.getsockname()[:2]
        print(f"webeval serve: listening on http://{_host(host)}:{port} ({what}; collection {where.out})", flush=True)
        while http.running and not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 1.0)
    finally:
        restore()
        await http.stop()


def _host(address: str) -> str:
    return f"[{address}]" if ":" in address else address


def run_serve(suite: str, suite_values: Mapping[str, Any], policy_values: Mapping[str, Any],
              settings: ServiceSettings, where: Listening, token_ids: bool = True, ray: OnRay | None = None) -> None:
    asyncio.run(serve(suite, suite_values, policy_values, settings, where, token_ids=token_ids, ray=ray))
