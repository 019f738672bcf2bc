"""Visible input: real pointer and key events on a slot's X display through PyAutoGUI.

Every call blocks on X round trips, so the async core runs them on one dedicated thread per device (ordered, off the
loop). PyAutoGUI sends through one module-level X connection; here that name stands for the connection of the device
whose thread is calling, so the slots of one process send at once, each to its own display, and a stuck X server
holds up only its own slot.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import subprocess
import sys
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterator

from webeval.actions import Computer
from webeval.outcomes.record import InfraError
from webeval.runtime.display import x_client
from webeval.runtime.procs import spawn

_DOUBLE_CLICK_PAUSE_S = 0.03
INPUT_S = 30.0  # the longest action (typing a long text) takes a few seconds; an X server that takes this long is stuck
_KEY_NAMES = {"return": "enter", "esc": "escape", "meta": "winleft", "super": "winleft", "cmd": "winleft"}


class _Sending(threading.local):
    connection = None  # the X connection of the device whose thread this is


_SENDING = _Sending()


class _ThreadsConnection:
    """What PyAutoGUI's module-level `_display` becomes: every use is a use of the calling thread's connection."""

    def __getattr__(self, name: str):
        return getattr(_SENDING.connection, name)


def _pyautogui(connection, env: dict[str, str]):
    """PyAutoGUI, sending through this device's own X connection from this thread.

    pyautogui binds to $DISPLAY when first imported (its key map is read from that display: every Xvfb has the same
    one); a restarted Xvfb, even one that got the same display number, needs a new connection, so each device brings
    its own.
    """
    _SENDING.connection = connection
    gui = sys.modules.get("pyautogui")
    if not isinstance(getattr(getattr(gui, "_pyautogui_x11", None), "_display", None), _ThreadsConnection):
        with x_client(env):  # the first device imports it, the others wait and find it done
            gui = _import_pyautogui()
    return gui


def _import_pyautogui():
    with _their_leaks():
        try:
            import pyautogui
            from pyautogui import _pyautogui_x11 as x11
        except Exception:
            _close_import_leftovers()  # a display that died under the import: its half-done work is closed too
            raise
    if not isinstance(x11._display, _ThreadsConnection):
        pyautogui.PAUSE = 0
        pyautogui.FAILSAFE = False  # (0, 0) is a legitimate click target, not an emergency stop
        x11._display.close()  # the connection pyautogui made on import: every device brings its own
        _close_import_leftovers()
        x11._display = _ThreadsConnection()
    return pyautogui


@contextlib.contextmanager
def _their_leaks() -> Iterator[None]:
    """python-xlib leaves the X authority file open at every connection, and PyAutoGUI's imports drop pipes of the
    `which` processes they run: warnings about files of theirs, not ours (ours are closed, see below)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        yield


def _close_import_leftovers() -> None:
    """What PyAutoGUI's imports opened and keep: mouseinfo's X connection, and the pipes of the `which` processes that
    pyscreeze and mouseinfo run (kept in their globals, or in the frames of an import that failed). Left open, they
    are the unclosed X11 socket and files reported when the process exits.

    `type(o)`, not `isinstance`: isinstance reads `o.__class__`, and a lazy proxy (openai's module-level `openai.beta`,
    `openai.chat`, ...) loads what it stands for when asked: 1,500 modules and 50 MB in every process."""
    display = getattr(sys.modules.get("mouseinfo"), "_display", None)
    with contextlib.suppress(Exception):  # its X server may be gone already
        display.close()
    for proc in [o for o in gc.get_objects() if issubclass(type(o), subprocess.Popen) and o.args[:1] == ["which"]]:
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


def clipboard(env: dict[str, str]) -> str | None:
    try:
        out = subprocess.run(["xclip", "-selection", "clipboard", "-out"], env=env, capture_output=True, timeout=2)
    except subprocess.TimeoutExpired:
        return None
    return out.stdout.decode("utf-8", errors="replace") if out.returncode == 0 else None


def last_event(action: Computer) -> tuple[str, int]:
    """The DOM event that ends an action's input, and how many of it the page receives."""
    if action.action == "move":
        return "mousemove", 1
    if action.action == "scroll":
        return "wheel", 1
    if action.action == "key":
        return "keyup", len(action.keys or ())
    if action.action == "type":
        text = action.text or ""
        return "keyup", len(text) if text.isascii() else 2
    return "mouseup", 2 if action.action == "double_click" else 1


class VisibleInput:
    def __init__(self, display_name: str, env: dict[str, str], alive: Callable[[], bool] = lambda: True) -> None:
        self.display_name = display_name
        self._env = env
        self._alive = alive
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="webeval-input")
        self._connection = None

    async def perform(self, action: Computer) -> None:
        if action.action == "wait":
            await asyncio.sleep(action.seconds or 0)
            return
        try:
            await asyncio.wait_for(asyncio.get_running_loop().run_in_executor(self._thread, self._perform, action),
                                   INPUT_S)
        except Exception as exc:
            if self._alive() and not isinstance(exc, (asyncio.TimeoutError, ConnectionError)):
                raise  # the display is there: a bug of ours, never masked as infrastructure
            raise InfraError("display", f"input on {self.display_name} failed: {exc!r}") from None

    def close(self) -> None:
        self._thread.shutdown(wait=False, cancel_futures=True)
        if self._connection is not None:
            try:
                self._connection.close()
            except Exception:
                pass  # the X server may be gone already

    def _connect(self):
        if self._connection is None:
            from Xlib.display import Display as XDisplay

            with _their_leaks(), x_client(self._env):
                self._connection = XDisplay(self.display_name)
        return self._connection

    def _perform(self, a: Computer) -> None:
        pasted = a.action == "type" and not (a.text or "").isascii()
        if pasted:
            self._to_clipboard(a.text or "")
        gui = _pyautogui(self._connect(), self._env)
        if pasted:
            gui.hotkey("ctrl", "v")
        else:
            self._send(gui, a)

    def _send(self, gui, a: Computer) -> None:
        if a.action == "click":
            gui.click(a.x, a.y)
        elif a.action == "double_click":
            # Chromium takes two presses within the same X server millisecond for two single clicks: a real
            # double click has a pause between them.
            gui.doubleClick(a.x, a.y, interval=_DOUBLE_CLICK_PAUSE_S)
        elif a.action == "right_click":
            gui.rightClick(a.x, a.y)
        elif a.action == "move":
            gui.moveTo(a.x, a.y)
        elif a.action == "drag":
            gui.moveTo(a.x, a.y)
            gui.mouseDown()
            gui.moveTo((a.x + a.to_x) // 2, (a.y + a.to_y) // 2)  # a midpoint, so drag-and-drop code sees movement
            gui.moveTo(a.to_x, a.to_y)
            gui.mouseUp()
        elif a.action == "type":
            gui.write(a.text or "")  # ASCII: non-ASCII text is pasted (pyautogui.write drops what it has no key for)
        elif a.action == "key":
            keys = [_KEY_NAMES.get(k.lower(), k.lower() if len(k) > 1 else k) for k in a.keys or ()]
            gui.hotkey(*keys)
        elif a.action == "scroll":
            if a.x is not None and a.y is not None:
                gui.moveTo(a.x, a.y)
            amount = a.amount or 5
            if a.direction in ("up", "down"):
                gui.scroll(amount if a.direction == "up" else -amount)
            else:
                gui.hscroll(amount if a.direction == "right" else -amount)

    def _to_clipboard(self, text: str) -> None:
        proc = spawn(["xclip", "-selection", "clipboard", "-in"], env=self._env, stdin_pipe=True)
        try:
            proc.communicate(text.encode("utf-8"), timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise ConnectionError("xclip did not take the text to paste within 5 s") from None
        # xclip serves the selection from a child it forks: paste only once the clipboard really holds the text.
        deadline = time.monotonic() + 5
        while clipboard(self._env) != text:
            if time.monotonic() > deadline:
                raise ConnectionError("the clipboard did not take the text to paste within 5 s")
            time.sleep(0.01)
