"""Executes validated actions: `computer` as visible input on the display, `navigate` and `tabs` through Playwright."""

from __future__ import annotations

from playwright.async_api import Error as PlaywrightError

from webeval.actions import Action, Computer, Navigate, Tabs
from webeval.runtime.aio import gather_or_cancel
from webeval.runtime.guard import blocked, refused
from webeval.runtime.input import VisibleInput, last_event
from webeval.runtime.session import MAX_TABS, LastTabClosed, TaskSession


async def execute(action: Action, session: TaskSession, device: VisibleInput, nav_timeout_s: float = 30.0) -> str:
    """Perform one action; return what happened, in words the agent reads with its next observation."""
    if isinstance(action, Computer):
        if action.action == "wait":
            await session.to_front()
        else:  # independent round trips to the browser (when needed at all), sent together
            await gather_or_cancel(session.to_front(), session.before_input(*last_event(action)))
        await device.perform(action)
        return f"{action.action} done"
    if isinstance(action, Navigate):
        session.settler.forget()
        page = session.require_active()
        if action.url is not None and blocked(action.url, session.guard.schemes):
            return f"navigation failed: {refused(action.url)}"  # the action contract refuses these first
        try:
            if action.url is not None:
                await page.goto(action.url, wait_until="commit", timeout=nav_timeout_s * 1000)
                return f"navigated to {action.url}"
            response = await (page.go_back if action.back else page.go_forward)(
                wait_until="commit", timeout=nav_timeout_s * 1000)
            if response is None and page.url in ("about:blank", ""):
                return "there was no page to go to"
            return "went back" if action.back else "went forward"
        except PlaywrightError as exc:
            return f"navigation failed: {str(exc).splitlines()[0]}"
    if isinstance(action, Tabs):
        if action.action == "new":
            if blocked(action.url, session.guard.schemes):
                return f"no tab opened: {refused(action.url)}"
            if len(session.pages) >= MAX_TABS:
                return f"no tab opened: {MAX_TABS} tabs are open, the most there may be; close one first"
            page = await session.new_tab()
            try:
                await page.goto(action.url, wait_until="commit", timeout=nav_timeout_s * 1000)
            except PlaywrightError as exc:
                return f"opened tab {session.tab_id(page)}, but navigation failed: {str(exc).splitlines()[0]}"
            return f"opened tab {session.tab_id(page)}"
        try:
            page = session.page_of(action.tab_id)
        except KeyError:
            return f"there is no tab {action.tab_id}"
        if action.action == "focus":
            await session.focus(page)
            return f"focused tab {action.tab_id}"
        await page.close()
        if not session.pages:
            raise LastTabClosed("the last tab was closed")
        await session.focus(session.pages[-1])
        return f"closed tab {action.tab_id}"
    raise TypeError(f"not an executable action: {action!r}")
