"""UI-TARS's action grammar, read into tool calls of the contract.

The model replies `Thought: ...` then `Action: ` and one or more calls such as `click(start_box='(x,y)')`,
`left_double`, `right_single`, `drag(start_box=..., end_box=...)`, `hotkey(key='ctrl c')`, `type(content='...')`
(a content ending in `\\n` presses Enter), `scroll(start_box=..., direction='down')`, `wait()`, `finished(content=...)`
and `call_user()`. A point may be written `(x,y)`, `<|box_start|>(x,y)<|box_end|>`, `<point>x y</point>` or as a box
`(x1,y1,x2,y2)` (its centre). UI-TARS-1.5 gives absolute coordinates in the image it was sent (resized by Qwen2.5-VL's
rule); they are mapped back to the screen. A reply outside the grammar is invalid, never guessed at.
"""

from __future__ import annotations

import re
from typing import Any

from webeval.actions import Observation
from webeval.policy.base import ToolCall
from webeval.policy.openai.adapters import Reading, View, observation_text, screen_point
from webeval.policy.openai.image import Frame

WAIT_S = 5.0  # UI-TARS's wait() is a five-second pause
SCROLL_CLICKS = 5
_NAME = re.compile(r"[a-z_]+")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_ESCAPES = {"n": "\n", "t": "\t", "'": "'", '"': '"', "\\": "\\"}
_KEYS = {"arrowup": "up", "arrowdown": "down", "arrowleft": "left", "arrowright": "right"}
_ARGUMENTS = {"click": {"start_box"}, "left_double": {"start_box"}, "right_single": {"start_box"},
              "drag": {"start_box", "end_box"}, "hotkey": {"key"}, "type": {"content"},
              "scroll": {"start_box", "direction"}, "wait": set(), "finished": {"content"}, "call_user": set()}

INSTRUCTIONS = """You are a GUI agent operating a web browser to complete the user's task. After each action you \
receive a screenshot ({width}x{height} pixels) and the page's URL and title. Reply in exactly this form:
Thought: <what you see and what to do next>
Action: <one action>

The actions:
click(start_box='(x,y)')
left_double(start_box='(x,y)')
right_single(start_box='(x,y)')
drag(start_box='(x1,y1)', end_box='(x2,y2)')
hotkey(key='ctrl c')  # key names in lower case, separated by spaces
type(content='text')  # end the content with \\n to press Enter afterwards
scroll(start_box='(x,y)', direction='down')  # up, down, left or right
wait()  # pause for five seconds
finished(content='your answer')  # the task is done: content is the answer
call_user()  # the task cannot be done without the user's help
Coordinates are pixels of the screenshot, from its top-left corner."""


class GrammarError(ValueError):
    """A reply outside the action grammar; the message goes back to the model."""


def _quoted(text: str, at: int) -> tuple[str, int]:
    quote = text[at]
    out, index = [], at + 1
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            following = text[index + 1]
            out.append(_ESCAPES.get(following, "\\" + following))
            index += 2
        elif char == quote:
            return "".join(out), index + 1
        else:
            out.append(char)
            index += 1
    raise GrammarError("a quoted argument is not closed")


def _skip(text: str, at: int, chars: str = " \t\n,") -> int:
    while at < len(text) and text[at] in chars:
        at += 1
    return at


def parse_calls(text: str) -> list[tuple[str, dict[str, str]]]:
    """`name(arg='value', ...)` calls, one after another (keyword arguments with quoted values only)."""
    calls, at = [], _skip(text, 0)
    while at < len(text):
        name = _NAME.match(text, at)
        if name is None or not text.startswith("(", name.end()):
            raise GrammarError(f"expected an action like click(start_box='(x,y)'), found {text[at:at + 40]!r}")
        arguments: dict[str, str] = {}
        at = _skip(text, name.end() + 1)
        while not text.startswith(")", at):
            key = _NAME.match(text, at)
            if key is None or not text.startswith("=", key.end()) or key.end() + 1 >= len(text) or \
                    text[key.end() + 1] not in "'\"":
                raise GrammarError(f"{name[0]}: arguments are written name='value'")
            arguments[key[0]], at = _quoted(text, key.end() + 1)
            at = _skip(text, at)
            if at >= len(text):
                raise GrammarError(f"{name[0]}: the call is not closed with ')'")
        calls.append((name[0], arguments))
        at = _skip(text, at + 1)
    return calls


def _point_numbers(value: str) -> list[int]:
    cleaned = value.replace("<|box_start|>", "").replace("<|box_end|>", "")
    numbers = _NUMBER.findall(cleaned)
    if len(numbers) not in (2, 4) or any("." in number for number in numbers):
        raise GrammarError(f"cannot read a point from {value!r}: use '(x,y)' with integer pixels")
    values = [int(number) for number in numbers]
    return values if len(values) == 2 else [(values[0] + values[2]) // 2, (values[1] + values[3]) // 2]


class UITarsAdapter:
    name = "ui-tars"

    def __init__(self, frame: Frame, instructions: str | None = None) -> None:
        self.frame = frame
        self.screen = frame.screen
        self._instructions = instructions

    def instructions(self) -> str:
        width, height = self.frame.image
        return self._instructions or INSTRUCTIONS.format(width=width, height=height)

    def tools(self) -> list[dict[str, Any]] | None:
        return None

    async def view(self, observation: Observation) -> View:
        return View(text=observation_text(observation), image=observation.screenshot_png)

    def read(self, message: dict[str, Any], finish: str | None) -> Reading:
        content = message.get("content")
        if not isinstance(content, str) or "Action:" not in content:
            cut = " (cut off at the token limit)" if finish == "length" else ""
            return Reading(invalid=f"the reply has no 'Action:'{cut}: reply with 'Thought: ...' then 'Action: ...'")
        try:
            parsed = parse_calls(content.rsplit("Action:", 1)[1])
            if not parsed:
                raise GrammarError("'Action:' is followed by no action")
            calls = [call for name, arguments in parsed for call in self._translate(name, arguments)]
        except GrammarError as exc:
            return Reading(invalid=f"ui-tars: {exc}")
        return Reading(calls=calls)

    def _point(self, action: str, value: str | None) -> tuple[int, int]:
        if value is None:
            raise GrammarError(f"{action} needs start_box='(x,y)'")
        x, y = _point_numbers(value)
        point = screen_point(self.frame, x, y, f"ui-tars {action}")
        if isinstance(point, str):
            raise GrammarError(point.removeprefix("ui-tars "))
        return point

    def _translate(self, name: str, arguments: dict[str, str]) -> list[ToolCall]:
        if name not in _ARGUMENTS:
            raise GrammarError(f"unknown action {name!r}: use one of {', '.join(_ARGUMENTS)}")
        arguments = {("start_box" if key in ("point", "start_point") else "end_box" if key == "end_point" else key):
                     value for key, value in arguments.items()}
        unknown = sorted(set(arguments) - _ARGUMENTS[name])
        if unknown:
            raise GrammarError(f"{name} does not take {', '.join(unknown)}")
        if name in ("click", "left_double", "right_single"):
            x, y = self._point(name, arguments.get("start_box"))
            action = {"click": "click", "left_double": "double_click", "right_single": "right_click"}[name]
            return [ToolCall.of("computer", action=action, x=x, y=y)]
        if name == "drag":
            (x, y), (to_x, to_y) = self._point(name, arguments.get("start_box")), self._point(
                name, arguments.get("end_box"))
            return [ToolCall.of("computer", action="drag", x=x, y=y, to_x=to_x, to_y=to_y)]
        return self._other(name, arguments)

    def _other(self, name: str, arguments: dict[str, str]) -> list[ToolCall]:
        if name == "hotkey":
            keys = [_KEYS.get(key, key) for key in arguments.get("key", "").lower().split()]
            if not keys:
                raise GrammarError("hotkey needs key='...'")
            return [ToolCall.of("computer", action="key", keys=keys)]
        if name == "type":
            content = arguments.get("content", "")
            text, enter = (content[:-1], True) if content.endswith("\n") else (content, False)
            calls = [ToolCall.of("computer", action="type", text=text)] if text else []
            return calls + ([ToolCall.of("computer", action="key", keys=["enter"])] if enter else [])
        if name == "scroll":
            direction = arguments.get("direction", "")
            if direction not in ("up", "down", "left", "right"):
                raise GrammarError(f"scroll direction {direction!r}: use up, down, left or right")
            box = arguments.get("start_box")
            x, y = self._point(name, box) if box else (self.screen[0] // 2, self.screen[1] // 2)
            return [ToolCall.of("computer", action="scroll", direction=direction, amount=SCROLL_CLICKS, x=x, y=y)]
        if name == "wait":
            return [ToolCall.of("computer", action="wait", seconds=WAIT_S)]
        if name == "finished":
            return [ToolCall.of("terminate", status="success", answer=arguments.get("content", ""))]
        return [ToolCall.of("terminate", status="failure", answer="the model asked for the user's help (call_user)")]
