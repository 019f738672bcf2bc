"""Adapters and the prompt, through the real `openai` client against the scripted OpenAI-compatible stub."""

from __future__ import annotations

import io
import json

import pytest
from PIL import Image

from fixtures.openai_stub import OpenAIStub, Reply, call, text
from webeval.actions import ActionError, Element, Observation, parse_turn
from webeval.outcomes.record import FailureClass
from webeval.policy.openai import HttpTransport, OpenAIPolicy, make_adapter
from webeval.policy.openai.adapters import GridAdapter
from webeval.policy.openai.profile import make_profile
from webeval.policy.openai.set_of_marks import Mark, WebVoyagerAdapter, draw_marks
from webeval.tasks import Task

SCREEN = (1280, 720)
TASK = Task(id="T--1", site="T", goal="Find the price of the kettle.", start_url="http://127.0.0.1:9/shop/")


def png(colour: str = "white", size: tuple[int, int] = SCREEN) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, colour).save(out, format="PNG")
    return out.getvalue()


def observation(step: int, last_result: str | None = None, shot: bytes | None = None) -> Observation:
    return Observation(step=step, screenshot_png=shot or png(), size=SCREEN, url="http://127.0.0.1:9/shop/",
                       title="Shop", last_result=last_result)


MARKS = [Mark(0, Element(60, 54, 834, 40, "input", "search", "Search Shop")),
         Mark(1, Element(894, 54, 94, 40, "button", "", "Search")),
         Mark(2, Element(760, 361, 227, 199, "a", "", "Kitchen & Dining"))]


async def fixed_marks() -> list[Mark]:
    return MARKS


class Script:
    """Replies for the shared stub, in order; the last one repeats."""

    def __init__(self) -> None:
        self.replies: list[Reply] = [text("ok")]

    def __call__(self, request: dict) -> Reply:
        return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]


@pytest.fixture(scope="module")
def shared_stub():
    script = Script()
    with OpenAIStub(script) as stub:
        stub.replies = script
        yield stub


@pytest.fixture
def serve(shared_stub):
    """Point the shared stub at a new script; one server for the module keeps these tests quick."""

    def use(replies: list[Reply]) -> OpenAIStub:
        shared_stub.replies.replies = list(replies)
        shared_stub.requests.clear()
        return shared_stub

    return use


async def policy_for(stub: OpenAIStub, **fields) -> OpenAIPolicy:
    profile = make_profile({"base_url": stub.base_url, "model": "stub-model", "backoff_s": 0.01, **fields})
    policy = OpenAIPolicy(profile, make_adapter(profile, SCREEN, fixed_marks), lambda: HttpTransport(profile, "key"))
    await policy.begin(TASK)
    return policy


@pytest.fixture
def one_turn(serve):
    async def turn(script: list[Reply], **fields):
        stub = serve(script)
        policy = await policy_for(stub, **fields)
        try:
            return await policy.act(observation(1)), stub
        finally:
            await policy.end()

    return turn


def contract(turn) -> list:
    """What the agent loop does with a turn: the adapter's invalid message, or the contract's validation."""
    if turn.invalid is not None:
        raise ActionError(turn.invalid)
    return parse_turn([(c.name, c.arguments) for c in turn.calls], SCREEN)


# -- native tools ---------------------------------------------------------------------------------------------------
async def test_first_request_has_goal_screenshot_tools_and_sampling(one_turn):
    turn, stub = await one_turn([call("computer", {"action": "click", "x": 10, "y": 20})], temperature=0.3,
                                max_tokens=77)
    body = stub.requests[0]
    assert body["model"] == "stub-model" and body["temperature"] == 0.3 and body["max_tokens"] == 77
    assert [t["function"]["name"] for t in body["tools"]] == ["computer", "navigate", "tabs", "terminate"]
    system, user = body["messages"]
    assert system["role"] == "system" and "1280x720" in system["content"]
    assert user["content"][0]["text"] == f"Task: {TASK.goal}"
    image = [p for p in user["content"] if p["type"] == "image_url"][0]["image_url"]
    assert image["url"].startswith("data:image/png;base64,") and image["detail"] == "auto"
    assert turn.usage == {"prompt_tokens": 100, "completion_tokens": 20} and turn.retries == 0
    assert [a.model_dump(exclude_none=True) for a in contract(turn)] == [
        {"tool": "computer", "action": "click", "x": 10, "y": 20}]


@pytest.mark.parametrize("reply, error", [
    (call("computer", '{"action": "click", "x": 1'), "computer: arguments are not valid JSON"),
    (call("mouse", {"action": "click", "x": 1, "y": 1}), "unknown tool 'mouse'"),
    (call("computer", {"action": "click", "x": 1280, "y": 5}), "outside the 1280x720 screenshot"),
    (text("I would click the kettle."), "no tool call in the reply"),
])
async def test_native_replies_are_not_repaired(reply, error, one_turn):
    turn, _ = await one_turn([reply])
    with pytest.raises(ActionError, match=error):
        contract(turn)


async def test_cut_off_reply_without_tool_call_is_invalid(one_turn):
    turn, _ = await one_turn([Reply(content="Thought: I", finish_reason="length")])
    assert turn.invalid == "the reply was cut off at the token limit before any tool call"


@pytest.mark.parametrize("reply", [
    Reply(content="I can't help with that.", finish_reason="content_filter"),
    Reply(raw_body=json.dumps({"choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "content": None, "refusal": "I won't do this."}}]})),
])
async def test_refusal_or_content_filter_ends_the_episode(reply, one_turn):
    turn, _ = await one_turn([reply])
    assert turn.calls == [] and turn.end is not None and turn.end[0] is FailureClass.refusal


@pytest.mark.parametrize("body, message", [
    ("this is not json", "the endpoint's reply is not JSON"),
    (json.dumps({"choices": []}), "the reply has no choices"),
])
async def test_unreadable_reply_is_invalid(body, message, one_turn):
    turn, _ = await one_turn([Reply(raw_body=body)])
    assert turn.calls == [] and turn.invalid.startswith(message)


async def test_validation_error_goes_back_as_tool_result_and_observation(serve):
    stub = serve([call("computer", {"action": "click", "x": 5000, "y": 1}),
                  call("terminate", {"status": "success", "answer": "12"})])
    policy = await policy_for(stub)
    await policy.act(observation(1))
    await policy.act(observation(2, last_result="error: computer: point (5000, 1) is outside the 1280x720 screenshot"))
    await policy.end()
    messages = stub.requests[1]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "user"]
    assert messages[2]["tool_calls"][0]["function"]["arguments"] == '{"action": "click", "x": 5000, "y": 1}'
    assert messages[3]["tool_call_id"] == messages[2]["tool_calls"][0]["id"]
    assert "outside the 1280x720" in messages[3]["content"]
    assert "Last action: error: computer: point (5000, 1)" in messages[4]["content"][0]["text"]


# -- normalized grids -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("top, x, y, pixels", [
    (1, 0, 0, (0, 0)), (1, 1, 1, (1279, 719)), (1, 0.5, 0.25, (640, 180)),
    (999, 0, 0, (0, 0)), (999, 999, 999, (1279, 719)), (999, 500, 250, (640, 180)),
])
async def test_grid_coordinates_map_to_pixels(top, x, y, pixels, one_turn):
    turn, stub = await one_turn([call("computer", {"action": "click", "x": x, "y": y})], adapter=f"grid-{top}")
    (action,) = contract(turn)
    assert (action.x, action.y) == pixels
    schema = stub.requests[0]["tools"][0]["function"]["parameters"]["properties"]["x"]["anyOf"][0]
    assert schema["maximum"] == top


@pytest.mark.parametrize("top, arguments, error", [
    (1, {"action": "click", "x": 1.2, "y": 0.5}, "computer: x=1.2 is outside the 0..1 grid"),
    (1, {"action": "click", "x": -0.1, "y": 0.5}, "computer: x=-0.1 is outside the 0..1 grid"),
    (999, {"action": "click", "x": 10, "y": 1000}, "computer: y=1000 is outside the 0..999 grid"),
    (999, {"action": "click", "x": 10.5, "y": 10}, "computer: x must be an integer from 0 to 999, not 10.5"),
    (1, {"action": "click", "x": "0.5", "y": 0.5}, "computer: x must be a number from 0 to 1, not \"0.5\""),
])
async def test_grid_coordinates_off_the_grid_are_invalid(top, arguments, error, one_turn):
    turn, _ = await one_turn([call("computer", arguments)], adapter=f"grid-{top}")
    assert turn.calls == [] and turn.invalid == error


async def test_grid_leaves_malformed_json_and_other_tools_to_the_contract():
    adapter = GridAdapter(SCREEN, 1)
    message = {"tool_calls": [{"id": "a", "type": "function", "function": {"name": "computer", "arguments": "{x"}},
                              {"id": "b", "type": "function", "function": {
                                  "name": "navigate", "arguments": '{"url": "http://a.test/"}'}}]}
    reading = adapter.read(message, "tool_calls")
    assert [(c.name, c.arguments) for c in reading.calls] == [("computer", "{x"), ("navigate", '{"url": "http://a.test/"}')]


# -- WebVoyager text protocol ---------------------------------------------------------------------------------------
def voyager(content: str):
    adapter = WebVoyagerAdapter(SCREEN, fixed_marks)
    adapter.current = {m.label: m for m in MARKS}
    reading = adapter.read({"content": content}, "stop")
    return reading


@pytest.mark.parametrize("content, expected", [
    ("Thought: go.\nAction: Click [2]", [("computer", {"action": "click", "x": 873, "y": 460})]),
    ("Action: Click 1", [("computer", {"action": "click", "x": 941, "y": 74})]),
    ("Thought: search\nAction: Type [0]; pour-over kettle", [
        ("computer", {"action": "click", "x": 477, "y": 74}), ("computer", {"action": "key", "keys": ["ctrl", "a"]}),
        ("computer", {"action": "type", "text": "pour-over kettle"}), ("computer", {"action": "key", "keys": ["enter"]})]),
    ("Action: Scroll [WINDOW]; down", [("computer", {"action": "scroll", "direction": "down", "amount": 5, "x": 640,
                                                    "y": 360})]),
    ("Action: Scroll [2]; up", [("computer", {"action": "scroll", "direction": "up", "amount": 5, "x": 873, "y": 460})]),
    ("Action: Wait", [("computer", {"action": "wait", "seconds": 5.0})]),
    ("Action: GoBack", [("navigate", {"back": True})]),
    ("Action: Google", [("navigate", {"url": "https://www.google.com/"})]),
    ("Thought: found it\nAction: ANSWER; 12 units\nin stock", [("terminate", {"status": "success",
                                                                              "answer": "12 units\nin stock"})]),
])
def test_webvoyager_actions_become_tool_calls(content, expected):
    reading = voyager(content)
    assert reading.invalid is None
    assert [(c.name, json.loads(c.arguments)) for c in reading.calls] == expected
    parse_turn([(c.name, c.arguments) for c in reading.calls], SCREEN)  # and they satisfy the contract


@pytest.mark.parametrize("content, error", [
    ("Thought: I will click the kettle.", "the reply has no 'Action:'"),
    ("Action: Click [7]", "there is no element [7] on the screenshot: the labels are 0 to 2"),
    ("Action: click [1]", "cannot read the action 'click [1]'"),
    ("Action: Scroll [WINDOW]; sideways", "cannot read the action"),
    ("", "the reply has no text"),
])
def test_webvoyager_replies_outside_the_grammar_are_invalid(content, error):
    reading = voyager(content)
    assert reading.calls == [] and reading.invalid.startswith(error)


async def test_webvoyager_prompt_has_labelled_screenshot_and_element_list(one_turn):
    turn, stub = await one_turn([text("Thought: open the category.\nAction: Click [2]")], adapter="webvoyager")
    body = stub.requests[0]
    assert "tools" not in body
    parts = body["messages"][1]["content"]
    assert '[2]: <a> "Kitchen & Dining";' in parts[-1]["text"] and '[0]: <input search> "Search Shop";' in parts[-1]["text"]
    assert "Click [Numerical_Label]" in body["messages"][0]["content"]
    assert json.loads(turn.calls[0].arguments) == {"action": "click", "x": 873, "y": 460}


def test_marks_are_drawn_on_the_screenshot():
    plain = png()
    drawn = Image.open(io.BytesIO(draw_marks(plain, MARKS))).convert("RGB")
    assert drawn.size == SCREEN
    assert drawn.getpixel((760, 380)) != (255, 255, 255)  # the outline of mark 2 (left edge)
    assert drawn.getpixel((870, 460)) == (255, 255, 255)  # its inside stays as it was


# -- the screenshot-history window ----------------------------------------------------------------------------------
async def test_request_stays_bounded_over_100_steps(serve):
    stub = serve([call("computer", {"action": "wait", "seconds": 0})])
    policy = await policy_for(stub, screenshots=3, history_steps=20)
    for step in range(1, 101):
        # Distinct screenshots of one size (small, to keep the test quick), so no image is smaller than another.
        shot = png(f"#{step:02x}{step:02x}80", (320, 180))
        await policy.act(observation(step, last_result="wait done" if step > 1 else None, shot=shot))
    await policy.end()
    sizes = [len(json.dumps(body)) for body in stub.requests]
    images = [sum(1 for m in body["messages"] if isinstance(m["content"], list)
                  for p in m["content"] if p["type"] == "image_url") for body in stub.requests]
    assert images[0] == 1 and images[2:] == [3] * 98
    assert max(sizes[30:]) <= sizes[30] * 1.02  # flat once the window is full: no growth over 70 more steps
    last = stub.requests[-1]["messages"]
    assert "Steps 1 to 80 are left out" in last[1]["content"][0]["text"]
    stubs = [p["text"] for m in last if m["role"] == "user" for p in m["content"] if "left out]" in p.get("text", "")]
    assert len(stubs) == 17 and stubs[-1].endswith("[screenshot of step 97 left out]")
    roles = [m["role"] for m in last if m["role"] != "tool"]
    assert roles == ["system"] + ["user", "assistant"] * 19 + ["user"]
