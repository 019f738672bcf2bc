"""Hosted computer-use models over the Responses API: the computer tool's calls mapped faithfully to the contract.

A `computer_call` carries one action (`action`) or several (`actions`): click (left, right; the back and forward
buttons go back and forward in the tab's history), double_click, move, drag (from the path's first point to its
last), scroll (pixels, as wheel clicks of about 100 px at the point), type, keypress, wait, screenshot (nothing to
do: the next observation is the screenshot). Coordinates are pixels of the screenshot the model was sent, mapped
back to the screen. What the contract cannot do (the wheel button, a click with keys held) is an invalid reply,
never approximated. A reply without a computer call is the model's final answer.

A call may carry pending safety checks. They are acknowledged (and the call carried out) only when the profile says
`acknowledge_safety_checks = true`; otherwise the episode ends with failure class `safety_check`.
"""

from __future__ import annotations

from typing import Any

from webeval.actions import Observation
from webeval.outcomes.record import FailureClass
from webeval.policy.base import ToolCall
from webeval.policy.openai.adapters import Reading, View, observation_text, screen_point
from webeval.policy.openai.image import Frame

WHEEL_PX = 100  # what one wheel click scrolls in Chromium on X11
WAIT_S = 1.0  # the computer tool's wait names no duration
_KEYS = {"arrowup": "up", "arrowdown": "down", "arrowleft": "left", "arrowright": "right", "option": "alt",
         "win": "super", "windows": "super", "command": "cmd", "control": "ctrl"}

INSTRUCTIONS = """You operate a web browser on the user's behalf, through the computer tool. The task is in the first \
message, with a screenshot of the browser. Act until the task is done, without asking for confirmation. Then reply \
with your final answer as a message, and no further computer action: that message ends the task."""

Mapped = list[ToolCall] | str


class ComputerUseAdapter:
    name = "computer-use"
    screenshot_in_output = True

    def __init__(self, frame: Frame, tool: str = "computer_use_preview", environment: str = "browser",
                 acknowledge: bool = False, instructions: str | None = None) -> None:
        self.frame = frame
        self.screen = frame.screen
        self.tool = tool
        self.environment = environment
        self.acknowledge = acknowledge
        self._instructions = instructions

    def instructions(self) -> str:
        return self._instructions or INSTRUCTIONS

    def tools(self) -> list[dict[str, Any]] | None:
        if self.tool == "computer":
            return [{"type": "computer"}]
        width, height = self.frame.image
        return [{"type": "computer_use_preview", "display_width": width, "display_height": height,
                 "environment": self.environment}]

    async def view(self, observation: Observation) -> View:
        return View(text=observation_text(observation), image=observation.screenshot_png)

    def read(self, message: dict[str, Any], finish: str | None) -> Reading:
        if message.get("tool_calls"):
            return Reading(invalid="a function call in the reply, but only the computer tool is offered")
        computer = message.get("computer_calls") or []
        if not computer:
            answer = message.get("content")
            if isinstance(answer, str) and answer.strip():
                return Reading(calls=[ToolCall.of("terminate", status="success", answer=answer.strip())])
            cut = " (cut off at the token limit)" if finish == "length" else ""
            return Reading(invalid=f"the reply has neither a computer call nor an answer{cut}")
        calls: list[ToolCall] = []
        for item in computer:
            pending = item.get("pending_safety_checks") or []
            if pending and not self.acknowledge:
                return Reading(end=(FailureClass.safety_check, _safety_reason(pending)))
            actions = [item["action"]] if item.get("action") is not None else item.get("actions") or []
            if not actions:
                return Reading(invalid="a computer call of the reply has no action")
            for action in actions:
                mapped = self._action(action) if isinstance(action, dict) else "a computer action is not an object"
                if isinstance(mapped, str):
                    return Reading(invalid=mapped)
                calls.extend(mapped)
        return Reading(calls=calls)

    def _point(self, where: dict[str, Any], kind: str) -> tuple[int, int] | str:
        return screen_point(self.frame, where.get("x"), where.get("y"), f"computer_call {kind}")

    def _action(self, action: dict[str, Any]) -> Mapped:
        kind = action.get("type")
        if kind in ("click", "double_click", "move"):
            return self._pointer(action)
        if kind == "drag":
            return self._drag(action)
        if kind == "scroll":
            return self._scroll(action)
        if kind == "type":
            text = action.get("text")
            return [ToolCall.of("computer", action="type", text=text)] if isinstance(text, str) else \
                "computer_call type: text must be a string"
        if kind == "keypress":
            keys = action.get("keys")
            if not isinstance(keys, list) or not all(isinstance(key, str) for key in keys):
                return "computer_call keypress: keys must be a list of key names"
            return [ToolCall.of("computer", action="key", keys=[_key(key) for key in keys])]
        if kind == "wait":
            return [ToolCall.of("computer", action="wait", seconds=WAIT_S)]
        if kind == "screenshot":
            return [ToolCall.of("computer", action="wait", seconds=0)]
        return f"computer_call: unknown action type {kind!r}"

    def _pointer(self, action: dict[str, Any]) -> Mapped:
        kind = action["type"]
        if action.get("keys"):
            return f"computer_call {kind} with keys held ({', '.join(map(str, action['keys']))}) is not in the " \
                   "action contract"
        button = action.get("button", "left") if kind == "click" else "left"
        if button in ("back", "forward"):
            return [ToolCall.of("navigate", **{button: True})]
        if button not in ("left", "right"):
            return f"computer_call click with button {button!r} is not in the action contract (left, right, back, " \
                   "forward)"
        point = self._point(action, kind)
        if isinstance(point, str):
            return point
        name = "right_click" if button == "right" else kind
        return [ToolCall.of("computer", action=name, x=point[0], y=point[1])]

    def _drag(self, action: dict[str, Any]) -> Mapped:
        if action.get("keys"):
            return "computer_call drag with keys held is not in the action contract"
        path = action.get("path")
        if not isinstance(path, list) or len(path) < 2 or not all(isinstance(p, dict) for p in path):
            return "computer_call drag: path must list at least two points"
        start, end = self._point(path[0], "drag"), self._point(path[-1], "drag")
        for point in (start, end):
            if isinstance(point, str):
                return point
        return [ToolCall.of("computer", action="drag", x=start[0], y=start[1], to_x=end[0], to_y=end[1])]

    def _scroll(self, action: dict[str, Any]) -> Mapped:
        point = self._point(action, "scroll")
        if isinstance(point, str):
            return point
        calls = []
        for name, negative, positive in (("scroll_y", "up", "down"), ("scroll_x", "left", "right")):
            distance = action.get(name, 0)
            if isinstance(distance, bool) or not isinstance(distance, int):
                return f"computer_call scroll: {name} must be an integer number of pixels"
            if distance:
                calls.append(ToolCall.of("computer", action="scroll", direction=positive if distance > 0 else negative,
                                         amount=max(1, round(abs(distance) / WHEEL_PX)), x=point[0], y=point[1]))
        return calls or "computer_call scroll: scroll_x and scroll_y are both 0"


def _key(name: str) -> str:
    lowered = name.lower()
    return _KEYS.get(lowered, lowered)


def _safety_reason(pending: list[Any]) -> str:
    checks = "; ".join(f"{c.get('code') or 'check'}: {c.get('message') or c.get('id')}" if isinstance(c, dict)
                       else str(c) for c in pending)
    return f"the model's action is held by a pending safety check ({checks[:300]}); the profile does not " \
           "acknowledge safety checks (acknowledge_safety_checks = false)"
