"""Settling after an action: observe only when the page is quiet, never after a fixed sleep.

Quiet means: the page has seen the input that was sent (input travels through the X server to Chromium
asynchronously), no fetch or XHR that the page started is open, the page is not leaving for another document, a tab
it asked to open has appeared, no request of the context is pending, and the DOM has not changed (nor the page
scrolled) for a short window counted from after the action. The page's own bookkeeping is synchronous with its
event handlers, so a request a click starts is known at once, before any network event reaches the harness.
A cap bounds it all.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Callable

from playwright.async_api import BrowserContext, Page, Request
from playwright.async_api import Error as PlaywrightError

# Installed in every document before its own scripts.
QUIET_SCRIPT = """
(() => {
  if (window.__webevalQuiet) return;
  const state = { last: performance.now(), doc: Math.random(), open: 0, leaving: false, opened: 0,
                  seen: { mouseup: 0, keyup: 0, wheel: 0, mousemove: 0 } };
  window.__webevalQuiet = state;
  const touch = () => { state.last = performance.now(); };
  new MutationObserver(touch).observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
  window.addEventListener("scroll", touch, { capture: true, passive: true });
  for (const type of Object.keys(state.seen)) {
    window.addEventListener(type, () => { state.seen[type]++; }, { capture: true, passive: true });
  }
  window.addEventListener("beforeunload", () => { state.leaving = true; });
  window.addEventListener("pageshow", () => { state.leaving = false; touch(); });
  const done = () => { state.open--; touch(); };
  const fetch0 = window.fetch;
  window.fetch = function (...args) {
    state.open++;
    return fetch0.apply(this, args).finally(done);
  };
  const send0 = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.send = function (...args) {
    state.open++;
    this.addEventListener("loadend", done, { once: true });
    return send0.apply(this, args);
  };
  const open0 = window.open;
  window.open = function (...args) { state.opened++; return open0.apply(this, args); };
  document.addEventListener("click", (e) => {
    const link = e.target instanceof Element && e.target.closest("a[target=_blank]");
    if (link && !e.defaultPrevented) state.opened++;
  });
})();
"""
_STAYED = "() => { const s = window.__webevalQuiet; if (s) s.leaving = false; }"
# Loaded, and not on its way to another document (a submitted form, a followed link whose response is slow).
LOADED = "() => document.readyState === 'complete' && !(window.__webevalQuiet || {}).leaving"
_PROBE = """(() => { const s = window.__webevalQuiet;
  return s ? [document.readyState, performance.now() - s.last, s.doc, s.seen, s.open, s.leaving, s.opened]
           : [document.readyState, 1e9, 0, {}, 0, false, 0]; })()"""
# The page waits for itself: one round trip resolves when it has been quiet for quietMs (counted from the action,
# sinceMs ago), has seen the input (needed events of `event`, in the document `doc`), has no
# request of its own open and is not leaving; or when capMs has passed. It answers what _PROBE answers, the title, and
# whether the input arrived.
_UNTIL_QUIET = """([quietMs, capMs, sinceMs, event, needed, doc]) => new Promise((resolve) => {
  const s = window.__webevalQuiet;
  if (!s) { resolve([document.readyState, 1e9, 0, {}, 0, false, 0, document.title, true]); return; }
  const start = performance.now(), action = start - sinceMs;
  const arrived = () => !event || s.doc !== doc || (s.seen[event] || 0) >= needed
                        || document.activeElement instanceof HTMLSelectElement;
  const probe = (now) => [document.readyState, now - Math.max(s.last, action), s.doc, s.seen, s.open, s.leaving, s.opened,
                          document.title, arrived()];
  const check = () => {
    const now = performance.now();
    const idle = document.readyState === "complete" && !s.open && !s.leaving && arrived();
    const quiet = now - Math.max(s.last, action);
    if ((idle && quiet >= quietMs) || now - start >= capMs) { resolve(probe(now)); return; }
    setTimeout(check, idle ? Math.max(1, quietMs - quiet) : 10);
  };
  check();
})"""


@dataclass(frozen=True)
class Settled:
    """A page as it was when it became quiet: its input counters and its title."""

    page: Page
    doc: float
    seen: dict[str, int]
    opened: int
    title: str


@dataclass(frozen=True)
class InputMark:
    """What the page had seen before visible input, and which event (how many of it) ends that input."""

    doc: float
    seen: int
    event: str
    count: int
    opened: int
    tabs: int


class Settler:
    def __init__(self, context: BrowserContext, tab_count: Callable[[], int], quiet_s: float = 0.05,
                 cap_s: float = 3.0, poll_s: float = 0.01) -> None:
        self.quiet_s = quiet_s
        self.cap_s = cap_s
        self.poll_s = poll_s
        self._tab_count = tab_count
        self._pending: set[Request] = set()
        self._settled: Settled | None = None
        context.on("request", lambda request: self._pending.add(request))
        context.on("requestfinished", lambda request: self._pending.discard(request))
        context.on("requestfailed", lambda request: self._pending.discard(request))

    @property
    def pending(self) -> int:
        return len(self._pending)

    async def mark(self, page: Page, event: str, count: int) -> InputMark | None:
        """What the page has seen before the input about to be sent.

        The first input after the page settled needs no round trip: its counters are those the settling read, since
        only input moves them. A mouse move is read again: Chromium sends pages mouse moves of its own when the
        layout under a resting pointer changes.
        """
        settled, self._settled = self._settled, None
        if settled is not None and settled.page is page and event != "mousemove":
            doc, seen, opened = settled.doc, settled.seen, settled.opened
        else:
            try:
                _, _, doc, seen, _, _, opened = await page.evaluate(_PROBE)
            except PlaywrightError:
                return None
        return InputMark(doc, seen.get(event, 0), event, count, opened, self._tab_count())

    async def stayed(self, page: Page) -> None:
        """The document the page was leaving for turned out to be a download: the page stays, and can be quiet."""
        await page.evaluate(_STAYED)

    def settled_title(self, page: Page) -> str | None:
        """The title the page had when it became quiet, if that is the last thing it did."""
        settled = self._settled
        return settled.title if settled is not None and settled.page is page else None

    def forget(self) -> None:
        """The page changed by other means than input (a navigation): the next mark reads its counters again."""
        self._settled = None

    async def wait(self, page: Page, mark: InputMark | None = None, ack_cap_s: float = 1.0) -> bool:
        """True when the page became quiet, False when the cap was reached first.

        The input is waited for until the cap: on a loaded machine (load 13 on 2 cores beside the chaos runs) it can
        take over a second to arrive, and an observation taken before it did shows the page as it was before the
        action. Input that never reaches the page costs the cap: the browser's own UI has the focus (after ctrl+L).
        A select's popup takes the pointer and the keys from the page too, so a focused select counts as arrival.
        A tab the page asked for is waited for ack_cap_s at most: a popup blocker may swallow it.
        """
        began = time.monotonic()
        deadline = began + self.cap_s
        self._settled = None
        while (now := time.monotonic()) < deadline:
            if self._pending:
                await asyncio.sleep(self.poll_s)
                continue
            args = [self.quiet_s * 1000, (deadline - now) * 1000, (now - began) * 1000,
                    mark.event if mark else None, mark.seen + mark.count if mark else 0, mark.doc if mark else 0]
            try:
                ready, quiet_ms, doc, seen, open_requests, leaving, opened, title, arrived = await asyncio.wait_for(
                    page.evaluate(_UNTIL_QUIET, args), max(0.01, deadline - now) + 0.5)
            except (PlaywrightError, asyncio.TimeoutError):
                if page.is_closed():
                    return True
                await asyncio.sleep(self.poll_s)
                continue  # a navigation replaced the document: look again at the new one
            if page.is_closed():
                return True
            if self._pending:
                continue  # a request the page did not start itself (an image, a frame) began while it waited
            elapsed = time.monotonic() - began
            if mark is not None and doc == mark.doc and (
                    not arrived or (elapsed < ack_cap_s and opened > mark.opened and self._tab_count() <= mark.tabs)):
                await asyncio.sleep(self.poll_s)
                continue
            # (elapsed: a page without the quiet script answers at once; the window still counts from the action)
            if (ready == "complete" and quiet_ms >= self.quiet_s * 1000 and not open_requests and not leaving
                    and elapsed >= self.quiet_s):
                self._settled = Settled(page, doc, seen, opened, title)
                return True
            await asyncio.sleep(self.poll_s)
        return False
