"""Adapters: how one model family is shown an observation and how its reply becomes tool calls of the contract.

`tools` (the default) hands the contract to the model as function tools, pixels of the screenshot. `grid-1` and
`grid-999` are the same tools with coordinates on a normalized grid (fractions 0..1, or integers 0..999), mapped to
pixels here. When the model sees a resized image, or is told its coordinates are on a virtual grid (the profile's
`coordinate_space`), `tools` maps its points back to screen pixels through the frame. Nothing is repaired: a
coordinate off the grid or the image, or of the wrong type, is an invalid reply whose message goes back to the model;
everything else is passed on exactly as received, for the action contract to validate.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from webeval.actions import Observation, tool_schemas
from webeval.outcomes.record import FailureClass
from webeval.policy.base import ToolCall
from webeval.policy.openai.image import Frame
from webeval.policy.openai.tool_names import ToolNames


@dataclass
class Reading:
    calls: list[ToolCall] = field(default_factory=list)
    invalid: str | None = None
    end: tuple[FailureClass, str] | None = None


@dataclass
class View:
    text: str
    image: bytes
    detail: str = ""


class Adapter(Protocol):
    name: str
    screen: tuple[int, int]

    def instructions(self) -> str: ...

    def tools(self) -> list[dict[str, Any]] | None: ...

    async def view(self, observation: Observation) -> View: ...

    def read(self, message: dict[str, Any], finish: str | None) -> Reading: ...


def observation_text(observation: Observation) -> str:
    lines = [f"Step {observation.step}. URL: {observation.url}", f"Title: {observation.title}"]
    if observation.tabs:
        tabs = "; ".join(f"[{t.id}] {t.title or '(untitled)'} <{t.url}>{' (active)' if t.active else ''}"
                         for t in observation.tabs)
        lines.append(f"Tabs: {tabs}")
    if observation.last_result:
        lines.append(f"Last action: {observation.last_result}")
    return "\n".join(lines)


def choice_of(reply: dict[str, Any]) -> tuple[dict[str, Any], str | None] | Reading:
    """The first choice's message and finish reason; a refusal or a filtered reply ends the episode."""
    choices = reply.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return Reading(invalid="the reply has no choices")
    choice = choices[0]
    message = choice.get("message")
    finish = choice.get("finish_reason")
    if not isinstance(message, dict):
        return Reading(invalid="the reply's choice has no message")
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal.strip():
        return Reading(end=(FailureClass.refusal, f"the model refused: {refusal.strip()[:300]}"))
    if finish == "content_filter":
        return Reading(end=(FailureClass.refusal, "the endpoint's content filter stopped the reply"))
    return message, finish if isinstance(finish, str) else None


def assistant_message(message: dict[str, Any], step: int) -> dict[str, Any]:
    """The reply as it goes back into the prompt: content and tool calls as received (ids made up if missing)."""
    out: dict[str, Any] = {"role": "assistant", "content": message.get("content") if isinstance(
        message.get("content"), str) else None}
    calls = [c for c in message.get("tool_calls") or [] if isinstance(c, dict) and isinstance(c.get("function"), dict)]
    if calls:
        out["tool_calls"] = [{"id": c.get("id") or f"call_{step}_{i}", "type": "function",
                              "function": {"name": c["function"].get("name"),
                                           "arguments": _arguments_text(c["function"].get("arguments"))}}
                             for i, c in enumerate(calls)]
    elif out["content"] is None:
        out["content"] = ""
    for name in REASONING_FIELDS:  # kept as received; the conversation decides whether it is shown again
        if isinstance(message.get(name), str) and message[name]:
            out[name] = message[name]
    return out


REASONING_FIELDS = ("reasoning_content", "reasoning")  # vLLM and SGLang's names for the reasoning parser's output


def reasoning_of(message: dict[str, Any]) -> str:
    return "\n".join(message[name] for name in REASONING_FIELDS if isinstance(message.get(name), str))


def _arguments_text(arguments: Any) -> str:
    if isinstance(arguments, str):
        return arguments
    if arguments is None:
        return ""
    return json.dumps(arguments, ensure_ascii=False)  # some servers send an object; its JSON text is the same value


def read_tool_calls(message: dict[str, Any], finish: str | None) -> Reading:
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or call.get("type", "function") != "function":
            return Reading(invalid="a tool call of the reply is not a function call")
        name = function.get("name")
        if not isinstance(name, str):
            return Reading(invalid="a tool call of the reply has no function name")
        calls.append(ToolCall(name, _arguments_text(function.get("arguments"))))
    if not calls and finish == "length":
        return Reading(invalid="the reply was cut off at the token limit before any tool call")
    return Reading(calls=calls)  # no call at all is the action contract's error to report


_TOOLS_TEXT = """You operate a web browser to complete the user's task. After each action you receive a screenshot of \
the screen ({width}x{height} pixels) with the page's URL, title, tabs and the result of your last action.
Act only through the tools: `{computer}` for mouse and keyboard ({coordinates}), `{navigate}` to open a URL or go back \
or forward, `{tabs}` to open, focus or close tabs. When the task is done, call `{terminate}` with status "success" and \
your answer; if it cannot be done, call `{terminate}` with status "failure". Prefer one action per turn: the screen \
changes after each one."""


_POINT_FIELDS = (("x", 0), ("y", 1), ("to_x", 0), ("to_y", 1))


def screen_point(frame: Frame, x: Any, y: Any, tool: str = "computer") -> tuple[int, int] | str:
    """A point of the model's coordinate space as a screen pixel, or why it is not one (never clamped)."""
    across, down = frame.space
    where = f"{across}x{down} screenshot" if frame.space == frame.image else f"{across}x{down} grid"
    for name, value in (("x", x), ("y", y)):
        if isinstance(value, bool) or not isinstance(value, int):
            return f"{tool}: {name} must be an integer pixel of the {where}, not {json.dumps(value)}"
    if not (0 <= x < across and 0 <= y < down):
        return f"{tool}: point ({x}, {y}) is outside the {where}"
    return frame.to_screen(x, y)


class ToolsAdapter:
    name = "tools"

    def __init__(self, screen: tuple[int, int], instructions: str | None = None, frame: Frame | None = None,
                 names: ToolNames | None = None) -> None:
        self.screen = screen
        self.frame = frame or Frame(screen, screen, screen)
        self._instructions = instructions
        self._tools: list[dict[str, Any]] | None = None
        self.names = names if names is not None and names.renames else None

    def coordinates(self) -> str:
        if self.frame.space != self.frame.image:
            across, down = self.frame.space
            return (f"x, y as integers on a {across}x{down} grid over the screenshot, (0, 0) top-left, "
                    f"({across - 1}, {down - 1}) bottom-right")
        return "x, y in pixels of the last screenshot, from the top-left corner"

    def instructions(self) -> str:
        if self._instructions:
            return self._instructions
        width, height = self.frame.image
        shown = (self.names or ToolNames({})).shown
        return _TOOLS_TEXT.format(width=width, height=height, coordinates=self.coordinates(), **shown)

    def tools(self) -> list[dict[str, Any]] | None:
        if self._tools is None:
            tools = self._schemas()  # built once: the same tools go with every request
            self._tools = self.names.rename_schemas(copy.deepcopy(tools)) if self.names else tools
        return self._tools

    def _schemas(self) -> list[dict[str, Any]]:
        if self.frame.identity:
            return tool_schemas()
        tools = copy.deepcopy(tool_schemas())
        computer = tools[0]["function"]
        computer["description"] = f"Act on the screen with mouse and keyboard; {self.coordinates()}."
        for name, axis in _POINT_FIELDS:
            computer["parameters"]["properties"][name]["anyOf"][0]["maximum"] = self.frame.space[axis] - 1
        return tools

    async def view(self, observation: Observation) -> View:
        return View(text=observation_text(observation), image=observation.screenshot_png)

    def _maps(self) -> bool:
        """Whether the model's points need mapping to screen pixels at all."""
        return not self.frame.identity

    def read(self, message: dict[str, Any], finish: str | None) -> Reading:
        reading = read_tool_calls(message, finish)
        if reading.invalid or reading.end or self.names is None:
            return self._mapped(reading)
        named = self.names.to_contract(reading.calls)
        if isinstance(named, str):
            return Reading(invalid=named)
        reading = self._mapped(Reading(calls=named))
        problem = None if reading.invalid else self.names.first_error(reading.calls, self.screen)
        return Reading(invalid=problem) if problem else reading

    def _mapped(self, reading: Reading) -> Reading:
        """The calls with the model's points as screen pixels."""
        if reading.invalid or reading.end or not self._maps():
            return reading
        calls = []
        for call in reading.calls:
            arguments = computer_arguments(call)
            if arguments is None:
                calls.append(call)
                continue
            mapped = self._to_screen(arguments)
            if isinstance(mapped, str):
                return Reading(invalid=mapped)
            calls.append(ToolCall("computer", json.dumps(mapped, ensure_ascii=False)))
        return Reading(calls=calls)

    def _to_screen(self, arguments: dict[str, Any]) -> dict[str, Any] | str:
        for x_name, y_name in (("x", "y"), ("to_x", "to_y")):
            if arguments.get(x_name) is None or arguments.get(y_name) is None:
                continue  # a lone coordinate is the contract's error to report
            point = screen_point(self.frame, arguments[x_name], arguments[y_name])
            if isinstance(point, str):
                return point
            arguments[x_name], arguments[y_name] = point
        return arguments


def computer_arguments(call: ToolCall) -> dict[str, Any] | None:
    """A computer call's arguments to map; None for any other call, or for arguments the contract must report on
    (malformed JSON, not an object), word for word."""
    if call.name != "computer":
        return None
    try:
        arguments = json.loads(call.arguments or "{}")
    except (json.JSONDecodeError, RecursionError):
        return None
    return arguments if isinstance(arguments, dict) else None


class GridAdapter(ToolsAdapter):
    """Coordinates on a normalized grid: `top` 1 means fractions 0..1, `top` 999 means integers 0..999.

    Both ends of the grid are the first and the last pixel: value v maps to round(v * (size - 1) / top).
    """

    def __init__(self, screen: tuple[int, int], top: int, instructions: str | None = None,
                 frame: Frame | None = None, names: ToolNames | None = None) -> None:
        super().__init__(screen, instructions, frame, names)
        if top not in (1, 999):
            raise ValueError(f"no grid 0..{top}")
        self.top = top
        self.name = f"grid-{top}"

    def _kind(self) -> str:
        return "a number from 0 to 1" if self.top == 1 else "an integer from 0 to 999"

    def coordinates(self) -> str:
        if self.top == 1:
            return "x, y as fractions of the screenshot's width and height, 0 to 1, from the top-left corner"
        return "x, y as integers 0 to 999 on a grid over the screenshot, (0, 0) top-left, (999, 999) bottom-right"

    def _schemas(self) -> list[dict[str, Any]]:
        tools = copy.deepcopy(tool_schemas())
        for tool in tools:
            function = tool["function"]
            if function["name"] != "computer":
                continue
            function["description"] = f"Act on the screen with mouse and keyboard; {self.coordinates()}."
            number = {"type": "number", "minimum": 0, "maximum": 1} if self.top == 1 else \
                {"type": "integer", "minimum": 0, "maximum": 999}
            for name, _ in _POINT_FIELDS:
                function["parameters"]["properties"][name] = {
                    "anyOf": [number, {"type": "null"}], "default": None, "title": name.upper(),
                    "description": f"{self._kind()} on the grid"}
        return tools

    def _maps(self) -> bool:
        return True

    def _to_screen(self, arguments: dict[str, Any]) -> dict[str, Any] | str:
        for name, axis in _POINT_FIELDS:
            value = arguments.get(name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or (
                    self.top == 999 and not isinstance(value, int)):
                return f"computer: {name} must be {self._kind()}, not {json.dumps(value)}"
            if not 0 <= value <= self.top:
                return f"computer: {name}={value} is outside the 0..{self.top} grid"
            arguments[name] = round(value * (self.screen[axis] - 1) / self.top)
        return arguments
