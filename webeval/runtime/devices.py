"""How the agent's actions reach the page and how its screen is seen: one interface for a local X display
(VisibleInput and the screen grab) and for a remote browser that has no display (Playwright's mouse and keyboard,
CDP screenshots of the active tab, whose viewport is the screen)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Protocol

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

from webeval.actions import Computer
from webeval.outcomes.record import InfraError
from webeval.runtime.display import Display
from webeval.runtime.input import INPUT_S
from webeval.runtime.observe import GRAB_S, screenshot_png
from webeval.runtime.session import TaskSession, responds

SCROLL_PX = 100  # one scroll unit: what Chromium scrolls for one wheel notch
_KEYS = {
    "ctrl": "Control", "control": "Control", "alt": "Alt", "shift": "Shift", "meta": "Meta", "super": "Meta",
    "cmd": "Meta", "win": "Meta", "enter": "Enter", "return": "Enter", "esc": "Escape", "escape": "Escape",
    "tab": "Tab", "backspace": "Backspace", "delete": "Delete", "del": "Delete", "space": " ", "up": "ArrowUp",
    "down": "ArrowDown", "left": "ArrowLeft", "right": "ArrowRight", "pageup": "PageUp", "pagedown": "PageDown",
    "home": "Home", "end": "End", "insert": "Insert",
}


class InputDevice(Protocol):
    async def perform(self, action: Computer) -> None: ...

    def close(self) -> None: ...


class Observer(Protocol):
    async def screenshot_png(self) -> bytes: ...


@dataclass(frozen=True)
class Screen:
    """The size a remote session's viewport (its "screen") has: what a Display is to a local one."""

    width: int
    height: int


class ScreenObserver:
    """The grab of the worker's X display."""

    def __init__(self, display: Display) -> None:
        self.display = display

    async def screenshot_png(self) -> bytes:
        return await screenshot_png(self.display)


async def _infra_if_gone(session: TaskSession, exc: BaseException, what: str) -> InfraError:
    """A failed call on a browser that is gone (or silent) is infrastructure; on one that answers it is ours."""
    if await responds(session.context.browser):
        raise exc
    return InfraError("browser", f"{what} failed: the remote browser is gone or does not answer")


class PageObserver:
    """A CDP screenshot of the active tab's viewport."""

    def __init__(self, session: TaskSession) -> None:
        self.session = session

    async def screenshot_png(self) -> bytes:
        page = self.session.require_active()
        try:
            return await page.screenshot(type="png", caret="initial", timeout=GRAB_S * 1000)
        except PlaywrightError as exc:
            raise await _infra_if_gone(self.session, exc, "a screenshot") from None


class PageInput:
    """Trusted input events sent by CDP to the active tab, at viewport (= screen) coordinates."""

    def __init__(self, session: TaskSession) -> None:
        self.session = session

    def close(self) -> None:
        pass  # nothing of its own: the events go through the session's connection

    async def perform(self, action: Computer) -> None:
        if action.action == "wait":
            await asyncio.sleep(action.seconds or 0)
            return
        page = self.session.require_active()
        try:
            await asyncio.wait_for(self._perform(page, action), INPUT_S)
        except (PlaywrightError, asyncio.TimeoutError) as exc:
            raise await _infra_if_gone(self.session, exc, f"input ({action.action})") from None

    async def _perform(self, page: Page, a: Computer) -> None:
        mouse, keyboard = page.mouse, page.keyboard
        if a.action in ("click", "double_click", "right_click"):
            button = "right" if a.action == "right_click" else "left"
            await mouse.click(a.x, a.y, button=button, click_count=2 if a.action == "double_click" else 1)
        elif a.action == "move":
            await mouse.move(a.x, a.y)
        elif a.action == "drag":
            await mouse.move(a.x, a.y)
            await mouse.down()
            await mouse.move((a.x + a.to_x) // 2, (a.y + a.to_y) // 2)  # a midpoint, so drag-and-drop sees movement
            await mouse.move(a.to_x, a.to_y)
            await mouse.up()
        elif a.action == "type":
            await keyboard.type(a.text or "")
        elif a.action == "key":
            keys = [_KEYS.get(k.lower(), k if len(k) == 1 else k.capitalize()) for k in a.keys or ()]
            await keyboard.press("+".join(keys))
        elif a.action == "scroll":
            if a.x is not None and a.y is not None:
                await mouse.move(a.x, a.y)
            amount = (a.amount or 5) * SCROLL_PX
            dx = amount if a.direction == "right" else -amount if a.direction == "left" else 0
            dy = amount if a.direction == "down" else -amount if a.direction == "up" else 0
            await mouse.wheel(dx, dy)
