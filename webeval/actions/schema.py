"""The action contract: the tools a model calls, validated faithfully before anything is executed.

Nothing is clamped or repaired: an out-of-range coordinate, an unknown action, a wrong type or malformed JSON is an
ActionError whose message goes back to the model.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, Union
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

MODIFIER_KEYS = {"ctrl", "shift", "alt", "meta", "super", "cmd"}
NAMED_KEYS = MODIFIER_KEYS | {
    "enter", "return", "tab", "escape", "esc", "backspace", "delete", "space", "up", "down", "left", "right",
    "home", "end", "pageup", "pagedown", "insert", *(f"f{n}" for n in range(1, 13)),
}


MAX_CALLS_PER_TURN = 20  # beyond this a turn is a runaway reply, not a plan; carried out, it would outlast any step


def _check_http(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"url {url!r} is not an http(s) URL")


class ActionError(ValueError):
    """A tool call that does not satisfy the action contract; the message is written for the model."""


class _Action(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


_FIELDS_OF = {
    "click": {"x", "y"}, "double_click": {"x", "y"}, "right_click": {"x", "y"}, "move": {"x", "y"},
    "drag": {"x", "y", "to_x", "to_y"}, "type": {"text"}, "key": {"keys"},
    "scroll": {"direction", "amount"}, "wait": {"seconds"},
}
_OPTIONAL = {"scroll": {"x", "y", "amount"}}


class Computer(_Action):
    tool: Literal["computer"] = "computer"
    action: Literal["click", "double_click", "right_click", "move", "drag", "type", "key", "scroll", "wait"]
    x: int | None = Field(default=None, ge=0)
    y: int | None = Field(default=None, ge=0)
    to_x: int | None = Field(default=None, ge=0)
    to_y: int | None = Field(default=None, ge=0)
    text: str | None = Field(default=None, min_length=1)
    keys: list[str] | None = Field(default=None, min_length=1)
    direction: Literal["up", "down", "left", "right"] | None = None
    amount: int | None = Field(default=None, ge=1, le=50)
    seconds: float | None = Field(default=None, ge=0, le=30)

    @model_validator(mode="after")
    def _fields_match_action(self) -> "Computer":
        wanted = _FIELDS_OF[self.action]
        optional = _OPTIONAL.get(self.action, set())
        given = {name for name in _FIELDS_OF_ALL if getattr(self, name) is not None}
        missing = sorted(wanted - optional - given)
        extra = sorted(given - wanted - optional)
        if missing:
            raise ValueError(f"action {self.action!r} needs {', '.join(missing)}")
        if extra:
            raise ValueError(f"action {self.action!r} does not take {', '.join(extra)}")
        if (self.x is None) != (self.y is None):
            raise ValueError(f"action {self.action!r} takes both x and y or neither")
        for key in self.keys or ():
            if key.lower() not in NAMED_KEYS and len(key) != 1:
                raise ValueError(f"unknown key {key!r}: use a single character or one of {sorted(NAMED_KEYS)}")
        return self

    def points(self) -> list[tuple[int, int]]:
        pairs = [(self.x, self.y), (self.to_x, self.to_y)]
        return [(x, y) for x, y in pairs if x is not None and y is not None]


_FIELDS_OF_ALL = ("x", "y", "to_x", "to_y", "text", "keys", "direction", "amount", "seconds")


class Navigate(_Action):
    tool: Literal["navigate"] = "navigate"
    url: str | None = None
    back: bool = False
    forward: bool = False

    @model_validator(mode="after")
    def _exactly_one(self) -> "Navigate":
        if sum([self.url is not None, self.back, self.forward]) != 1:
            raise ValueError("navigate takes exactly one of url, back=true or forward=true")
        if self.url is not None:
            _check_http(self.url)
        return self


class Tabs(_Action):
    tool: Literal["tabs"] = "tabs"
    action: Literal["new", "focus", "close"]
    url: str | None = None
    tab_id: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _fields_match_action(self) -> "Tabs":
        if self.action == "new" and (self.url is None or self.tab_id is not None):
            raise ValueError("tabs action 'new' takes url and no tab_id")
        if self.action in ("focus", "close") and (self.tab_id is None or self.url is not None):
            raise ValueError(f"tabs action {self.action!r} takes tab_id and no url")
        if self.url is not None:
            _check_http(self.url)
        return self


class Terminate(_Action):
    tool: Literal["terminate"] = "terminate"
    status: Literal["success", "failure"]
    answer: str


Action = Annotated[Union[Computer, Navigate, Tabs, Terminate], Field(discriminator="tool")]
_ACTION = TypeAdapter(Action)
TOOL_NAMES = ("computer", "navigate", "tabs", "terminate")


def _first_error(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(p) for p in first["loc"] if p not in TOOL_NAMES)
    message = first["msg"].removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


def parse_call(name: str, arguments: str | dict[str, Any], screen: tuple[int, int]) -> Action:
    """One tool call (name and JSON arguments) as a validated action, or an ActionError for the model."""
    if name not in TOOL_NAMES:
        raise ActionError(f"unknown tool {name!r}: call one of {', '.join(TOOL_NAMES)}")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except json.JSONDecodeError as exc:
            raise ActionError(f"{name}: arguments are not valid JSON ({exc.msg} at column {exc.colno})") from None
        except RecursionError:
            raise ActionError(f"{name}: arguments are JSON nested too deeply to read") from None
    if not isinstance(arguments, dict):
        raise ActionError(f"{name}: arguments must be a JSON object")
    try:
        action = _ACTION.validate_python({**arguments, "tool": name})
    except ValidationError as exc:
        raise ActionError(f"{name}: {_first_error(exc)}") from None
    if isinstance(action, Computer):
        width, height = screen
        for x, y in action.points():
            if x >= width or y >= height:
                raise ActionError(f"computer: point ({x}, {y}) is outside the {width}x{height} screenshot")
    return action


def parse_turn(calls: list[tuple[str, str | dict[str, Any]]], screen: tuple[int, int]) -> list[Action]:
    """All tool calls of one model turn; terminate may only be the last one."""
    if not calls:
        raise ActionError("no tool call in the reply: call one of " + ", ".join(TOOL_NAMES))
    if len(calls) > MAX_CALLS_PER_TURN:
        raise ActionError(f"{len(calls)} tool calls in one reply: at most {MAX_CALLS_PER_TURN} are carried out in a "
                          "turn (one is best: the screen changes after each)")
    actions = [parse_call(name, args, screen) for name, args in calls]
    if any(isinstance(a, Terminate) for a in actions[:-1]):
        raise ActionError("terminate must be the last call of a turn")
    return actions


def tool_schemas() -> list[dict[str, Any]]:
    """The action contract as OpenAI function tools."""
    tools = []
    docs = {
        Computer: "Act on the screen with mouse and keyboard; x,y are pixels of the last screenshot.",
        Navigate: "Open a URL in the active tab, or go back / forward in its history.",
        Tabs: "Open a new tab with a URL, focus a tab by id, or close a tab by id.",
        Terminate: "End the task with your final answer. Must be the last call of a turn.",
    }
    for model, doc in docs.items():
        schema = model.model_json_schema()
        schema["properties"].pop("tool")
        tools.append({"type": "function", "function": {
            "name": model.model_fields["tool"].default, "description": doc, "parameters": schema}})
    return tools
