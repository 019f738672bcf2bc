"""One task's browser session: its context, its tabs (placed so page pixels are screen pixels), and what happened."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

from playwright.async_api import Browser as PwBrowser
from playwright.async_api import BrowserContext, Dialog, Download, Page
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeout

from webeval.actions import Box, TabInfo
from webeval.outcomes.record import InfraError
from webeval.runtime.aio import detached
from webeval.runtime.display import Display
from webeval.runtime.downloads import DEFAULT_MAX_BYTES, keep
from webeval.runtime.events import Events
from webeval.runtime.guard import Guard, answered
from webeval.runtime.settle import QUIET_SCRIPT, InputMark, Settler

CONTEXT_CLOSE_S = 10.0  # closing a context takes 0.05-0.3 s here; a browser that takes longer is not answering
MAX_TABS = 10  # a page that opens a hundred windows gets its first few; the rest are closed as they appear
PAGE_ANSWER_S = 5.0  # a title or an input mark; a page stopped by a modal (a print preview) never answers
START_LOAD_S = 5.0  # a start page that has not loaded by then is the agent's to deal with, as it is a person's


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


async def close_context(context: BrowserContext) -> bool:
    """Close a context within its bound; False when the browser did not answer in time."""
    try:
        await asyncio.wait_for(context.close(), CONTEXT_CLOSE_S)
    except PlaywrightError:
        pass
    except asyncio.TimeoutError:
        return False
    return True


class LastTabClosed(Exception):
    """The agent (or the page) closed the only tab: the episode cannot go on."""


class TaskSession:
    def __init__(self, context: BrowserContext, display: Display, folder: Path, settle_cap_s: float,
                 download_max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.context = context
        self.display = display
        self.folder = folder
        self.pages: list[Page] = []
        self._ids: dict[Page, int] = {}
        self.active: Page | None = None
        self.events = Events()  # dialogs, downloads, new tabs and refusals since the last observation
        self.guard = Guard(context, self.events.add)
        self.download_max_bytes = download_max_bytes
        self._crashed: set[Page] = set()
        self.fault: InfraError | None = None  # what ended the episode from the page's side work (a full disk)
        self._background: set[asyncio.Future] = set()  # dialogs answered, downloads kept, tabs closed
        self.settler = Settler(context, lambda: len(self.pages), cap_s=settle_cap_s)
        self._placement: dict[Page, asyncio.Future] = {}
        self._input_mark: InputMark | None = None
        self._front: Page | None = None  # the window last raised; None once a window opened or closed since

    @classmethod
    async def open(cls, context: BrowserContext, display: Display, folder: Path, settle_cap_s: float,
                   download_max_bytes: int = DEFAULT_MAX_BYTES) -> "TaskSession":
        session = cls(context, display, folder, settle_cap_s, download_max_bytes)
        await context.add_init_script(QUIET_SCRIPT)
        await session.guard.install()
        context.on("page", session._on_page)
        await session.new_tab()
        session.events.clear()
        return session

    # -- tabs ------------------------------------------------------------------------------------------------------
    def _on_page(self, page: Page) -> None:
        if page in self._placement:
            return
        if len(self.pages) >= MAX_TABS:
            self.events.add(f"a tab the page opened was closed: at most {MAX_TABS} tabs may be open", "tabs closed")
            detached(page.close(), self._background, PlaywrightError)
            return
        self.events.add("a new tab opened", "new tabs")
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
            page.on("crash", self._on_crash)
            self.guard.watch(page)
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
            if outer_h <= inner_h:
                # Still no frame: a tab opened behind another in a window that is shown (and placed) already. Moving
                # that window on no information would put its toolbar on the screen.
                await cdp.detach()
                return
            chrome_h = outer_h - inner_h
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
        # A JS dialog blocks the page until answered: accept alerts, dismiss confirms and prompts, leave a page that
        # asks to stay (as a person who meant to leave would), and tell the agent. The guard answers most in the page.
        if dialog.type == "beforeunload":
            self.events.add("the page asked to be stayed on (beforeunload) and was left", "dialogs")
        else:
            self.events.add(answered(dialog.type, dialog.message), "dialogs")
        answer = dialog.accept() if dialog.type in ("alert", "beforeunload") else dialog.dismiss()
        detached(answer, self._background, PlaywrightError)

    def _on_download(self, download: Download) -> None:
        note = lambda text: self.events.add(text, "downloads")  # noqa: E731
        detached(keep(download, self.folder, self.download_max_bytes, note, self._disk_full), self._background)
        detached(self.settler.stayed(download.page), self._background, PlaywrightError)

    def _disk_full(self, full: InfraError) -> None:
        """A full disk met by the page's work (a download): the episode ends as infrastructure (require_active)."""
        self.fault = self.fault or full

    def _on_crash(self, page: Page) -> None:
        """A tab whose renderer crashed (or was killed) cannot be driven again: a background one is closed; the
        active one ends the episode as infrastructure (require_active)."""
        self._crashed.add(page)
        if page is not self.active:
            self.events.add(f"tab {self._ids[page]} crashed and was closed", "crashed tabs")
            detached(page.close(), self._background, PlaywrightError)

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
        if self.active in self._crashed:
            raise InfraError("renderer", f"the renderer of the active tab ({self.active.url}) crashed or was killed")
        if self.fault is not None:
            raise self.fault
        return self.active

    async def focus(self, page: Page) -> None:
        self.active = page
        await self._raise(page)

    async def to_front(self) -> None:
        """The active tab's window in front, for input; no round trip when it was the last one raised and no other
        window is there to have taken the front since (a page can raise a window of its own at a click)."""
        page = self.require_active()
        if self._front is not page or len(self.pages) > 1:
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
                    title = await asyncio.wait_for(page.title(), PAGE_ANSWER_S)
            except asyncio.TimeoutError:
                title = ""  # stopped by a modal: the screen still shows the page
            except PlaywrightError:
                if page is self.active:
                    raise
                title = ""
            infos.append(TabInfo(id=self._ids[page], url=page.url, title=title, active=page is self.active))
        return infos

    def take_events(self) -> list[str]:
        return self.events.take()

    # -- pages -----------------------------------------------------------------------------------------------------
    async def goto(self, url: str, timeout_s: float = 30.0) -> None:
        """Open a page and wait for it to load, START_LOAD_S at most: a page that never finishes loading (a body that
        never ends) is there to be acted on all the same."""
        page = self.require_active()
        await page.goto(url, wait_until="commit", timeout=timeout_s * 1000)
        with contextlib.suppress(PlaywrightTimeout):
            await page.wait_for_load_state("load", timeout=min(timeout_s, START_LOAD_S) * 1000)

    async def before_input(self, event: str, count: int) -> None:
        """Remember what the page had seen, so settling can wait for the input about to be sent."""
        page = self.require_active()
        try:
            self._input_mark = await asyncio.wait_for(self.settler.mark(page, event, count), PAGE_ANSWER_S)
        except asyncio.TimeoutError:
            self._input_mark = None

    async def settle(self) -> float:
        """Wait until the active page is quiet; return the seconds it took."""
        await self.wait_placed()
        began = time.monotonic()
        mark, self._input_mark = self._input_mark, None
        page = self.active
        while page is not None and not page.is_closed() and page not in self._crashed:
            await self.settler.wait(page, mark)
            await self.wait_placed()
            if self.active is page:
                break
            page, mark = self.active, None  # the action opened a tab: settle that one too
        await self.guard.settled()
        if len(self.pages) > 1 and page is self.active and page is not None and not page.is_closed() \
                and page not in self._crashed:
            await self._raise(page)  # another window of the page may have taken the front: what is observed is this
        return time.monotonic() - began

    async def close(self) -> bool:
        """Close the task's context; False when the browser did not answer within the bound."""
        for placing in self._placement.values():
            placing.cancel()
        for work in self._background:
            work.cancel()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.gather(*self._background, return_exceptions=True), PAGE_ANSWER_S)
        with contextlib.suppress(PlaywrightError, asyncio.TimeoutError):
            await asyncio.wait_for(self.guard.close(), PAGE_ANSWER_S)
        return await close_context(self.context)

    async def locate(self, selector: str) -> Box | None:
        """The screen box of the first visible element matching a Playwright selector (viewport = screen)."""
        page = self.require_active()
        locator = page.locator(selector)
        try:
            count = await locator.count()
            for index in range(count):
                candidate = locator.nth(index)
                if await candidate.is_visible():
                    box = await candidate.bounding_box()
                    return Box(**box) if box else None
        except PlaywrightError:
            return None
        return None
