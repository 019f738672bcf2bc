"""What a page (or the agent's own key presses) may not do to the harness or to the machine it runs on.

- `file:` and `chrome:` pages are refused (`BLOCKED_SCHEMES`): a tab that gets there is sent back to its last
  allowed page, a window the browser opens outside the task's context (chrome://settings, the downloads page) is
  closed at once and again when the task ends, and a link to them is reported as not followed. The agent reads each
  refusal with its next observation. (The action contract refuses such URLs in `navigate` and `tabs` first.)
- `window.print()` opens a modal print preview that stops the page's scripts until someone closes it: it does
  nothing, and the agent is told.
- `alert`, `confirm` and `prompt` are answered in the page as they are called (an alert accepted, a confirm or prompt
  dismissed) and never become the browser's modal dialog, and the agent is told. A modal dialog that opens just as a
  navigation starts could hold the tab "Loading" for good (an alert loop beside a link click, under load); the
  session still answers the one only the browser raises (`beforeunload`), and any other that gets through.
- A document may open MAX_OPENS windows or tabs (`window.open`); beyond that the call returns null, as a popup
  blocker's does, and the agent is told. (The session also closes tabs beyond its own limit, however they opened.)
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Awaitable, Callable

from playwright.async_api import BrowserContext, CDPSession, Frame, Page
from playwright.async_api import Error as PlaywrightError

from webeval.runtime.aio import detached

BLOCKED_SCHEMES = frozenset({"file", "chrome", "chrome-untrusted", "devtools"})
MAX_OPENS = 10
REFUSE_S = 10.0  # going back from a refused page: a local history step, well under a second here
_BINDING = "__webevalNote"
_SCRIPT = """(() => {
  if (window.__webevalGuard) return;
  Object.defineProperty(window, "__webevalGuard", { value: true });
  const note = (kind, detail) => { try { window.%(binding)s(kind, String(detail)); } catch (e) {} };
  Object.defineProperty(window, "print", { value: () => note("print", ""), writable: false, configurable: false });
  const answer = (kind, value) => function (message) { note(kind, message === undefined ? "" : message); return value; };
  window.alert = answer("alert", undefined);
  window.confirm = answer("confirm", false);
  window.prompt = answer("prompt", null);
  const open = window.open;
  let opens = 0;
  window.open = function (...args) {
    if (++opens > %(opens)d) { note("open", args[0]); return null; }
    return open.apply(this, args);
  };
  document.addEventListener("click", (event) => {
    const link = event.target instanceof Element ? event.target.closest("a[href]") : null;
    if (link && /^(%(schemes)s):/i.test(link.href)) note("link", link.href);
  }, true);
})();"""


def blocked(url: str, schemes: frozenset[str] = BLOCKED_SCHEMES) -> bool:
    scheme, colon, _ = url.partition(":")
    return bool(colon) and scheme.lower() in schemes


def answered(kind: str, message: str) -> str:
    """What the agent is told of an alert (accepted), a confirm or a prompt (dismissed), whoever answered it."""
    article, answer = ("an", "accepted") if kind == "alert" else ("a", "dismissed")
    return f"{article} {kind} dialog said {message!r} and was {answer}"


def refused(url: str) -> str:
    return f"{url} was refused: file: and chrome: URLs are blocked"


Note = Callable[[str, str], None]  # (text, kind): an event for the agent's next observation


class Guard:
    def __init__(self, context: BrowserContext, note: Note, schemes: frozenset[str] = BLOCKED_SCHEMES) -> None:
        self.context = context
        self.schemes = schemes
        self._note = note
        self._pending: set[asyncio.Future] = set()
        self._cdp: CDPSession | None = None
        self._contexts: set[str] = set()  # the browser contexts Playwright made (the task's among them)
        self._allowed: dict[Page, str] = {}  # each tab's last page that was not refused

    async def install(self) -> None:
        script = _SCRIPT % {"binding": _BINDING, "schemes": "|".join(sorted(self.schemes)), "opens": MAX_OPENS}
        await self.context.expose_binding(_BINDING, self._on_binding)
        await self.context.add_init_script(script)
        browser = self.context.browser
        if browser is not None:
            self._cdp = await browser.new_browser_cdp_session()
            self._cdp.on("Target.targetCreated", self._on_target)
            await self._known_contexts()
            await self._cdp.send("Target.setDiscoverTargets", {"discover": True})

    def watch(self, page: Page) -> None:
        page.on("framenavigated", lambda frame: self._on_navigated(page, frame))

    async def settled(self) -> None:
        """Every refusal done: nothing refused is on screen when the agent observes."""
        while pending := [f for f in self._pending if not f.done()]:
            await asyncio.gather(*pending, return_exceptions=True)

    async def close(self) -> None:
        """Stop watching; windows outside every task's context are closed once more (a key press can open one as
        the task ends, and it would cover the next task's screen)."""
        for future in self._pending:
            future.cancel()
        await asyncio.gather(*self._pending, return_exceptions=True)
        if self._cdp is None:
            return
        with contextlib.suppress(PlaywrightError):
            targets = (await self._cdp.send("Target.getTargets"))["targetInfos"]
            await self._known_contexts()
            for info in targets:
                if self._stray(info):
                    await self._cdp.send("Target.closeTarget", {"targetId": info["targetId"]})
            await self._cdp.detach()
        self._cdp = None

    def _spawn(self, work: Awaitable[Any]) -> None:
        detached(work, self._pending, PlaywrightError)  # a page or window that went away needs no refusal

    # -- the task's own tabs ---------------------------------------------------------------------------------------
    def _on_navigated(self, page: Page, frame: Frame) -> None:
        if frame is not page.main_frame:
            return
        if not blocked(frame.url, self.schemes):
            self._allowed[page] = frame.url
            return
        self._note(refused(frame.url), "refusals")
        self._spawn(self._send_back(page))

    async def _send_back(self, page: Page) -> None:
        if blocked(page.url, self.schemes):  # (unless an earlier refusal of the same tab did it already)
            await page.goto(self._allowed.get(page, "about:blank"), wait_until="commit", timeout=REFUSE_S * 1000)

    def _on_binding(self, source: dict[str, Any], kind: str, detail: str) -> None:
        if kind == "print":
            self._note("the page asked to print: printing is off, nothing was printed", "print requests")
        elif kind == "link" and blocked(detail, self.schemes):
            self._note(f"a link to {refused(detail)}", "refusals")
        elif kind in ("alert", "confirm", "prompt"):
            self._note(answered(kind, detail), "dialogs")
        elif kind == "open":
            self._note(f"the page was kept from opening more than {MAX_OPENS} windows", "refusals")

    # -- windows outside the task's context ------------------------------------------------------------------------
    async def _known_contexts(self) -> None:
        reply = await self._cdp.send("Target.getBrowserContexts")
        self._contexts = set(reply.get("browserContextIds", []))

    def _stray(self, info: dict[str, Any]) -> bool:
        return info.get("type") == "page" and info.get("browserContextId") not in self._contexts

    def _on_target(self, event: dict[str, Any]) -> None:
        info = event["targetInfo"]
        if info.get("type") == "page" and info.get("browserContextId") not in self._contexts:
            self._spawn(self._close_stray(info))

    async def _close_stray(self, info: dict[str, Any]) -> None:
        await self._known_contexts()  # a context made since the last look is not a stray
        if self._stray(info) and self._cdp is not None:
            await self._cdp.send("Target.closeTarget", {"targetId": info["targetId"]})
            self._note(f"a window outside the task ({info.get('url') or 'a new window'}) was closed: "
                       "file: and chrome: URLs are blocked", "refusals")
