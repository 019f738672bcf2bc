"""Session fixtures: each worker process gets its own display, browser and input device."""

from __future__ import annotations

import asyncio
import os

import pytest

from webeval.outcomes.record import InfraError
from webeval.runtime.browser import Browser, find_chromium
from webeval.runtime.display import Display
from webeval.runtime.input import VisibleInput


class WorkerRuntime:
    """The display and browser of one worker; both are started again if they died between tests."""

    def __init__(self, width: int, height: int, browser_path: str | None) -> None:
        self.width, self.height = width, height
        self.executable = find_chromium(browser_path)
        self.display: Display | None = None
        self.browser: Browser | None = None
        self.device: VisibleInput | None = None
        self.restarts = 0

    async def ready(self) -> "WorkerRuntime":
        fresh: Browser | None = None
        if self.display is None or not self.display.alive:
            await self._close_browser()
            if self.display is not None:
                self.display.stop()
                self.restarts += 1
            display = Display(self.width, self.height)
            # Xvfb and Playwright's driver start side by side: the driver needs no display.
            fresh = Browser(display, self.executable)
            driver = asyncio.ensure_future(fresh.start_driver())
            try:
                await asyncio.to_thread(display.start)
                await driver
            except BaseException:
                await asyncio.gather(driver, return_exceptions=True)
                await fresh.close()
                display.stop()
                raise
            self.display = display
            # One display per worker process: its X clients (screen grabs, PyAutoGUI) all connect to this one.
            os.environ["DISPLAY"] = self.display.name
            os.environ["XAUTHORITY"] = str(self.display.env()["XAUTHORITY"])
            if self.device is not None:
                self.device.close()
            self.device = VisibleInput(self.display.name, self.display.env())
        if fresh is None and (self.browser is None or not await self.browser.responds()):
            if self.browser is not None:
                self.restarts += 1
            await self._close_browser()
            fresh = Browser(self.display, self.executable)
        if fresh is not None:
            try:
                await fresh.launch()
            except BaseException:
                await fresh.close()
                raise
            self.browser = fresh
        return self

    async def _close_browser(self) -> None:
        if self.browser is not None:
            await self.browser.close()
            self.browser = None

    async def close(self) -> None:
        await self._close_browser()
        if self.device is not None:
            self.device.close()
        if self.display is not None:
            self.display.stop()


@pytest.fixture(scope="session")
async def webeval_runtime(webeval_settings):
    width, height = webeval_settings.screen
    runtime = WorkerRuntime(width, height, webeval_settings.browser_path)
    try:
        yield runtime
    finally:
        await runtime.close()


@pytest.fixture
async def webeval_ready_runtime(webeval_runtime) -> WorkerRuntime:
    """The worker's runtime, started again if it died; if it cannot start, the task never ran."""
    try:
        return await webeval_runtime.ready()
    except InfraError as exc:
        pytest.skip(f"precondition[{exc.kind}]: {exc.message}")
