"""The rollout service in a test: a real uvicorn server on 127.0.0.1 over a real engine with real slots, reached
with real HTTP clients; and the offline suite as its task source."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass
from http.cookiejar import CookieJar, DefaultCookiePolicy
from pathlib import Path
from typing import AsyncIterator

import httpx
import uvicorn

from webeval.benchmarks import open_benchmark
from webeval.service import RolloutService, ServiceSettings, build_app
from webeval.service.access import COOKIE
from webeval.service.http_thread import HttpThread


def local_tasks():
    """The offline benchmark, opened (its sites served): the engine's task source."""
    return open_benchmark("local")


@dataclass
class Served:
    url: str
    service: RolloutService

    def client(self, **headers: str) -> httpx.AsyncClient:
        """A client that keeps no cookies: each request sends the session cookie it is given, or none."""
        jar = CookieJar(DefaultCookiePolicy(allowed_domains=[]))
        return httpx.AsyncClient(base_url=self.url, timeout=120, headers=headers, cookies=jar)

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])


@asynccontextmanager
async def serving(source, folder: Path, settings: ServiceSettings, run_policy=None, *, token: str | None = None,
                  max_body: int = 1 << 20) -> AsyncIterator[Served]:
    service = RolloutService(source, folder, settings, run_policy)
    await service.start()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # TCP named: asyncio sets NODELAY
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    sock.setblocking(False)
    server = uvicorn.Server(uvicorn.Config(build_app(service, token=token, max_body=max_body), log_config=None,
                                           access_log=False, timeout_graceful_shutdown=5))
    http = HttpThread(server, sock)  # as `webeval serve` runs it: HTTP on a thread of its own, the engine here
    try:
        await http.start()
        yield Served(f"http://127.0.0.1:{sock.getsockname()[1]}", service)
    finally:
        await http.stop()
        await service.close()
        sock.close()


def cookie_of(response: httpx.Response) -> dict[str, str]:
    """The session's cookie as a header, so that one client can hold several sessions."""
    return {"Cookie": f"{COOKIE}={response.cookies[COOKIE]}"}


async def seed(client: httpx.AsyncClient, task_id: str, **fields) -> tuple[dict[str, str], dict]:
    answer = await client.post("/seed_session", json={"task_id": task_id, **fields})
    assert answer.status_code == 200, answer.text
    return cookie_of(answer), answer.json()


async def until(check, bound_s: float, what: str, every_s: float = 0.1):
    """Poll `check` (sync or async) until it returns something true, within `bound_s`."""
    began = time.monotonic()
    while True:
        found = check()
        if asyncio.iscoroutine(found):
            found = await found
        if found:
            return found
        assert time.monotonic() - began < bound_s, f"{what} within {bound_s:g} s"
        await asyncio.sleep(every_s)


def records(folder: Path) -> dict[str, dict]:
    path = folder / "rollouts.jsonl"
    if not path.exists():
        return {}
    return {line["rollout_id"]: line for line in map(json.loads, path.read_text().splitlines())}


def one_line(response: httpx.Response) -> str:
    detail = response.json()["detail"]
    assert isinstance(detail, str) and detail and "\n" not in detail, response.text
    return detail
