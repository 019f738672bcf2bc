"""A headed Chromium on a slot's display, driven through Playwright's async API; one fresh context per task."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import time
from pathlib import Path

import psutil
from playwright.async_api import Browser as PwBrowser
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Playwright, async_playwright
from playwright.async_api._context_manager import PlaywrightContextManager

from webeval.cache_dir import cache_dir
from webeval.outcomes.disk import temp_short
from webeval.outcomes.record import InfraError, NotRun
from webeval.runtime.display import Display
from webeval.runtime.downloads import DEFAULT_MAX_BYTES
from webeval.runtime.launch_log import launch_failure
from webeval.runtime.oom import MemoryWatch
from webeval.runtime.session import TaskSession, close_context, responds

# Chromium keeps only the last --disable-features it is given, and ours comes after Playwright's: it repeats
# Playwright's list (playwright-core's chromiumSwitches), so that HTTP stays HTTP, paint holding stays off and the
# browser does not dial Google's services at start.
_PLAYWRIGHT_DISABLED = [
    "AvoidUnnecessaryBeforeUnloadCheckSync", "DestroyProfileOnBrowserClose", "HttpsUpgrades",
    "HttpsFirstBalancedModeAutoEnable", "LensOverlay", "MediaRouter", "PaintHolding", "ThirdPartyStoragePartitioning",
    "AvoidCorsURLLoaderRestartOnRedirect", "OptimizationHints", "NetworkTimeServiceQuerying", "AimEnabled",
    "PreconnectToSearch",
]
# Translate: no bar over the page. WebUIOmniboxPopup and WebUIOmniboxAimPopup: each new window (one per task) would
# otherwise start a renderer for the omnibox's WebUI popups, about 0.4 s of CPU per task for a toolbar that sits
# above the screen (the native popup stays). SpareRendererForSitePerProcess: each new context would start a second
# renderer, kept warm for a navigation to another site and closed with the context unused (offline tasks never
# leave their site; a live one pays a renderer's start, ~0.1 s, on its first cross-site navigation instead).
_DISABLED = [*_PLAYWRIGHT_DISABLED, "Translate", "WebUIOmniboxPopup", "WebUIOmniboxAimPopup",
             "SpareRendererForSitePerProcess"]
QUIET_FLAGS = [
    "--test-type", "--disable-gpu", "--no-first-run", "--no-default-browser-check", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-features=" + ",".join(_DISABLED),
    "--password-store=basic", "--disable-smooth-scrolling", "--disable-session-crashed-bubble", "--hide-crash-restore-bubble",
]


def find_chromium(explicit: str | None = None) -> str | None:
    """The Chromium to launch: the option, then $WEBEVAL_CHROMIUM, then the system's; None means Playwright's own."""
    for candidate in (explicit, os.environ.get("WEBEVAL_CHROMIUM")):
        if candidate:
            return candidate
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


# Height of the tab strip and toolbar above a new window's page (Chromium on X11 at 100% scale, measured here).
TOOLBAR_H = 87
# Bounds of the calls that have none of their own: a Chromium that was SIGKILLed can leave the driver waiting on it
# forever (its helpers keep the pipe open). Opening a context takes 0.1-0.6 s here, closing one 0.05-0.3 s.
DRIVER_START_S = 30.0
CONTEXT_OPEN_S = 20.0
BROWSER_CLOSE_S = 10.0


def process_alive(pid: int | None) -> bool:
    """True while the process runs (a zombie, dead but not yet reaped, is not alive)."""
    if pid is None:
        return False
    try:
        return psutil.Process(pid).status() not in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
    except psutil.Error:
        return False


def exit_note(returncode: int | None) -> str:
    """` (killed by SIGKILL)` for a process that a signal ended, ` (exit status N)` otherwise, "" before it ended."""
    if returncode is None:
        return ""
    if returncode < 0:
        try:
            return f" (killed by {signal.Signals(-returncode).name})"
        except ValueError:
            return f" (killed by signal {-returncode})"
    return f" (exit status {returncode})"


def _kill(pid: int | None) -> None:
    if pid is not None:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


class Browser:
    def __init__(self, display: Display, executable: str | None = None) -> None:
        self.display = display
        self.executable = executable
        self.launched_s = 0.0
        self.browser_pid: int | None = None
        self._manager: PlaywrightContextManager | None = None
        self._pw: Playwright | None = None
        self._browser: PwBrowser | None = None
        self.memory: MemoryWatch | None = None  # whether the out-of-memory killer took a part of it

    async def start_driver(self) -> "Browser":
        """Start Playwright's driver process; it needs no display, so it may start while the display does."""
        if self._pw is None:
            # Node keeps the driver's compiled code between runs: a tenth less CPU for each worker's start.
            os.environ.setdefault("NODE_COMPILE_CACHE", str(cache_dir("node-compile-cache")))
            self._manager = async_playwright()
            try:
                self._pw = await asyncio.wait_for(self._manager.start(), DRIVER_START_S)
            except Exception as exc:  # the driver's own start raises a bare Exception when it dies on the way
                _kill(self.driver_pid)
                self._manager = None
                raise InfraError("driver", f"Playwright's driver did not start: {exc!r}") from None
        return self

    @property
    def _transport(self):
        return getattr(getattr(self._manager, "_client", None), "_transport", None)

    @property
    def driver_pid(self) -> int | None:
        """The Node process of Playwright's driver (None before it started)."""
        proc = getattr(self._transport, "_proc", None)
        return proc.pid if proc is not None else None

    async def launch(self) -> "Browser":
        if self.executable and not os.access(self.executable, os.X_OK):
            raise NotRun("browser", f"Chromium not found at {self.executable}: run `make setup`, or pass --browser-path")
        began = time.monotonic()
        await self.start_driver()
        # Every new window opens with its toolbar above the screen's top edge and its page covering the screen, so a
        # task's tab is in place as it appears; TaskSession.place() checks (and corrects) each window all the same.
        args = [*QUIET_FLAGS, f"--window-position=0,-{TOOLBAR_H}",
                f"--window-size={self.display.width},{self.display.height + TOOLBAR_H}"]
        if os.geteuid() == 0:
            args.append("--no-sandbox")  # Chromium refuses to start its sandbox as root
        try:
            self._browser = await self._pw.chromium.launch(
                executable_path=self.executable, headless=False, args=args, env=self.display.env(), timeout=30_000
            )
        except PlaywrightError as exc:
            # A full temporary directory (its profile goes there) is named as such: the browser only aborts.
            raise temp_short() or InfraError("browser", f"Chromium failed to start: {launch_failure(str(exc))}") \
                from None
        self.browser_pid = self._find_browser_pid()
        self.memory = MemoryWatch.start(self.browser_pid)
        self.launched_s = time.monotonic() - began
        return self

    def driver_exit(self) -> str:
        """How the driver (our child, so its status is known) ended: ` (killed by SIGKILL)`, ` (exit status 1)`."""
        proc = getattr(self._transport, "_proc", None)
        return exit_note(getattr(proc, "returncode", None))

    def _find_browser_pid(self) -> int | None:
        """Chromium's browser process: the driver's child that is not one of its helpers (no --type=)."""
        try:
            children = psutil.Process(self.driver_pid).children() if self.driver_pid else []
        except psutil.Error:
            return None
        for child in children:
            try:
                args = child.cmdline()
            except psutil.Error:
                continue
            if not any(arg.startswith("--type=") for arg in args) and "--remote-debugging-pipe" in args:
                return child.pid
        return None

    @property
    def alive(self) -> bool:
        return self._browser is not None and self._browser.is_connected()

    def dead_part(self) -> str | None:
        """Which of driver and browser verifiably died ("driver", "browser"), without a round trip; else None."""
        if self._pw is not None and not process_alive(self.driver_pid):
            return "driver"
        if self._browser is not None and (not self._browser.is_connected()
                                          or (self.browser_pid is not None and not process_alive(self.browser_pid))):
            return "browser"
        return None

    async def responds(self, timeout_s: float = 5.0) -> bool:
        return await responds(self._browser, timeout_s)

    @property
    def version(self) -> str:
        return self._browser.version if self._browser else ""

    async def new_session(self, folder: Path, settle_cap_s: float = 3.0, proxy: dict[str, str] | None = None,
                          download_max_bytes: int = DEFAULT_MAX_BYTES) -> TaskSession:
        """A fresh context: no cookies, storage, history or tabs from any earlier task."""
        if not self.alive:
            raise InfraError("browser", "Chromium is not running")
        context = None
        try:
            async with asyncio.timeout(CONTEXT_OPEN_S):
                context = await self._browser.new_context(no_viewport=True, accept_downloads=True, proxy=proxy)
                return await TaskSession.open(context, self.display, folder, settle_cap_s, download_max_bytes)
        except (PlaywrightError, TimeoutError) as exc:
            if context is not None:
                await close_context(context)
            # Chromium answers "Target crashed" when the new tab's renderer died (killed, or out of memory).
            dead = self.dead_part() or ("renderer" if "Target crashed" in str(exc) else None)
            if dead is None and not isinstance(exc, TimeoutError):
                raise  # the browser is there and answered: an error of ours, not of the infrastructure
            what = str(exc).splitlines()[0] if str(exc) else f"no answer within {CONTEXT_OPEN_S:g} s"
            raise InfraError(dead or "browser_unresponsive", f"could not open a browser context: {what}") from None

    async def close(self) -> None:
        """Close the browser and stop the driver; whatever does not answer in time is killed."""
        if self._browser is not None:
            try:
                await asyncio.wait_for(self._browser.close(), BROWSER_CLOSE_S)
            except (PlaywrightError, asyncio.TimeoutError):
                pass
            _kill(self.browser_pid if process_alive(self.browser_pid) else None)
            self._browser = None
        if self._pw is not None:
            try:
                await asyncio.wait_for(self._pw.stop(), BROWSER_CLOSE_S)
            except (PlaywrightError, asyncio.TimeoutError):
                _kill(self.driver_pid)
            # A driver that died left its error on this future, which no one else reads: read it here, quietly.
            died = getattr(self._transport, "on_error_future", None)
            if died is not None and died.done() and not died.cancelled():
                died.exception()
            self._pw = None

