"""UI-TARS's action grammar read into the action contract: every action, every way of writing a point, coordinates of
the resized image mapped back to the screen, and replies outside the grammar reported, never guessed at."""

from __future__ import annotations

import io
import json

import pytest
from PIL import Image

from fixtures.openai_stub import OpenAIStub, text
from webeval.actions import Observation, parse_turn
from webeval.policy.openai import HttpTransport, OpenAIPolicy, make_adapter
from webeval.policy.openai.image import Frame
from webeval.policy.openai.profile import make_profile
from webeval.policy.openai.uitars import UITarsAdapter
from webeval.tasks import Task

FRAME = Frame(screen=(1920, 1080), image=(1932, 1092), space=(1932, 1092))  # UI-TARS-1.5's resize of 1920x1080


def white_png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (1280, 720), "white").save(out, format="PNG")
    return out.getvalue()


WHITE = white_png()


def read(content: str):
    return UITarsAdapter(FRAME).read({"content": content}, "stop")


@pytest.mark.parametrize("action, expected", [
    ("click(start_box='(966,546)')", [("computer", {"action": "click", "x": 960, "y": 540})]),
    ("click(start_box='<|box_start|>(966,546)<|box_end|>')", [("computer", {"action": "click", "x": 960, "y": 540})]),
    ("click(point='<point>966 546</point>')", [("computer", {"action": "click", "x": 960, "y": 540})]),
    ("click(start_box='(960,540,972,552)')", [("computer", {"action": "click", "x": 960, "y": 540})]),
    ("left_double(start_box='(0,0)')", [("computer", {"action": "double_click", "x": 0, "y": 0})]),
    ("right_single(start_box='(1931,1091)')", [("computer", {"action": "right_click", "x": 1919, "y": 1079})]),
    ("drag(start_box='(10,10)', end_box='(100,200)')",
     [("computer", {"action": "drag", "x": 10, "y": 10, "to_x": 99, "to_y": 198})]),
    ("drag(start_point='<point>10 10</point>', end_point='<point>100 200</point>')",
     [("computer", {"action": "drag", "x": 10, "y": 10, "to_x": 99, "to_y": 198})]),
    ("hotkey(key='ctrl a')", [("computer", {"action": "key", "keys": ["ctrl", "a"]})]),
    ("hotkey(key='arrowdown')", [("computer", {"action": "key", "keys": ["down"]})]),
    ("type(content='pour-over kettle')", [("computer", {"action": "type", "text": "pour-over kettle"})]),
    ("type(content='it\\'s (really) fine\\n')", [("computer", {"action": "type", "text": "it's (really) fine"}),
                                                 ("computer", {"action": "key", "keys": ["enter"]})]),
    ("scroll(start_box='(966,546)', direction='down')",
     [("computer", {"action": "scroll", "direction": "down", "amount": 5, "x": 960, "y": 540})]),
    ("scroll(direction='up')", [("computer", {"action": "scroll", "direction": "up", "amount": 5, "x": 960,
                                              "y": 540})]),
    ("wait()", [("computer", {"action": "wait", "seconds": 5.0})]),
    ("finished(content='The kettle costs $34.99.')",
     [("terminate", {"status": "success", "answer": "The kettle costs $34.99."})]),
    ("call_user()", [("terminate", {"status": "failure",
                                    "answer": "the model asked for the user's help (call_user)"})]),
    ("click(start_box='(966,546)')\n\ntype(content='a')", [("computer", {"action": "click", "x": 960, "y": 540}),
                                                          ("computer", {"action": "type", "text": "a"})]),
])
def test_every_action_becomes_calls_of_the_contract(action, expected):
    reading = read(f"Thought: I see the page. Action: is what I do next.\nAction: {action}")
    assert reading.invalid is None
    assert [(c.name, json.loads(c.arguments)) for c in reading.calls] == expected
    parse_turn([(c.name, c.arguments) for c in reading.calls], FRAME.screen)


@pytest.mark.parametrize("content, error", [
    ("Thought: I would click the kettle.", "the reply has no 'Action:': reply with 'Thought: ...' then 'Action: ...'"),
    ("Action: tap(start_box='(1,1)')", "ui-tars: unknown action 'tap': use one of click, left_double"),
    ("Action: click(start_box='(12.5,5)')", "ui-tars: cannot read a point from '(12.5,5)': use '(x,y)' with integer"),
    ("Action: click(start_box=(1,1))", "ui-tars: click: arguments are written name='value'"),
    ("Action: click(start_box='(1,1)'", "ui-tars: click: the call is not closed with ')'"),
    ("Action: type(content='open", "ui-tars: a quoted argument is not closed"),
    ("Action: click()", "ui-tars: click needs start_box='(x,y)'"),
    ("Action: scroll(direction='sideways')", "ui-tars: scroll direction 'sideways': use up, down, left or right"),
    ("Action: click(start_box='(1,1)', button='left')", "ui-tars: click does not take button"),
    ("Action: ", "ui-tars: 'Action:' is followed by no action"),
    ("Action: I will click", "ui-tars: expected an action like click(start_box='(x,y)'), found 'I will click'"),
])
def test_replies_outside_the_grammar_are_invalid(content, error):
    reading = read(content)
    assert reading.calls == [] and reading.invalid.startswith(error), reading.invalid


def test_a_point_outside_the_image_names_the_image():
    assert read("Action: click(start_box='(1932,5)')").invalid == \
        "ui-tars: click: point (1932, 5) is outside the 1932x1092 screenshot"


async def test_the_request_has_no_tools_and_the_history_keeps_the_replies_as_text():
    reply = "Thought: open the category.\nAction: click(start_box='(100,200)')"
    with OpenAIStub([text(reply)]) as stub:
        profile = make_profile({"base_url": stub.base_url, "model": "ui-tars", "adapter": "ui-tars",
                                "image": {"factor": 28, "min_pixels": 78400, "max_pixels": 12845056}})
        policy = OpenAIPolicy(profile, make_adapter(profile, (1280, 720), None), lambda: HttpTransport(profile, "k"))
        await policy.begin(Task(id="T--1", site="T", goal="g", start_url="http://127.0.0.1:9/"))
        for step in (1, 2):
            turn = await policy.act(Observation(step=step, screenshot_png=WHITE, size=(1280, 720),
                                                url="http://127.0.0.1:9/", title="T"))
        await policy.end()
    first, second = stub.requests
    assert "tools" not in first and "1288x728 pixels" in first["messages"][0]["content"]
    assert second["messages"][2] == {"role": "assistant", "content": reply}
    assert json.loads(turn.calls[0].arguments) == {"action": "click", "x": 99, "y": 198}
