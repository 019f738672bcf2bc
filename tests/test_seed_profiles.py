"""NeMo Gym's two WebVoyager families, as their documented profiles (docs/profiles/vllm-nemotron-nano-omni.toml and
vllm-qwen3.5.toml) talk to the scripted endpoint playing vLLM's parsers: reasoning split off into `reasoning_content`
(or `reasoning`) beside the content, tool calls as `qwen3_coder` extracts them, under NeMo Gym's tool names, and a
reply whose tool-call block the parser did not extract (the XML left in `content`), which is invalid, as NeMo Gym's
agent (it reads `tool_calls` only) counts it."""

from __future__ import annotations

import io
import json

import pytest
from PIL import Image

from fixtures.openai_stub import OpenAIStub, Reply, call
from tests.families import PROFILES, profile_problem
from webeval.actions import Observation, parse_turn
from webeval.flags import OptionError
from webeval.policy.choice import PolicyChoice
from webeval.policy.openai import HttpTransport, OpenAIPolicy, load_profile, make_adapter
from webeval.tasks import Task

SCREEN = (1920, 1080)
NANO, QWEN = "vllm-nemotron-nano-omni.toml", "vllm-qwen3.5.toml"
THINKING = "The search box is at the top; I open a new tab for the recipe first."
TASK = Task(id="Allrecipes--0", site="Allrecipes", goal="Find a vegetarian lasagna recipe.",
            start_url="https://www.allrecipes.com/")
# What qwen3_coder's parser extracts a call from, and what the reply holds when it did not extract it.
UNEXTRACTED = ("I will click the search box.\n<tool_call>\n<function=computer>\n<parameter=action>\nclick\n"
               "</parameter>\n<parameter=x>\n0.5\n</parameter>\n<parameter=y>\n0.1\n</parameter>\n</function>\n"
               "</tool_call>")


def png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", SCREEN, "white").save(out, "PNG", compress_level=1)
    return out.getvalue()


def observation(step: int, last: str | None = None) -> Observation:
    return Observation(step=step, screenshot_png=png(), size=SCREEN, url="https://www.allrecipes.com/",
                       title="Allrecipes", last_result=last)


async def turns(profile_name: str, script: list[Reply], steps: int) -> tuple[list, OpenAIStub]:
    """The policy of the documented profile against the scripted endpoint: its turns, and the endpoint."""
    with OpenAIStub(script, models=("seed-model",)) as stub:
        profile = load_profile(PROFILES / profile_name, {"base_url": stub.base_url, "model": "seed-model"})
        policy = OpenAIPolicy(profile, make_adapter(profile, SCREEN, None), lambda: HttpTransport(profile, "k"))
        await policy.begin(TASK)
        try:
            found = [await policy.act(observation(step)) for step in range(1, steps + 1)]
        finally:
            await policy.end()
    return found, stub


def reasoned(reply: Reply, field: str = "reasoning_content") -> Reply:
    reply.reasoning, reply.reasoning_field, reply.content = THINKING, field, ""
    return reply


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
async def test_nano_omni_reads_the_parsers_shapes_under_nemo_gyms_tool_names(field):
    script = [reasoned(call("tab", {"action": "new", "url": "https://www.allrecipes.com/search?q=lasagna"}), field),
              reasoned(call("computer", {"action": "click", "x": 0.5, "y": 0.25}), field),
              reasoned(call("terminate", {"status": "success", "answer": "Spinach Lasagna"}), field)]
    found, stub = await turns(NANO, script, 3)
    calls = [[(c.name, json.loads(c.arguments)) for c in turn.calls] for turn in found]
    assert calls == [[("tabs", {"action": "new", "url": "https://www.allrecipes.com/search?q=lasagna"})],
                     [("computer", {"action": "click", "x": 960, "y": 270})],  # [0, 1] of 1920x1080, as pixels
                     [("terminate", {"status": "success", "answer": "Spinach Lasagna"})]]
    assert all(turn.invalid is None for turn in found)
    assert all(json.loads(turn.raw)[field] == THINKING for turn in found)  # the reasoning is on record as received
    first, last = stub.requests[0], stub.requests[-1]
    assert [tool["function"]["name"] for tool in first["tools"]] == ["computer", "navigate", "tab", "terminate"]
    assert "`tab` to open, focus or close tabs" in first["messages"][0]["content"]
    assert first["chat_template_kwargs"] == {"truncate_history_thinking": False}
    assert (first["temperature"], first["top_p"], first["max_tokens"]) == (0.1, 0.95, 16384)
    history = [m for m in last["messages"] if m["role"] == "assistant"]
    assert [m[field] for m in history] == [THINKING, THINKING]  # reasoning_history = "keep": it goes back
    assert history[0]["tool_calls"][0]["function"]["name"] == "tab"  # the model's own call, as it made it
    parse_turn([(c.name, c.arguments) for c in found[0].calls], SCREEN)  # the contract takes what was read


async def test_qwen35_reads_reasoning_and_tool_calls_on_its_1000_grid():
    script = [Reply(content="", reasoning=THINKING, tool_calls=[("computer", json.dumps(
        {"action": "click", "x": 500, "y": 250}))]),
              Reply(content=None, reasoning=THINKING, reasoning_field="reasoning",
                    tool_calls=[("tab", json.dumps({"action": "focus", "tab_id": 1}))])]
    found, stub = await turns(QWEN, script, 2)
    assert [(c.name, json.loads(c.arguments)) for turn in found for c in turn.calls] == [
        ("computer", {"action": "click", "x": 960, "y": 270}), ("tabs", {"action": "focus", "tab_id": 1})]
    assert [tool["function"]["name"] for tool in stub.requests[0]["tools"]] == ["computer", "navigate", "tab",
                                                                                "terminate"]
    history = [m for m in stub.requests[-1]["messages"] if m["role"] == "assistant"]
    assert "reasoning_content" not in history[0]  # reasoning_history = "drop": Qwen's template shows none of it


@pytest.mark.parametrize("profile_name", [NANO, QWEN])
async def test_a_tool_call_the_parser_did_not_extract_is_an_invalid_reply(profile_name):
    script = [Reply(content=UNEXTRACTED, reasoning=THINKING),
              call("terminate", {"status": "failure", "answer": ""})]
    found, stub = await turns(profile_name, script, 2)
    assert found[0].calls == [] and found[0].invalid == ("no tool call in the reply: call one of computer, navigate, "
                                                         "tab, terminate")
    assert json.loads(found[0].raw)["content"] == UNEXTRACTED  # kept as received, never read out of the text
    assert found[1].calls and found[1].invalid is None
    said_back = stub.requests[1]["messages"][-2]
    assert said_back["role"] == "assistant" and said_back["content"] == UNEXTRACTED


@pytest.mark.parametrize("name, arguments, problem", [
    ("tabs", {"action": "new", "url": "https://a.example/"},
     "unknown tool 'tabs': call one of computer, navigate, tab, terminate"),
    ("tab", {"action": "new"}, "tab: tab action 'new' takes url and no tab_id"),
    ("tab", "{\"action\": \"close\", ", "tab: arguments are not valid JSON"),
    ("computer", {"action": "click", "x": 1.5, "y": 0.5}, "computer: x=1.5 is outside the 0..1 grid"),
])
async def test_nemo_gyms_names_are_validated_as_strictly_as_the_contracts(name, arguments, problem):
    found, _ = await turns(NANO, [call(name, arguments)], 1)
    assert found[0].calls == [] and found[0].invalid.startswith(problem)


@pytest.mark.parametrize("fields, problem", [
    ({"tool_names": {"tabs": "computer"}}, "tool_names: two tools would both be called 'computer'"),
    ({"tool_names": {"tab": "x"}}, "tool_names: 'tab' is not a tool of the contract (computer, navigate, tabs, "
                                   "terminate)"),
    ({"tool_names": {"tabs": "open tab"}}, "tool_names: tabs: 'open tab' is not a function name"),
    ({"adapter": "ui-tars", "tool_names": {"tabs": "tab"}},
     "tool_names apply to the function-tool adapters (tools, grid-1, grid-999), not 'ui-tars'"),
])
def test_tool_names_that_cannot_be_used_are_one_line(tmp_path, fields, problem):
    _, said = profile_problem(tmp_path, fields)
    assert problem in said


def test_policy_tool_names_on_the_command_line_are_checked_the_same_way():
    values = {"policy": "openai", "policy_base_url": "http://127.0.0.1:9/v1", "policy_model": "m"}
    assert PolicyChoice.from_values({**values, "policy_tool_names": "tabs=tab"}).profile.tool_names == {"tabs": "tab"}
    with pytest.raises(OptionError) as bad:
        PolicyChoice.from_values({**values, "policy_tool_names": "tabs"})
    assert str(bad.value) == "--policy-tool-names 'tabs': expected CONTRACT=NAME pairs, e.g. tabs=tab"
