"""Settling after an action: observe only when the page is quiet, never after a fixed sleep.

Quiet means no request of the context is pending and the DOM has not changed for a short window, counted from
after the action, so a click whose effect starts a moment later is still waited for. A cap bounds it all.
"""

from __future__ import annotations

import asyncio
import time

from playwright.async_api import BrowserContext, Page, Request
from playwright.async_api import Error as PlaywrightError

# Installed in every document before its own scripts: the time of the last DOM mutation.
QUIET_SCRIPT = """
(() => {
  if (window.__webevalQuiet) return;
  const state = { last: performance.now() };
  window.__webevalQuiet = state;
  const watch = () => new MutationObserver(() => { state.last = performance.now(); })
    .observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
  watch();
})();
"""
_PROBE = "[document.readyState, window.__webevalQuiet ? performance.now() - window.__webevalQuiet.last : 1e9]"


class Settler:
    def __init__(self, context: BrowserContext, quiet_s: float = 0.05, cap_s: float = 3.0, poll_s: float = 0.01):
        self.quiet_s = quiet_s
        self.cap_s = cap_s
        self.poll_s = poll_s
        self._pending: set[Request] = set()
        context.on("request", lambda request: self._pending.add(request))
        context.on("requestfinished", lambda request: self._pending.discard(request))
        context.on("requestfailed", lambda request: self._pending.discard(request))

    @property
    def pending(self) -> int:
        return len(self._pending)

    async def wait(self, page: Page) -> bool:
        """True when the page became quiet, False when the cap was reached first."""
        began = time.monotonic()
        deadline = began + self.cap_s
        while time.monotonic() < deadline:
            await asyncio.sleep(self.poll_s)
            if time.monotonic() - began < self.quiet_s or self._pending:
                continue
            try:
                ready, quiet_ms = await asyncio.wait_for(page.evaluate(_PROBE), max(0.01, deadline - time.monotonic()))
            except (PlaywrightError, asyncio.TimeoutError):
                continue  # a navigation replaced the document: look again at the new one
            if ready == "complete" and quiet_ms >= self.quiet_s * 1000:
                return True
        return False
