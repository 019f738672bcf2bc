"""A headed Chromium on the worker's display, driven through Playwright's async API; one fresh context per task."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from playwright.async_api import Browser as PwBrowser
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Playwright, async_playwright

from webeval.outcomes.record import InfraError
from webeval.runtime.display import Display
from webeval.runtime.session import TaskSession, responds

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
# above the screen (the native popup stays).
_DISABLED = [*_PLAYWRIGHT_DISABLED, "Translate", "WebUIOmniboxPopup", "WebUIOmniboxAimPopup"]
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


def _cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "webeval"


# Height of the tab strip and toolbar above a new window's page (Chromium on X11 at 100% scale, measured here).
TOOLBAR_H = 87


class Browser:
    def __init__(self, display: Display, executable: str | None = None) -> None:
        self.display = display
        self.executable = executable
        self.launched_s = 0.0
        self._pw: Playwright | None = None
        self._browser: PwBrowser | None = None

    async def start_driver(self) -> "Browser":
        """Start Playwright's driver process; it needs no display, so it may start while the display does."""
        if self._pw is None:
            # Node keeps the driver's compiled code between runs: a tenth less CPU for each worker's start.
            os.environ.setdefault("NODE_COMPILE_CACHE", str(_cache_dir() / "node-compile-cache"))
            self._pw = await async_playwright().start()
        return self

    async def launch(self) -> "Browser":
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
            raise InfraError("browser", f"Chromium failed to start: {str(exc).splitlines()[0]}") from None
        self.launched_s = time.monotonic() - began
        return self

    @property
    def alive(self) -> bool:
        return self._browser is not None and self._browser.is_connected()

    async def responds(self) -> bool:
        return await responds(self._browser)

    @property
    def version(self) -> str:
        return self._browser.version if self._browser else ""

    async def new_session(self, folder: Path, settle_cap_s: float = 3.0,
                          proxy: dict[str, str] | None = None) -> TaskSession:
        """A fresh context: no cookies, storage, history or tabs from any earlier task."""
        if not self.alive:
            raise InfraError("browser", "Chromium is not running")
        try:
            context = await self._browser.new_context(no_viewport=True, accept_downloads=True, proxy=proxy)
        except PlaywrightError as exc:
            raise InfraError("browser", f"could not open a browser context: {str(exc).splitlines()[0]}") from None
        return await TaskSession.open(context, self.display, folder, settle_cap_s)

    async def close(self) -> None:
        if self._browser is not None:
            try:
                await self._browser.close()
            except PlaywrightError:
                pass
            self._browser = None
        if self._pw is not None:
            await self._pw.stop()
            self._pw = None
