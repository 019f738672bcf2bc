"""Set-of-marks on a real page: which elements are labelled, their screen boxes, and a WebVoyager `Click [N]` landing
on the labelled element through the real executor and visible input."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from webeval.actions import parse_turn
from webeval.benchmarks.local.site_server import Site, SiteServer
from webeval.policy.openai.set_of_marks import Mark, WebVoyagerAdapter, draw_marks
from webeval.runtime.executor import execute
from webeval.runtime.marks import interactive_elements
from webeval.runtime.observe import screenshot_png

site = Site("marks", "Marks")

_PAGE = """<!doctype html><html><head><meta charset=utf-8><title>Marks</title>
<style>body{margin:0;font:16px sans-serif} .abs{position:absolute}</style></head><body>
<button id=go class=abs style="left:100px;top:100px;width:200px;height:50px" onclick="hit('go')">Go</button>
<a id=more class=abs href="#more" style="left:400px;top:110px" onclick="hit('more')">Read more</a>
<input id=email class=abs placeholder="Email address" style="left:100px;top:200px;width:300px;height:30px;box-sizing:border-box">
<input type=hidden name=token value=x>
<button class=abs style="display:none;left:500px;top:200px">Hidden</button>
<button class=abs style="visibility:hidden;left:500px;top:250px">Invisible</button>
<button class=abs style="left:700px;top:300px;width:100px;height:40px">Covered</button>
<div class=abs style="left:650px;top:250px;width:300px;height:200px;background:#ccc;z-index:5"></div>
<div class=abs role=button style="left:100px;top:400px;width:100px;height:100px;background:#08f" onclick="hit('tile')">Tile</div>
<button class=abs style="left:1200px;top:600px;width:200px;height:40px">Half off</button>
<button class=abs style="left:100px;top:2000px">Far below</button>
<script>window.hits = []; function hit(name) { window.hits.push(name); }</script>
</body></html>"""


@site.route("/")
def page(req):
    return _PAGE


@pytest.fixture(scope="module")
def marks_server():
    with SiteServer({"marks": site}) as server:
        yield server


@pytest.fixture
async def marks_page(session, marks_server):
    await session.goto(marks_server.origin + "/marks/")
    await session.settle()
    return session


async def test_only_elements_a_person_could_act_on_now(marks_page):
    found = await interactive_elements(marks_page)
    assert [(e.tag, e.kind, e.text) for e in found] == [
        ("button", "", "Go"), ("a", "", "Read more"), ("input", "text", "Email address"),
        ("div", "button", "Tile"), ("button", "", "Half off")]
    go, _, email, tile, half = found
    assert (go.x, go.y, go.width, go.height) == (100, 100, 200, 50)
    assert (email.x, email.y, email.width) == (100, 200, 300)
    assert (tile.x, tile.y, tile.width, tile.height) == (100, 400, 100, 100)
    assert (half.x, half.width) == (1200, 80)  # only the part on screen


async def test_click_by_label_lands_on_the_element(marks_page, runtime):
    elements = await interactive_elements(marks_page)
    marks = [Mark(i, element) for i, element in enumerate(elements)]

    async def provide() -> list[Mark]:
        return marks

    adapter = WebVoyagerAdapter((1280, 720), provide)
    adapter.current = {m.label: m for m in marks}
    for label in (3, 0):
        reading = adapter.read({"content": f"Thought: press it.\nAction: Click [{label}]"}, "stop")
        (action,) = parse_turn([(c.name, c.arguments) for c in reading.calls], (1280, 720))
        await execute(action, marks_page, runtime.device)
        await marks_page.settle()
    assert await marks_page.active.evaluate("window.hits") == ["tile", "go"]


async def test_labels_are_drawn_where_the_elements_are(marks_page):
    elements = await interactive_elements(marks_page)
    marks = [Mark(i, element) for i, element in enumerate(elements)]
    shot = await screenshot_png(marks_page.display)
    before = Image.open(io.BytesIO(shot)).convert("RGB")
    after = Image.open(io.BytesIO(draw_marks(shot, marks))).convert("RGB")
    assert after.getpixel((101, 101)) != before.getpixel((101, 101))  # the label box at the button's corner
    assert after.getpixel((640, 600)) == before.getpixel((640, 600))  # nothing drawn where no element is
