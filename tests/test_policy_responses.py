"""The Responses API and retained reasoning, through the real `openai` client against the scripted server: request
shapes, chaining by previous_response_id or full input, function tools and the hosted computer tool mapped
faithfully, pending safety checks, reasoning kept, dropped or kept last (chat completions too), accounting, and
record and replay of a Responses episode."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from PIL import Image

from fixtures.openai_stub import OpenAIStub, Reply, call, computer_call
from tests.families import profile_problem
from tests.test_policy_client import NoModelList
from tests.test_policy_options import options, policy_options
from webeval.actions import Observation, parse_turn
from webeval.flags import OptionError
from webeval.outcomes.record import FailureClass, InfraError
from webeval.policy.openai import (
    HttpTransport, OpenAIPolicy, Recorder, RecordingTransport, ReplayTransport, check_policy_endpoint, find_recording,
    make_adapter,
)
from webeval.policy.openai.computer_use import ComputerUseAdapter
from webeval.policy.openai.image import Frame
from webeval.policy.openai.profile import make_profile
from webeval.policy.openai.recording import read_recording
from webeval.tasks import Task

SCREEN = (1280, 720)
TASK = Task(id="T--1", site="T", goal="Find the price of the kettle.", start_url="http://127.0.0.1:9/shop/")
CLICK = {"action": "click", "x": 10, "y": 20}


def png(colour: str = "white") -> bytes:
    out = io.BytesIO()
    Image.new("RGB", SCREEN, colour).save(out, format="PNG")
    return out.getvalue()


def observation(step: int, last_result: str | None = None) -> Observation:
    return Observation(step=step, screenshot_png=png(), size=SCREEN, url="http://127.0.0.1:9/shop/", title="Shop",
                       last_result=last_result)


async def episode(stub: OpenAIStub, steps: int, transport=None, **fields):
    """`steps` turns of one policy against the stub; the turns, and the policy."""
    profile = make_profile({"base_url": stub.base_url, "model": "stub-model", "backoff_s": 0.01, **fields})
    policy = OpenAIPolicy(profile, make_adapter(profile, SCREEN, None),
                          transport or (lambda: HttpTransport(profile, "key")))
    await policy.begin(TASK)
    try:
        turns = [await policy.act(observation(n, f"result of step {n - 1}" if n > 1 else None))
                 for n in range(1, steps + 1)]
    finally:
        await policy.end()
    return turns, policy


def contract(turn) -> list[dict]:
    return [a.model_dump(exclude_none=True) for a in parse_turn([(c.name, c.arguments) for c in turn.calls], SCREEN)]


def kinds(items: list[dict]) -> list[str]:
    return [item.get("type") or item.get("role") for item in items]


# -- function tools over /responses ----------------------------------------------------------------------------------
async def test_the_first_request_is_a_responses_request_with_flat_function_tools():
    with OpenAIStub([call("computer", CLICK)]) as stub:
        (turn,), _ = await episode(stub, 1, api="responses", temperature=0.2, max_tokens=77)
    body = stub.requests[0]
    assert stub.paths == ["/responses"]
    assert body["model"] == "stub-model" and body["max_output_tokens"] == 77 and body["temperature"] == 0.2
    assert "messages" not in body and "previous_response_id" not in body and "1280x720" in body["instructions"]
    assert [(t["type"], t["name"], t["strict"]) for t in body["tools"]] == [
        ("function", "computer", False), ("function", "navigate", False), ("function", "tabs", False),
        ("function", "terminate", False)]
    (user,) = body["input"]
    assert [p["type"] for p in user["content"]] == ["input_text", "input_text", "input_image"]
    assert user["content"][0]["text"] == f"Task: {TASK.goal}"
    image = user["content"][2]
    assert image["image_url"].startswith("data:image/png;base64,") and image["detail"] == "auto"
    assert contract(turn) == [{"tool": "computer", **CLICK}] and turn.usage == {"prompt_tokens": 100,
                                                                               "completion_tokens": 20}


async def test_turns_chain_by_previous_response_id():
    with OpenAIStub([call("computer", CLICK), call("terminate", {"status": "success", "answer": "12"})]) as stub:
        turns, _ = await episode(stub, 2, api="responses")
    first_id = json.loads(turns[0].raw)["id"]
    second = stub.requests[1]
    assert second["previous_response_id"] == first_id and "instructions" in second  # instructions are not carried
    output, user = second["input"]
    call_id = json.loads(turns[0].raw)["output"][0]["call_id"]
    assert output == {"type": "function_call_output", "call_id": call_id, "output": "result of step 1"}
    assert user["role"] == "user" and "Task:" not in json.dumps(user)  # only what is new since the last reply
    assert contract(turns[1]) == [{"tool": "terminate", "status": "success", "answer": "12"}]


async def test_a_server_that_lost_the_previous_response_is_a_request_error():
    with OpenAIStub([call("computer", CLICK)]) as stub:
        profile = make_profile({"base_url": stub.base_url, "model": "stub-model", "api": "responses", "retries": 0})
        policy = OpenAIPolicy(profile, make_adapter(profile, SCREEN, None), lambda: HttpTransport(profile, "key"))
        await policy.begin(TASK)
        await policy.act(observation(1))
        stub.responses.clear()  # as a server with store=false, or restarted, forgets
        with pytest.raises(InfraError) as caught:
            await policy.act(observation(2))
        await policy.end()
    assert caught.value.kind == "policy_request"
    assert "HTTP 400: Previous response with id 'resp_1_" in caught.value.message


# -- reasoning kept, dropped, or kept last ---------------------------------------------------------------------------
def reasoned(step: int) -> Reply:
    return Reply(tool_calls=[("computer", json.dumps(CLICK))], reasoning=f"thinking about step {step}",
                 reasoning_tokens=30 + step)


@pytest.mark.parametrize("mode, kept", [("keep", [1, 2]), ("drop", []), ("keep-last", [2])])
async def test_full_input_keeps_reasoning_items_as_the_profile_says(mode, kept):
    with OpenAIStub([reasoned(1), reasoned(2), reasoned(3)]) as stub:
        turns, _ = await episode(stub, 3, api="responses", chain="full_input", reasoning_history=mode)
    third = stub.requests[2]
    assert "previous_response_id" not in third
    summaries = [item["summary"][0]["text"] for item in third["input"] if item.get("type") == "reasoning"]
    assert summaries == [f"thinking about step {n}" for n in kept]
    without = [kind for kind in kinds(third["input"]) if kind != "reasoning"]
    assert without == ["user", "function_call", "function_call_output", "user", "function_call",
                       "function_call_output", "user"]
    # Counted, and stored in the trajectory as received, whatever is sent back.
    assert [t.usage["reasoning_tokens"] for t in turns] == [31, 32, 33]
    assert all(f"thinking about step {n}" in t.raw for n, t in enumerate(turns, 1))


@pytest.mark.parametrize("mode, kept", [("keep", [1, 2]), ("drop", []), ("keep-last", [2])])
@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
async def test_chat_keeps_reasoning_content_as_the_profile_says(mode, kept, field):
    replies = [Reply(tool_calls=[("computer", json.dumps(CLICK))], reasoning=f"thinking about step {n}",
                     reasoning_field=field, reasoning_tokens=5) for n in (1, 2, 3)]
    with OpenAIStub(replies) as stub:
        turns, _ = await episode(stub, 3, reasoning_history=mode)
    assistants = [m for m in stub.requests[2]["messages"] if m["role"] == "assistant"]
    assert [m.get(field) for m in assistants] == [f"thinking about step {n}" if n in kept else None for n in (1, 2)]
    assert all(json.loads(t.raw)[field] == f"thinking about step {n}" for n, t in enumerate(turns, 1))
    assert turns[0].usage == {"prompt_tokens": 100, "completion_tokens": 20, "reasoning_tokens": 5}


# -- the hosted computer tool ----------------------------------------------------------------------------------------
FRAME = Frame(screen=(1920, 1080), image=(1280, 720), space=(1280, 720))


def cua(*actions: dict, **kw) -> dict:
    return {"content": None, "tool_calls": [], "computer_calls": [computer_call(*actions, **kw)]}


@pytest.mark.parametrize("action, expected", [
    ({"type": "click", "button": "left", "x": 640, "y": 360}, [("computer", {"action": "click", "x": 960, "y": 540})]),
    ({"type": "click", "button": "right", "x": 0, "y": 0}, [("computer", {"action": "right_click", "x": 0, "y": 0})]),
    ({"type": "click", "button": "back", "x": 5, "y": 5}, [("navigate", {"back": True})]),
    ({"type": "click", "button": "forward", "x": 5, "y": 5}, [("navigate", {"forward": True})]),
    ({"type": "double_click", "x": 1279, "y": 719}, [("computer", {"action": "double_click", "x": 1919, "y": 1079})]),
    ({"type": "move", "x": 1, "y": 1}, [("computer", {"action": "move", "x": 2, "y": 2})]),
    ({"type": "drag", "path": [{"x": 10, "y": 10}, {"x": 50, "y": 60}, {"x": 100, "y": 200}]},
     [("computer", {"action": "drag", "x": 15, "y": 15, "to_x": 150, "to_y": 300})]),
    ({"type": "scroll", "x": 640, "y": 360, "scroll_x": -200, "scroll_y": 300},
     [("computer", {"action": "scroll", "direction": "down", "amount": 3, "x": 960, "y": 540}),
      ("computer", {"action": "scroll", "direction": "left", "amount": 2, "x": 960, "y": 540})]),
    ({"type": "type", "text": "pour-over kettle"}, [("computer", {"action": "type", "text": "pour-over kettle"})]),
    ({"type": "keypress", "keys": ["CTRL", "L"]}, [("computer", {"action": "key", "keys": ["ctrl", "l"]})]),
    ({"type": "keypress", "keys": ["ARROWDOWN", "ENTER"]},
     [("computer", {"action": "key", "keys": ["down", "enter"]})]),
    ({"type": "wait"}, [("computer", {"action": "wait", "seconds": 1.0})]),
    ({"type": "screenshot"}, [("computer", {"action": "wait", "seconds": 0})]),
])
def test_computer_actions_map_faithfully(action, expected):
    reading = ComputerUseAdapter(FRAME).read(cua(action), None)
    assert reading.invalid is None and reading.end is None
    assert [(c.name, json.loads(c.arguments)) for c in reading.calls] == expected
    parse_turn([(c.name, c.arguments) for c in reading.calls], FRAME.screen)  # and the contract accepts them


def test_several_actions_of_one_call_are_all_carried_out():
    reading = ComputerUseAdapter(FRAME).read(cua({"type": "click", "button": "left", "x": 2, "y": 2},
                                                 {"type": "type", "text": "a"}), None)
    assert [json.loads(c.arguments)["action"] for c in reading.calls] == ["click", "type"]


@pytest.mark.parametrize("message, error", [
    (cua({"type": "click", "button": "wheel", "x": 1, "y": 1}),
     "computer_call click with button 'wheel' is not in the action contract (left, right, back, forward)"),
    (cua({"type": "click", "button": "left", "x": 1, "y": 1, "keys": ["SHIFT"]}),
     "computer_call click with keys held (SHIFT) is not in the action contract"),
    (cua({"type": "click", "button": "left", "x": 1280, "y": 1}),
     "computer_call click: point (1280, 1) is outside the 1280x720 screenshot"),
    (cua({"type": "move", "x": 1.5, "y": 1}),
     "computer_call move: x must be an integer pixel of the 1280x720 screenshot, not 1.5"),
    (cua({"type": "drag", "path": [{"x": 1, "y": 1}]}), "computer_call drag: path must list at least two points"),
    (cua({"type": "scroll", "x": 1, "y": 1, "scroll_x": 0, "scroll_y": 0}),
     "computer_call scroll: scroll_x and scroll_y are both 0"),
    (cua({"type": "zoom"}), "computer_call: unknown action type 'zoom'"),
    ({"content": None, "tool_calls": [], "computer_calls": [{"type": "computer_call", "call_id": "c"}]},
     "a computer call of the reply has no action"),
    ({"content": None, "tool_calls": [{"id": "f", "type": "function", "function": {"name": "x", "arguments": "{}"}}]},
     "a function call in the reply, but only the computer tool is offered"),
    ({"content": "  ", "tool_calls": [], "computer_calls": []}, "the reply has neither a computer call nor an answer"),
])
def test_what_the_contract_cannot_do_is_invalid_never_approximated(message, error):
    reading = ComputerUseAdapter(FRAME).read(message, None)
    assert reading.calls == [] and reading.invalid == error


def computer_profile(**fields) -> dict:
    return {"api": "responses", "adapter": "computer-use", "image": {"size": [1280, 720]}, **fields}


async def test_a_computer_use_episode_ends_with_its_answer():
    script = [Reply(reasoning="I click the kettle.", items=[computer_call(
        {"type": "click", "button": "left", "x": 640, "y": 360}, call_id="call_A")]),
              Reply(content="The kettle costs $34.99.")]
    with OpenAIStub(script) as stub:
        turns, _ = await episode(stub, 2, **computer_profile())
    first, second = stub.requests
    assert first["tools"] == [{"type": "computer_use_preview", "display_width": 1280, "display_height": 720,
                               "environment": "browser"}]
    output, user = second["input"]
    assert output["type"] == "computer_call_output" and output["call_id"] == "call_A"
    assert output["output"]["image_url"].startswith("data:image/png;base64,") and "acknowledged_safety_checks" \
        not in output
    assert [p["type"] for p in user["content"]] == ["input_text"]  # the screenshot is the call's output
    assert contract(turns[0]) == [{"tool": "computer", "action": "click", "x": 640, "y": 360}]
    assert contract(turns[1]) == [{"tool": "terminate", "status": "success", "answer": "The kettle costs $34.99."}]


CHECK = {"id": "cu_sc_1", "code": "malicious_instructions", "message": "The page asks the agent to ignore the user."}


async def test_a_pending_safety_check_ends_the_episode_unless_acknowledged():
    held = Reply(items=[computer_call({"type": "click", "button": "left", "x": 5, "y": 5}, safety_checks=[CHECK])])
    with OpenAIStub([held]) as stub:
        (turn,), _ = await episode(stub, 1, **computer_profile())
    assert turn.calls == [] and turn.end == (
        FailureClass.safety_check, "the model's action is held by a pending safety check (malicious_instructions: "
                                   "The page asks the agent to ignore the user.); the profile does not acknowledge "
                                   "safety checks (acknowledge_safety_checks = false)")
    with OpenAIStub([held, Reply(content="done")]) as stub:
        turns, _ = await episode(stub, 2, **computer_profile(acknowledge_safety_checks=True))
    assert contract(turns[0]) == [{"tool": "computer", "action": "click", "x": 5, "y": 5}]
    assert stub.requests[1]["input"][0]["acknowledged_safety_checks"] == [CHECK]


# -- the profile's rules for the API ---------------------------------------------------------------------------------
@pytest.mark.parametrize("fields, message", [
    ({"adapter": "computer-use"}, "adapter 'computer-use' is the Responses API's computer tool: set api = "
                                  "\"responses\""),
    ({"api": "responses", "reasoning_history": "drop"}, "reasoning_history 'drop' needs chain = \"full_input\""),
    ({"api": "responses", "max_tokens_param": "max_tokens"}, "max_tokens_param 'max_tokens' does not fit api "
                                                             "'responses': use max_output_tokens"),
    ({"max_tokens_param": "max_output_tokens"}, "max_tokens_param 'max_output_tokens' does not fit api 'chat'"),
    ({"adapter": "grid-999", "coordinate_space": [1000, 1000]},
     "coordinate_space does not apply to adapter 'grid-999' (it has its own coordinates)"),
    ({"api": "responses", "adapter": "computer-use", "coordinate_space": [1000, 1000]},
     "coordinate_space does not apply to adapter 'computer-use' (it has its own coordinates)"),
    ({"api": "completions"}, "api: Input should be 'chat' or 'responses'"),
])
def test_api_rules_are_one_line_errors(tmp_path, fields, message):
    path, problem = profile_problem(tmp_path, fields)
    assert problem.startswith(f"profile {path}: ") and message in problem


def test_the_responses_defaults():
    profile = make_profile({"base_url": "http://a/v1", "model": "m", "api": "responses"})
    assert (profile.max_tokens_param, profile.reasoning_history, profile.chain) == (
        "max_output_tokens", "keep", "previous_response_id")


# -- record and replay of a Responses episode ------------------------------------------------------------------------
async def test_a_responses_episode_records_and_replays_offline(tmp_path: Path):
    attempt = tmp_path / "run" / "tasks" / TASK.id / "attempt-1"
    attempt.mkdir(parents=True)
    script = [Reply(items=[computer_call({"type": "click", "button": "left", "x": 640, "y": 360})]),
              Reply(content="12")]
    fields = computer_profile(image={"size": [640, 360], "format": "jpeg", "quality": 80})
    with OpenAIStub(script) as stub:
        profile = make_profile({"base_url": stub.base_url, "model": "stub-model", **fields})
        recorder = Recorder(attempt, ("key",))
        recorder.header(TASK.id, TASK.start_url, SCREEN, profile.model_dump(mode="json"))
        recorded, _ = await episode(stub, 2, lambda: RecordingTransport(HttpTransport(profile, "key"), recorder),
                                    **fields)
    header, entries = read_recording(attempt / "policy" / "exchanges.jsonl")
    assert [e["request"]["previous_response_id"] for e in entries[1:]] == [json.loads(recorded[0].raw)["id"]]
    assert [p.suffix for p in (attempt / "policy" / "images").iterdir()] == [".jpeg"]  # stored once, as sent
    path = find_recording(tmp_path / "run", TASK.id)
    replayed, _ = await episode(stub, 2, lambda: ReplayTransport(path, TASK.start_url), **fields)
    assert [t.end for t in replayed] == [None, None]
    assert [t.calls for t in replayed] == [t.calls for t in recorded]


def test_the_preflight_of_a_responses_endpoint_without_a_model_list_asks_for_a_tiny_response():
    with NoModelList([Reply(content="OK")]) as stub:
        check_policy_endpoint(make_profile({"base_url": stub.base_url, "model": "stub-model", "api": "responses",
                                            "retries": 0}), {})
    assert stub.paths == ["/responses"]
    assert stub.requests == [{"model": "stub-model", "input": "Reply with OK.", "max_output_tokens": 16}]


def test_the_command_line_chooses_the_api_and_the_dump():
    chosen = policy_options(options(policy="openai", policy_base_url="http://127.0.0.1:9/v1", policy_model="m",
                                    policy_api="responses", dump_observation=True))
    assert (chosen.profile.api, chosen.profile.max_tokens_param, chosen.dump) == ("responses", "max_output_tokens",
                                                                                  True)
    with pytest.raises(OptionError) as caught:
        policy_options(options(policy="oracle", dump_observation=True))
    assert str(caught.value) == "--dump-observation writes what a model received: use it with --policy openai or " \
                                "replay"


@pytest.mark.parametrize("body, invalid, end", [
    ({"id": "r1", "output": "nothing"}, "the reply has no output items", None),
    ({"id": "r1", "output": ["text"]}, "an output item of the reply is not an object", None),
    ({"id": "r1", "error": {"message": "the model crashed"}, "output": []}, "the response failed: the model crashed",
     None),
    ({"id": "r1", "output": [{"type": "message", "content": [{"type": "refusal", "refusal": "I won't."}]}]}, None,
     (FailureClass.refusal, "the model refused: I won't.")),
    ({"id": "r1", "status": "incomplete", "incomplete_details": {"reason": "content_filter"}, "output": []}, None,
     (FailureClass.refusal, "the endpoint's content filter stopped the reply")),
    ({"id": "r1", "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}, "output": [
        {"type": "reasoning", "id": "rs", "summary": []}]},
     "the reply was cut off at the token limit before any tool call", None),
])
async def test_unreadable_refused_or_cut_off_responses(body, invalid, end):
    with OpenAIStub([Reply(raw_body=json.dumps(body))]) as stub:
        (turn,), _ = await episode(stub, 1, api="responses")
    assert (turn.calls, turn.invalid, turn.end) == ([], invalid, end)
    assert turn.raw is not None  # what came back is kept for the trajectory
