"""A slot: one display, one browser and one input connection that episodes use in turn. What died is started
again before the next episode; a running episode is watched, so that a part that dies ends it at once.

A process may hold several slots (the rollout engine and `pytest --slots N` do): nothing here is process-wide.
"""

from __future__ import annotations

import asyncio
from typing import Awaitable, TypeVar

from webeval.outcomes.record import InfraError
from webeval.runtime.aio import run_watched
from webeval.runtime.browser import Browser, exit_note, find_chromium
from webeval.runtime.display import Display
from webeval.runtime.devices import ScreenObserver
from webeval.runtime.input import VisibleInput
from webeval.runtime.session import TaskSession

T = TypeVar("T")
WATCH_EVERY_S = 0.5  # a liveness look costs a few /proc reads: nothing next to a step
RESPONDS_S = 5.0
DYING_S = 1.0  # SIGKILL to Xvfb reapable: 2.3 ms median, 4.2 ms worst of 10 at load 0.7; the rest is for load


class Slot:
    """A display (Xvfb), a headed Chromium on it and the visible input device that acts on it.

    `async with Slot(1280, 720) as slot:` starts it; `ready()` before each episode starts again whatever died.
    """

    def __init__(self, width: int = 1280, height: int = 720, browser_path: str | None = None) -> None:
        self.width, self.height = width, height
        self.executable = find_chromium(browser_path)
        self.display: Display | None = None
        self.browser: Browser | None = None
        self.device: VisibleInput | None = None
        self.restarts = 0

    async def __aenter__(self) -> "Slot":
        try:
            return await self.ready()
        except BaseException:
            await self.close()
            raise

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def ready(self) -> "Slot":
        """Every part alive and answering; what died (or stopped answering) is started again. Every wait is bounded:
        Xvfb 10 s, the driver 30 s, Chromium's launch 30 s, its answer 5 s."""
        fresh: Browser | None = None
        if self.display is None or not self.display.alive:
            await self._close_browser()
            if self.display is not None:
                self.display.stop()
                self.restarts += 1
            fresh = await self._start_display()
        if fresh is None and (self.browser is None or self.browser.dead_part()
                              or not await self.browser.responds(RESPONDS_S)):
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
        elif self.browser.memory is not None:
            self.browser.memory.look()  # the memory cgroups its processes are in now, before the next episode
        return self

    async def _start_display(self) -> Browser:
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
        if self.device is not None:
            self.device.close()
        self.device = VisibleInput(display.name, display.env(), alive=lambda: display.alive)
        return fresh

    def input_for(self, session: TaskSession) -> VisibleInput:
        return self.device

    def observer_for(self, session: TaskSession) -> ScreenObserver:
        return ScreenObserver(self.display)

    def dead_part(self) -> str | None:
        """Which part verifiably died (display, driver, browser), from process state alone; None when all run."""
        if self.display is None or not self.display.alive:
            return "display"
        return self.browser.dead_part() if self.browser is not None else "browser"

    async def failure(self) -> InfraError | None:
        """An InfraError naming the part that is gone or does not answer within its bound; None when all answer.

        A killed process closes its sockets before it can be reaped: an error from a display that is dying is seen
        before the process is, so a part is given DYING_S to show itself dead before the error counts as a bug. A
        dead part explains an unanswering browser, so it is the one named."""
        unresponsive = self.dead_part() is None and not await self.browser.responds(RESPONDS_S)
        waited = 0.0
        while (dead := self.dead_part()) is None and waited < DYING_S:
            await asyncio.sleep(0.05)
            waited += 0.05
        dead = dead or ("browser_unresponsive" if unresponsive else None)
        return self.explained(InfraError(dead, _GONE[dead])) if dead else None

    def explained(self, error: InfraError) -> InfraError:
        """The error with what is known of why the part died: the signal that ended Xvfb or the driver (our
        children), and whether the kernel's out-of-memory killer took Chromium (webeval.runtime.oom)."""
        note = ""
        if error.kind == "display" and self.display is not None:
            note = exit_note(self.display.returncode)
        elif error.kind == "driver" and self.browser is not None:
            note = self.browser.driver_exit()
        if error.kind in _CHROMIUM and self.browser is not None and self.browser.memory is not None:
            killed = self.browser.memory.verdict()
            note = f": {killed}" if killed else note
        return InfraError(error.kind, error.message + note) if note and note not in error.message else error

    async def watched(self, work: Awaitable[T]) -> T:
        """Run `work`, cancelled as soon as a part of the runtime dies: a dead part must not be waited on. An error
        it raises while a part dies (a closed target, a lost connection) is that part's InfraError."""
        task = await run_watched(work, self._died, WATCH_EVERY_S, RESPONDS_S)
        error = task.exception()
        if error is not None and not isinstance(error, InfraError) and isinstance(error, Exception):
            failure = await self.failure()
            if failure is not None:
                raise failure from error
        return task.result()

    def _died(self) -> InfraError | None:
        """The error of a part found dead, explained; while all live, a look at the memory of the browser's
        processes (and the memory cgroups they are in now)."""
        dead = self.dead_part()
        if dead is not None:
            return self.explained(InfraError(dead, _GONE[dead]))
        if self.browser is not None and self.browser.memory is not None:
            self.browser.memory.look()
        return None

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


_CHROMIUM = frozenset({"browser", "renderer", "browser_unresponsive"})
_GONE = {
    "display": "the X display (Xvfb) died",
    "driver": "Playwright's driver process died",
    "browser": "Chromium died",
    "browser_unresponsive": f"Chromium did not answer within {RESPONDS_S:g} s",
}
