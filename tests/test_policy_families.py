"""Each model family's documented profile, with the scripted server playing that family's exact reply format, in a
real headed Chromium at 1280x720, 1920x1080 and 1366x768: the model is sent the resized image its profile asks for,
finds the red target in it as a model would, answers in its own coordinate space, and the click lands on the target
within one pixel."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest

from fixtures.openai_stub import OpenAIStub, Reply
from tests.families import FAMILIES, Act, family_profile, in_space, latest_image, red_centre, reply
from webeval.agent.episode import Episode
from webeval.agent.loop import AgentLoop, Budgets
from webeval.benchmarks.local.site_server import Site, SiteServer
from webeval.policy.openai import HttpTransport, OpenAIPolicy, make_adapter
from webeval.policy.openai.image import MIME, frame_for
from webeval.runtime.slot import Slot
from webeval.tasks import Task

SIZES = [(1280, 720), (1920, 1080), (1366, 768)]
aim = Site("aim", "Aim")


@aim.route("/targets")
def targets(req):
    """A white page with one 9x9 red square at a time; each click is logged and moves it to the next point."""
    points = json.loads(req.query["points"])
    return f"""<!doctype html><html><head><meta charset=utf-8><title>Aim</title>
<style>html,body{{margin:0;background:#fff;height:100%;overflow:hidden}}
#t{{position:absolute;width:9px;height:9px;background:#f00}}</style></head><body><div id=t></div><script>
const points = {json.dumps(points)}; const t = document.getElementById('t'); let at = 0; window.clicks = [];
const show = () => {{ if (at < points.length) {{ t.style.left = (points[at][0] - 4) + 'px';
  t.style.top = (points[at][1] - 4) + 'px'; }} else {{ t.remove(); document.title = 'Done'; }} }};
document.addEventListener('click', (e) => {{ window.clicks.push([e.clientX, e.clientY]); at += 1; show(); }});
show();</script></body></html>"""


@pytest.fixture(scope="module")
def aim_server():
    with SiteServer({"aim": aim}) as server:
        yield server


@pytest.fixture(scope="module", params=SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
async def screen(request, runtime):
    """A display and headed Chromium at the size (the session's own runtime for 1280x720)."""
    width, height = request.param
    if (width, height) == (runtime.width, runtime.height):
        await runtime.ready()
        yield runtime, request.param
        return
    runtime = Slot(width, height, None)
    await runtime.ready()
    try:
        yield runtime, request.param
    finally:
        await runtime.close()


@pytest.fixture(scope="module")
async def aim_session(screen, tmp_path_factory):
    """One browser session per screen size, shared by the families (each episode opens the page afresh)."""
    runtime, size = screen
    session = await runtime.browser.new_session(tmp_path_factory.mktemp("aim"))
    try:
        yield runtime, size, session
    finally:
        await session.close()


def aimer(family: str, holder: dict):
    """The model: finds the red square in the image it was sent, points at it in its own space; none left: done."""
    def script(request: dict) -> Reply:
        image, mime = latest_image(request)
        holder.setdefault("seen", []).append((image.size, mime))
        centre = red_centre(image)
        if centre is None:
            return reply(family, Act("answer", text="done"))
        x, y = in_space(holder["profile"], image, centre)
        return reply(family, Act("click", x, y))

    return script


@pytest.mark.parametrize("family", list(FAMILIES))
async def test_each_family_clicks_on_target_after_resizing(aim_session, family, aim_server, tmp_path):
    runtime, (width, height), session = aim_session
    points = [[width * 3 // 10 + 1, height // 3 + 2], [width - 13, height - 11], [17, height // 2 + 1]]
    task = Task(id="Aim--1", site="Aim", goal="Click each red square until none is left, then answer 'done'.",
                start_url=f"{aim_server.origin}/aim/targets?points={quote(json.dumps(points))}")
    holder: dict = {}
    with OpenAIStub(aimer(family, holder), api_key="sk-family-test") as stub:
        profile = holder["profile"] = family_profile(family, stub.base_url)
        policy = OpenAIPolicy(profile, make_adapter(profile, (width, height), None),
                              lambda: HttpTransport(profile, "sk-family-test"))
        episode = await AgentLoop(session, runtime.device, policy, Budgets(max_steps=6)).run(
            task, Episode(task_id=task.id, folder=tmp_path))
        clicks = await session.active.evaluate("window.clicks")
    assert episode.answer == "done", (episode.reason, [s.error for s in episode.steps])
    assert [s.actions[0]["action"] for s in episode.steps[:3]] == ["click"] * 3
    misses = [(click, point) for click, point in zip(clicks, points) if max(abs(click[0] - point[0]),
                                                                          abs(click[1] - point[1])) > 1]
    assert len(clicks) == 3 and misses == [], misses
    frame = frame_for(profile, (width, height))
    assert set(holder["seen"]) == {(frame.image, MIME[profile.image.format])}  # what the model was sent
    assert_request_shape(family, stub.requests[0], frame)


def assert_request_shape(family: str, first: dict, frame) -> None:
    """What each family is sent: its API, its tools (or none), its coordinate space in the schema or the text."""
    if family == "computer-use":
        assert first["tools"] == [{"type": "computer_use_preview", "display_width": frame.image[0],
                                   "display_height": frame.image[1], "environment": "browser"}]
        assert first["truncation"] == "auto" and "temperature" not in first and "input" in first
        return
    system = first["messages"][0]["content"]
    if family == "ui-tars":
        assert "tools" not in first and f"({frame.image[0]}x{frame.image[1]} pixels)" in system
        return
    x = first["tools"][0]["function"]["parameters"]["properties"]["x"]["anyOf"][0]
    assert x["maximum"] == frame.space[0] - 1
    grid = f"on a {frame.space[0]}x{frame.space[1]} grid" if frame.space != frame.image else "in pixels of"
    assert grid in system and f"({frame.image[0]}x{frame.image[1]} pixels)" in system
    if family == "reasoning":
        assert (first["max_tokens"], first["temperature"], first["top_p"]) == (8192, 0.6, 0.95)
