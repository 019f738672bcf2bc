"""One task's browser session: its context, its tabs (placed so page pixels are screen pixels), and what happened."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from playwright.async_api import Browser as PwBrowser
from playwright.async_api import BrowserContext, Dialog, Download, Page
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeout

from webeval.actions import TabInfo
from webeval.runtime.display import Display
from webeval.runtime.settle import QUIET_SCRIPT, InputMark, Settler


async def responds(browser: PwBrowser | None, timeout_s: float = 5.0) -> bool:
    """Ask Chromium itself: after a crash, Playwright may still call it connected for a moment."""
    if browser is None or not browser.is_connected():
        return False
    try:
        cdp = await asyncio.wait_for(browser.new_browser_cdp_session(), timeout_s)
        await asyncio.wait_for(cdp.send("Browser.getVersion"), timeout_s)
        await cdp.detach()
        return True
    except (PlaywrightError, asyncio.TimeoutError):
        return False


class LastTabClosed(Exception):
    """The agent (or the page) closed the only tab: the episode cannot go on."""


class TaskSession:
    def __init__(self, context: BrowserContext, display: Display, folder: Path, settle_cap_s: float) -> None:
        self.context = context
        self.display = display
        self.folder = folder
        self.pages: list[Page] = []
        self._ids: dict[Page, int] = {}
        self.active: Page | None = None
        self.events: list[str] = []  # dialogs, downloads and new tabs since the last observation
        self.settler = Settler(context, lambda: len(self.pages), cap_s=settle_cap_s)
        self._placement: dict[Page, asyncio.Future] = {}
        self._input_mark: InputMark | None = None
        self._front: Page | None = None  # the window last raised; None once a window opened or closed since

    @classmethod
    async def open(cls, context: BrowserContext, display: Display, folder: Path, settle_cap_s: float) -> "TaskSession":
        session = cls(context, display, folder, settle_cap_s)
        await context.add_init_script(QUIET_SCRIPT)
        context.on("page", session._on_page)
        await session.new_tab()
        session.events.clear()
        return session

    # -- tabs ------------------------------------------------------------------------------------------------------
    def _on_page(self, page: Page) -> None:
        if page not in self._placement:
            self.events.append("a new tab opened")
        self._track(page)

    def _track(self, page: Page) -> asyncio.Future:
        """Adopt a page once, whoever opened it: give it a tab id, watch its events, place its window."""
        if page not in self._placement:
            self._ids[page] = max(self._ids.values(), default=-1) + 1
            self.pages.append(page)
            self.active = page
            self._front = None
            page.on("dialog", self._on_dialog)
            page.on("download", self._on_download)
            page.on("close", self._on_close)
            self._placement[page] = asyncio.ensure_future(self.place(page))
        return self._placement[page]

    async def new_tab(self) -> Page:
        page = await self.context.new_page()
        await self._track(page)
        await self.focus(page)
        return page

    async def place(self, page: Page) -> None:
        """Move the page's window so its viewport covers the screen from (0, 0), toolbar above the screen's edge."""
        width, height = self.display.width, self.display.height
        try:
            # A window that opened in place (the browser's default window bounds) needs nothing more.
            if await self._in_place(page):
                await self._raise(page)
                return
            cdp = await self.context.new_cdp_session(page)
            window = await cdp.send("Browser.getWindowForTarget")
            # A window not yet shown reports no toolbar at all; wait until it has its real frame.
            try:
                await page.wait_for_function("outerHeight > innerHeight", timeout=2_000)
            except PlaywrightTimeout:
                pass
            outer_h, inner_h = await page.evaluate("[outerHeight, innerHeight]")
            chrome_h = max(0, outer_h - inner_h)
            bounds = {"left": 0, "top": -chrome_h, "width": width, "height": height + chrome_h}
            await cdp.send("Browser.setWindowBounds", {"windowId": window["windowId"], "bounds": bounds})
            # Wait until the resize reached the page, so the first screenshot is not of the old layout.
            await page.wait_for_function(f"innerHeight === {height} && innerWidth === {width}", timeout=5_000)
            await self._raise(page)
            await cdp.detach()
        except PlaywrightError:
            if not page.is_closed():
                raise

    async def _in_place(self, page: Page) -> bool:
        try:
            x, y, outer_h, inner_w, inner_h = await page.evaluate(
                "[screenX, screenY, outerHeight, innerWidth, innerHeight]")
        except PlaywrightError:
            return False  # a document being replaced: place it the long way
        width, height = self.display.width, self.display.height
        return (x, inner_w, inner_h) == (0, width, height) and outer_h > inner_h and y == inner_h - outer_h

    async def wait_placed(self) -> None:
        pending = [f for f in self._placement.values() if not f.done()]
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)

    def _on_close(self, page: Page) -> None:
        if page in self.pages:
            self.pages.remove(page)
        if self.active is page:
            self.active = self.pages[-1] if self.pages else None
        self._front = None

    def _on_dialog(self, dialog: Dialog) -> None:
        # A JS dialog blocks the page until answered: accept alerts, dismiss the rest, and tell the agent.
        self.events.append(f"a {dialog.type} dialog said {dialog.message!r} and was "
                           f"{'accepted' if dialog.type == 'alert' else 'dismissed'}")
        asyncio.ensure_future(dialog.accept() if dialog.type == "alert" else dialog.dismiss())

    def _on_download(self, download: Download) -> None:
        target = self.folder / "downloads" / Path(download.suggested_filename).name
        target.parent.mkdir(parents=True, exist_ok=True)
        asyncio.ensure_future(download.save_as(target))
        self.events.append(f"downloaded {target.name}")

    def tab_id(self, page: Page) -> int:
        return self._ids[page]

    def page_of(self, tab_id: int) -> Page:
        for page in self.pages:
            if self._ids[page] == tab_id:
                return page
        raise KeyError(tab_id)

    async def browser_alive(self) -> bool:
        """A dead browser closes every page too, which must not look like the agent's doing."""
        return await responds(self.context.browser)

    def require_active(self) -> Page:
        if self.active is None or self.active.is_closed():
            raise LastTabClosed("no tab is open")
        return self.active

    async def focus(self, page: Page) -> None:
        self.active = page
        await self._raise(page)

    async def to_front(self) -> None:
        """The active tab's window in front, for input; no round trip when it was the last one raised."""
        page = self.require_active()
        if self._front is not page:
            await self._raise(page)

    async def _raise(self, page: Page) -> None:
        await page.bring_to_front()
        self._front = page

    async def tabs(self) -> list[TabInfo]:
        """Every tab; a background tab that cannot tell its title has none, the active one must (else it raises)."""
        infos = []
        for page in self.pages:
            try:
                title = self.settler.settled_title(page)
                if title is None:
                    title = await page.title()
            except PlaywrightError:
                if page is self.active:
                    raise
                title = ""
            infos.append(TabInfo(id=self._ids[page], url=page.url, title=title, active=page is self.active))
        return infos

    def take_events(self) -> list[str]:
        events, self.events = self.events, []
        return events

    # -- pages -----------------------------------------------------------------------------------------------------
    async def goto(self, url: str, timeout_s: float = 30.0) -> None:
        await self.require_active().goto(url, wait_until="load", timeout=timeout_s * 1000)

    async def before_input(self, event: str, count: int) -> None:
        """Remember what the page had seen, so settling can wait for the input about to be sent."""
        self._input_mark = await self.settler.mark(self.require_active(), event, count)

    async def settle(self) -> float:
        """Wait until the active page is quiet; return the seconds it took."""
        await self.wait_placed()
        began = time.monotonic()
        mark, self._input_mark = self._input_mark, None
        page = self.active
        while page is not None and not page.is_closed():
            await self.settler.wait(page, mark)
            await self.wait_placed()
            if self.active is page:
                break
            page, mark = self.active, None  # the action opened a tab: settle that one too
        return time.monotonic() - began

    async def close(self) -> None:
        for placing in self._placement.values():
            placing.cancel()
        try:
            await self.context.close()
        except PlaywrightError:
            pass

    async def locate(self, selector: str) -> dict[str, float] | None:
        """The screen box of the first visible element matching a Playwright selector (viewport = screen)."""
        page = self.require_active()
        locator = page.locator(selector)
        try:
            count = await locator.count()
            for index in range(count):
                candidate = locator.nth(index)
                if await candidate.is_visible():
                    return await candidate.bounding_box()
        except PlaywrightError:
            return None
        return None
