"""A worker's browser from elsewhere: connected over CDP (`cdp=URL`) or to a Playwright server (`playwright=WS`),
headless, with no display of its own. Each task's session holds a lease, renewed by heartbeat; a worker reaps the
lapsed leases of its endpoint before each task. Liveness is the connection's state and a bounded CDP round trip."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any, Awaitable, TypeVar

from playwright.async_api import Browser as PwBrowser
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Playwright, async_playwright

from webeval.outcomes.record import InfraError
from webeval.runtime.aio import run_watched
from webeval.runtime.browser import BROWSER_CLOSE_S, CONTEXT_OPEN_S, DRIVER_START_S, QUIET_FLAGS, find_chromium
from webeval.runtime.devices import PageInput, PageObserver, Screen
from webeval.runtime.downloads import DEFAULT_MAX_BYTES
from webeval.runtime.leases import Lease, Leases
from webeval.runtime.providers import Provider
from webeval.runtime.session import TaskSession, close_context, responds

T = TypeVar("T")
CONNECT_S = 30.0  # a Playwright server launches a browser for each connection: 1-5 s here
WATCH_EVERY_S = 0.5
PROBE_EVERY_S = 2.0  # a CDP round trip to the remote browser: a few ms on a LAN
RESPONDS_S = 5.0


class LeasedSession(TaskSession):
    """A task's session on a remote browser: its viewport is the screen (no window to place), and its lease is
    renewed while it is open and released when it closes."""

    lease: Lease | None = None
    _heartbeat: asyncio.Task | None = None

    async def place(self, page) -> None:
        await self._raise(page)

    def hold(self, lease: Lease) -> None:
        self.lease = lease
        self._heartbeat = asyncio.ensure_future(lease.heartbeat())

    async def close(self) -> bool:
        try:
            return await super().close()
        finally:
            if self._heartbeat is not None:
                self._heartbeat.cancel()
                await asyncio.gather(self._heartbeat, return_exceptions=True)
            if self.lease is not None:
                self.lease.release()


async def _context_id(session: TaskSession) -> str:
    """The CDP id of the session's browser context, which a reaper needs to close it."""
    cdp = await session.context.new_cdp_session(session.require_active())
    try:
        info = await cdp.send("Target.getTargetInfo")
        return info["targetInfo"].get("browserContextId", "")
    finally:
        await cdp.detach()


class RemoteBrowser:
    """One connection to the endpoint (for a Playwright server: one browser it launched for this worker)."""

    browser_pid = None

    def __init__(self, pw: Playwright, provider: Provider, screen: Screen, leases: Leases | None,
                 executable: str | None) -> None:
        self.provider, self.screen, self.leases, self.executable = provider, screen, leases, executable
        self.launched_s = 0.0
        self._pw = pw
        self._browser: PwBrowser | None = None
        self.sessions: list[LeasedSession] = []

    def _launch_options(self) -> dict[str, Any]:
        """What a Playwright server launches for this worker. A server started without --unsafe keeps its own
        browser and arguments: it drops executablePath and args."""
        args = [*QUIET_FLAGS, *(["--no-sandbox"] if os.geteuid() == 0 else [])]
        return {"headless": True, "args": args, **({"executablePath": self.executable} if self.executable else {})}

    async def launch(self) -> "RemoteBrowser":
        began = time.monotonic()
        try:
            chromium = self._pw.chromium
            if self.provider.kind == "cdp":
                self._browser = await chromium.connect_over_cdp(self.provider.endpoint, timeout=CONNECT_S * 1000)
            else:
                headers = {"x-playwright-launch-options": json.dumps(self._launch_options())}
                self._browser = await chromium.connect(self.provider.endpoint, timeout=CONNECT_S * 1000,
                                                       headers=headers)
        except (PlaywrightError, asyncio.TimeoutError, OSError) as exc:
            what = str(exc).splitlines()[0] if str(exc) else f"no answer within {CONNECT_S:g} s"
            raise InfraError("browser", f"could not connect to the {self.provider.kind} browser endpoint: "
                                        f"{what.replace(self.provider.endpoint, '<endpoint>')}") from None
        self.launched_s = time.monotonic() - began
        return self

    @property
    def alive(self) -> bool:
        return self._browser is not None and self._browser.is_connected()

    def dead_part(self) -> str | None:
        if not self.alive:
            return "browser"
        if any(s.lease is not None and s.lease.lost for s in self.sessions):
            return "browser_lease"
        return None

    async def responds(self, timeout_s: float = RESPONDS_S) -> bool:
        return await responds(self._browser, timeout_s)

    @property
    def version(self) -> str:
        return self._browser.version if self._browser else ""

    async def reap(self) -> list[dict[str, Any]]:
        """Close the sessions of this endpoint whose lease lapsed (their holder died or hangs)."""
        if self.leases is None or not self.alive:
            return []

        async def dispose(lease: dict[str, Any]) -> None:
            if lease.get("context"):
                with contextlib.suppress(PlaywrightError, asyncio.TimeoutError):
                    cdp = await asyncio.wait_for(self._browser.new_browser_cdp_session(), RESPONDS_S)
                    await asyncio.wait_for(cdp.send("Target.disposeBrowserContext",
                                                    {"browserContextId": lease["context"]}), RESPONDS_S)
                    await cdp.detach()

        return await self.leases.reap(self.provider.endpoint, dispose)

    async def new_session(self, folder: Path, settle_cap_s: float = 3.0, proxy: dict[str, str] | None = None,
                          download_max_bytes: int = DEFAULT_MAX_BYTES) -> TaskSession:
        if not self.alive:
            raise InfraError("browser", "the remote browser is not connected")
        context, session = None, None
        try:
            async with asyncio.timeout(CONTEXT_OPEN_S):
                size = {"width": self.screen.width, "height": self.screen.height}
                context = await self._browser.new_context(viewport=size, accept_downloads=True, proxy=proxy)
                session = await LeasedSession.open(context, self.screen, folder, settle_cap_s, download_max_bytes)
                if self.leases is not None:
                    session.hold(self.leases.acquire(self.provider.endpoint, context=await _context_id(session)))
                self.sessions = [s for s in self.sessions if s.lease is None or s.lease.path.exists()] + [session]
                return session
        except (PlaywrightError, TimeoutError) as exc:
            if session is not None:
                await session.close()
            elif context is not None:
                await close_context(context)
            if self.alive and not isinstance(exc, TimeoutError) and await self.responds():
                raise
            raise InfraError("browser", "could not open a context on the remote browser: it is gone or "
                                        "does not answer") from None

    async def close(self) -> None:
        if self._browser is not None:
            with contextlib.suppress(PlaywrightError, asyncio.TimeoutError):
                await asyncio.wait_for(self._browser.close(), BROWSER_CLOSE_S)
            self._browser = None


class RemoteSlot:
    """A slot whose browser is elsewhere: no display, input and observation by CDP."""

    display = None

    def __init__(self, width: int, height: int, provider: Provider, leases: Leases | None,
                 browser_path: str | None = None) -> None:
        self.screen = Screen(width, height)
        self.provider, self.leases = provider, leases
        self.executable = find_chromium(browser_path)
        self.browser: RemoteBrowser | None = None
        self.restarts = 0
        self._manager = None
        self._pw: Playwright | None = None

    async def _driver(self) -> Playwright:
        """Playwright's driver, started once: an endpoint that went away is connected to again through it."""
        if self._pw is None:
            self._manager = async_playwright()
            try:
                self._pw = await asyncio.wait_for(self._manager.start(), DRIVER_START_S)
            except Exception as exc:  # the driver's own start raises a bare Exception when it dies on the way
                self._manager = None
                raise InfraError("driver", f"Playwright's driver did not start: {exc!r}") from None
        return self._pw

    async def ready(self) -> "RemoteSlot":
        if self.browser is None or self.browser.dead_part() == "browser" or not await self.browser.responds():
            if self.browser is not None:
                self.restarts += 1
                await self.browser.close()
                self.browser = None
            pw = await self._driver()
            self.browser = await RemoteBrowser(pw, self.provider, self.screen, self.leases, self.executable).launch()
        await self.browser.reap()
        return self

    def input_for(self, session: TaskSession) -> PageInput:
        return PageInput(session)

    def observer_for(self, session: TaskSession) -> PageObserver:
        return PageObserver(session)

    def dead_part(self) -> str | None:
        return self.browser.dead_part() if self.browser is not None else "browser"

    async def failure(self) -> InfraError | None:
        dead = self.dead_part()
        if dead is None and not await self.browser.responds():
            dead = "browser_unresponsive"
        return InfraError(dead, _GONE[dead]) if dead else None

    async def watched(self, work: Awaitable[T]) -> T:
        """Run `work`, cancelled as soon as the connection drops, the lease is lost or a round trip goes unanswered."""
        probe: asyncio.Future | None = None
        next_probe = time.monotonic() + PROBE_EVERY_S

        def lost() -> InfraError | None:
            nonlocal probe, next_probe
            dead = self.dead_part()
            if dead is None and probe is not None and probe.done() and not probe.result():
                dead = "browser_unresponsive"
            if dead is not None:
                return InfraError(dead, _GONE[dead])
            if (probe is None or probe.done()) and time.monotonic() >= next_probe:
                probe = asyncio.ensure_future(self.browser.responds(RESPONDS_S))
                next_probe = time.monotonic() + PROBE_EVERY_S
            return None

        try:
            return (await run_watched(work, lost, WATCH_EVERY_S, RESPONDS_S)).result()
        finally:
            if probe is not None and not probe.done():
                probe.cancel()

    async def close(self) -> None:
        if self.browser is not None:
            await self.browser.close()
            self.browser = None
        if self._pw is not None:
            with contextlib.suppress(PlaywrightError, asyncio.TimeoutError):
                await asyncio.wait_for(self._pw.stop(), BROWSER_CLOSE_S)
            self._pw = None


_GONE = {
    "browser": "the connection to the remote browser was lost",
    "browser_lease": "the session's lease lapsed and was reaped",
    "browser_unresponsive": f"the remote browser did not answer within {RESPONDS_S:g} s",
}
