"""Every action of the contract, executed for real on the worker's display and seen by the page."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from PIL import Image, ImageGrab
import io

from tests.conftest import ROOT
from webeval.actions import Observation, parse_call
from webeval.policy.oracle import OraclePolicy
from webeval.tasks import OracleStep, Task
from webeval.runtime.display import x_client
from webeval.runtime.executor import execute
from webeval.runtime.observe import grab, screenshot_png

SCREEN = (1280, 720)


async def act(session, runtime, tool: str, **arguments):
    action = parse_call(tool, json.dumps(arguments), SCREEN)
    result = await execute(action, session, runtime.device)
    await session.settle()
    return result


async def events(session, kind: str) -> list[dict]:
    return [e for e in await session.active.evaluate("window.events") if e["type"] == kind]


@pytest.fixture
async def input_page(session, lab_server):
    await session.goto(lab_server.origin + "/lab/input")
    await session.settle()
    return session


# Distinct points: Chromium counts a click near the last one within 0.5 s as its repeat, whatever the window.
@pytest.mark.parametrize("action, event, x, y", [("click", "click", 900, 150), ("double_click", "dblclick", 950, 200),
                                                 ("right_click", "contextmenu", 850, 250)])
async def test_pointer_buttons_land_at_screen_pixels(input_page, runtime, action, event, x, y):
    await act(input_page, runtime, "computer", action=action, x=x, y=y)
    seen = await events(input_page, event)
    assert [(e["x"], e["y"]) for e in seen] == [(x, y)]


async def test_move_and_drag(input_page, runtime):
    await act(input_page, runtime, "computer", action="move", x=321, y=456)
    assert await input_page.active.evaluate("window.lastMove") == [321, 456]
    await act(input_page, runtime, "computer", action="drag", x=850, y=150, to_x=950, to_y=250)
    down = await events(input_page, "mousedown")
    up = await events(input_page, "mouseup")
    assert (down[-1]["x"], down[-1]["y"], up[-1]["x"], up[-1]["y"]) == (850, 150, 950, 250)


async def test_type_ascii_and_key_combinations(input_page, runtime):
    await act(input_page, runtime, "computer", action="click", x=300, y=112)
    await act(input_page, runtime, "computer", action="type", text="Hello, World! 42")
    field = input_page.active.locator("#field")
    assert await field.input_value() == "Hello, World! 42"
    await act(input_page, runtime, "computer", action="key", keys=["ctrl", "a"])
    await act(input_page, runtime, "computer", action="type", text="replaced")
    assert await field.input_value() == "replaced"
    await act(input_page, runtime, "computer", action="key", keys=["backspace"])
    assert await field.input_value() == "replace"


async def test_non_ascii_text_lands_intact(input_page, runtime):
    text = "naïve café — 東京 ½ Ünïcödé"
    await act(input_page, runtime, "computer", action="click", x=300, y=250)
    await act(input_page, runtime, "computer", action="type", text=text)
    assert await input_page.active.locator("#box").input_value() == text


async def test_scroll_moves_the_page_and_wait_waits(input_page, runtime):
    await act(input_page, runtime, "computer", action="scroll", direction="down", amount=5, x=640, y=400)
    down = await input_page.active.evaluate("scrollY")
    assert down > 100
    await act(input_page, runtime, "computer", action="scroll", direction="up", amount=5)
    assert await input_page.active.evaluate("scrollY") < down
    assert await act(input_page, runtime, "computer", action="wait", seconds=0.1) == "wait done"


async def test_navigate_back_forward(session, runtime, lab_server):
    await session.goto(lab_server.origin + "/lab/color/red")
    await act(session, runtime, "navigate", url=lab_server.origin + "/lab/color/blue")
    assert session.active.url.endswith("/color/blue")
    await act(session, runtime, "navigate", back=True)
    assert session.active.url.endswith("/color/red")
    await act(session, runtime, "navigate", forward=True)
    assert session.active.url.endswith("/color/blue")


def pixel(png: bytes, x: int, y: int) -> tuple[int, int, int]:
    return Image.open(io.BytesIO(png)).convert("RGB").getpixel((x, y))


async def test_the_observation_is_a_lossless_png_of_the_screen(input_page, runtime):
    display = runtime.display
    await input_page.active.evaluate("""document.body.insertAdjacentHTML('beforeend', '<div style="position:absolute;'
        + 'left:300px;top:400px;padding:20px;background:#e03c1e;color:#1e50e0;font-size:30px">Tomás · 42</div>')""")
    await input_page.settle()
    # The reference is read the other way, through the X socket (XGetImage), not shared memory.
    with x_client(display.env()):
        screen = ImageGrab.grab(bbox=(0, 0, display.width, display.height), xdisplay=display.name).convert("RGB")
    colors = screen.getcolors(maxcolors=1 << 16)
    assert colors is not None and len(colors) > 20  # a real page: anti-aliased text and boxes, not a flat screen
    assert screen.getpixel((310, 410)) == (0xe0, 0x3c, 0x1e)  # red and blue apart: a channel swap would show
    decoded = Image.open(io.BytesIO(await screenshot_png(display)))
    assert (decoded.format, decoded.mode, decoded.size) == ("PNG", "RGB", SCREEN)
    assert decoded.tobytes() == screen.tobytes()
    assert grab(display).tobytes() == screen.tobytes()


async def test_tabs_new_focus_close_keep_screen_pixels(session, runtime, lab_server):
    await session.goto(lab_server.origin + "/lab/color/red")
    assert await act(session, runtime, "tabs", action="new", url=lab_server.origin + "/lab/color/blue") == "opened tab 1"
    shot = await screenshot_png(runtime.display)
    assert pixel(shot, 2, 2) == pixel(shot, 1270, 710) == (0, 0, 255)
    assert [t.active for t in await session.tabs()] == [False, True]
    await act(session, runtime, "tabs", action="focus", tab_id=0)
    assert pixel(await screenshot_png(runtime.display), 2, 2) == (255, 0, 0)
    await act(session, runtime, "tabs", action="close", tab_id=0)
    assert [t.id for t in await session.tabs()] == [1]
    assert await act(session, runtime, "tabs", action="focus", tab_id=7) == "there is no tab 7"


async def test_page_opened_tab_is_tracked_and_placed(session, runtime, lab_server):
    await session.goto(lab_server.origin + "/lab/popup")
    await session.settle()
    await act(session, runtime, "computer", action="click", x=100, y=50)
    assert len(session.pages) == 2 and session.active.url.endswith("/color/red")
    shot = await screenshot_png(runtime.display)
    # The new window's viewport covers the whole screen: no tab strip or toolbar in the picture.
    assert pixel(shot, 1, 1) == pixel(shot, 640, 360) == pixel(shot, 1260, 715) == (255, 0, 0)
    assert "a new tab opened" in session.take_events()


async def test_dialog_never_hangs_and_is_reported(session, runtime, lab_server):
    await session.goto(lab_server.origin + "/lab/dialog")
    await session.settle()
    await act(session, runtime, "computer", action="click", x=150, y=50)
    assert await session.active.locator("#after").text_content() == "after"
    assert any("hello there" in e for e in session.take_events())


async def test_dialogs_are_answered_in_the_page_without_a_modal(session, runtime, lab_server):
    dialogs = []
    session.active.on("dialog", lambda dialog: dialogs.append(dialog.message))
    await session.goto(lab_server.origin + "/lab/dialog")
    await session.settle()
    answers = await session.active.evaluate("[alert('a'), confirm('c'), prompt('p', 'default')]")
    assert answers == [None, False, None] and dialogs == []
    seen = []
    for _ in range(250):  # each answer reaches the harness as a binding call, on its own way out of the page
        seen += session.take_events()
        if len(seen) >= 3:
            break
        await session.active.wait_for_timeout(20)
    assert seen == ["an alert dialog said 'a' and was accepted", "a confirm dialog said 'c' and was dismissed",
                    "a prompt dialog said 'p' and was dismissed"]


async def test_download_lands_in_the_task_folder(session, runtime, lab_server, tmp_path):
    await session.goto(lab_server.origin + "/lab/download")
    await session.settle()
    await act(session, runtime, "computer", action="click", x=60, y=25)
    target = tmp_path / "downloads" / "report.txt"
    for _ in range(50):
        if target.exists() and target.read_text() == "the file's content":
            break
        await session.active.wait_for_timeout(100)
    assert target.read_text() == "the file's content"


async def test_settling_waits_for_a_late_response(session, runtime, lab_server):
    await session.goto(lab_server.origin + "/lab/slow")
    await session.settle()
    await act(session, runtime, "computer", action="click", x=150, y=50)
    # act() settles: the 300 ms response and the redraw it causes are in the next observation.
    assert pixel(await screenshot_png(runtime.display), 1000, 600) == (0, 0, 255)
    assert await session.active.locator("#out").text_content() == "after"


async def test_the_oracle_waits_for_a_page_that_is_leaving_before_its_next_step(session, runtime, lab_server):
    # Past the settle cap (a slow response, a loaded machine) the old document is still there: a solution that
    # answered now would be judged before its last click's request had reached the site.
    await session.goto(lab_server.origin + "/lab/leave")
    await session.settle()
    oracle = OraclePolicy(session.locate, ready=session.page_ready)
    await oracle.begin(Task(id="Lab--leave", site="Lab", goal="leave", start_url=lab_server.origin + "/lab/leave",
                            solution=[OracleStep(do="click", selector="#away"), OracleStep(do="answer", text="done")]))
    observation = Observation(step=1, screenshot_png=b"", size=SCREEN, url=session.active.url, title="Leave")
    click = (await oracle.act(observation)).calls[0]
    assert json.loads(click.arguments)["action"] == "click"
    session.settler.cap_s = 0.3
    await act(session, runtime, "computer", action="click", x=150, y=50)
    turns = [json.loads((await oracle.act(observation)).calls[0].arguments)]  # the 2 s response is still due
    while turns[-1].get("action") == "wait":
        await session.active.wait_for_timeout(200)
        turns.append(json.loads((await oracle.act(observation)).calls[0].arguments))
    assert turns[0] == {"action": "wait", "seconds": 1} and turns[-1].get("answer") == "done", turns
    assert await session.active.title() == "Arrived"


async def test_input_taken_by_a_selects_popup_settles_without_waiting_out_the_cap(session, runtime, lab_server):
    # A select's popup takes the pointer and keys from the page, which then never sees the input's last event.
    await session.goto(lab_server.origin + "/lab/select")
    await session.settle()
    waited = []
    for tool, arguments in [("computer", {"action": "click", "x": 100, "y": 20}),
                            ("computer", {"action": "key", "keys": ["down"]}),
                            ("computer", {"action": "key", "keys": ["enter"]})]:
        action = parse_call(tool, json.dumps(arguments), SCREEN)
        await execute(action, session, runtime.device)
        waited.append(await session.settle())
    assert await session.active.evaluate("document.getElementById('s').value") == "banana"
    assert max(waited) < session.settler.cap_s / 2, waited


def _against_a_dead_display(script: str, *python_args: str) -> subprocess.CompletedProcess:
    """`script` in a fresh interpreter whose $DISPLAY names no X server."""
    return subprocess.run([sys.executable, *python_args, "-c", script], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "DISPLAY": ":98", "XAUTHORITY": "/nonexistent"}, timeout=60)


def test_an_input_device_whose_display_died_under_its_import_leaves_no_pipes_open():
    """PyAutoGUI's import runs `which` processes and then connects to $DISPLAY; when that display is gone, the import
    fails, and the pipes it opened must not be left for the interpreter's exit to report."""
    script = ("import os, webeval.runtime.input as i\ntry:\n    i._pyautogui(None, dict(os.environ))\n"
              "except Exception as e:\n    print(type(e).__name__)\n")
    done = _against_a_dead_display(script, "-W", "default")
    assert "DisplayConnectionError" in done.stdout, done.stdout + done.stderr
    assert "BufferedReader" not in done.stderr, done.stderr


def test_closing_pyautoguis_leftovers_loads_nothing_a_lazy_proxy_stands_for():
    """Looking for PyAutoGUI's pipes walks every object of the process; `openai.beta`, `openai.chat` and the like are
    lazy proxies that load the client's whole API (1,500 modules, 50 MB) when their class is asked. A process that
    imported `openai` keeps the modules it had."""
    script = ("import os, sys, openai, webeval.runtime.input as i\nbefore = len(sys.modules)\ntry:\n"
              "    i._pyautogui(None, dict(os.environ))\nexcept Exception as e:\n    print(type(e).__name__)\n"
              "print('openai.resources.beta' in sys.modules, len(sys.modules) - before)\n")
    done = _against_a_dead_display(script)
    assert "DisplayConnectionError" in done.stdout, done.stdout + done.stderr
    loaded_beta, added = done.stdout.split()[-2:]
    assert loaded_beta == "False", done.stdout
    assert int(added) < 300, done.stdout  # PyAutoGUI and python-xlib: about 100
