"""WebVoyager's text protocol with set-of-marks: numbered labels drawn on the screenshot, the element list in the
prompt, and replies of the form `Thought: ...` / `Action: Click [N]`, translated into tool calls of the contract.

The grammar is WebVoyager's own (brackets optional, `;` or spaces between the parts); a reply outside it is invalid,
never guessed at. As in WebVoyager, `Type` clears the field, types and presses Enter.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from PIL import Image, ImageDraw, ImageFont

from webeval.actions import Element, Observation
from webeval.policy.base import ToolCall
from webeval.policy.openai.adapters import Reading, View, observation_text


@dataclass(frozen=True)
class Mark:
    """A numbered label on an element of the page."""

    label: int
    element: Element


Marks = Callable[[], Awaitable[list[Mark]]]

INSTRUCTIONS = """Imagine you are a robot browsing the web, just like humans. Now you need to complete a task. In each \
iteration you receive an observation: a screenshot of the web page with a numerical label at the top-left corner of \
each interactive web element, and the list of those elements with their tag and text.
Choose exactly one of these actions, written STRICTLY in this format:
- Click [Numerical_Label]
- Type [Numerical_Label]; [Content]  (clears the textbox, types the content and presses ENTER; no need to click first)
- Scroll [Numerical_Label or WINDOW]; [up or down]
- Wait
- GoBack
- Google
- ANSWER; [content]  (only at the very end, when the task is solved)
Guidelines: execute one action per iteration; do not repeat an action when the page did not change (you may have \
picked the wrong label); do not type into buttons; use filters and sorting for "cheapest", "highest" and the like; \
answer only when all parts of the task are done.
Your reply must be:
Thought: {your brief thoughts}
Action: {one action in the format above}"""

_ELEMENTS_HEAD = ("Observation: please analyze the attached screenshot and give the Thought and Action. The tag name of "
                  "each labelled element and its text (if any) are listed; a <textarea> or <input> may be a textbox, "
                  "but not always. Rely on the screenshot first, then on the list.")

_CLICK = re.compile(r"Click \[?(\d+)\]?")
_TYPE = re.compile(r"Type \[?(\d+)\]?[; ]+\[?(.*?)\]?")
_SCROLL = re.compile(r"Scroll \[?(\d+|WINDOW)\]?[; ]+\[?(up|down)\]?")
_ANSWER = re.compile(r"ANSWER[; ]+\[?(.*?)\]?", re.S)
_FORMATS = "Click [N], Type [N]; text, Scroll [N or WINDOW]; up or down, Wait, GoBack, Google, ANSWER; text"
WAIT_S = 5.0  # WebVoyager's pause for Wait
GOOGLE = "https://www.google.com/"


def element_list(marks: list[Mark]) -> str:
    lines = [_ELEMENTS_HEAD]
    for mark in marks:
        element = mark.element
        tag = f"<{element.tag} {element.kind}>" if element.kind else f"<{element.tag}>"
        lines.append(f'[{mark.label}]: {tag} "{element.text}";' if element.text else f"[{mark.label}]: {tag};")
    if not marks:
        lines.append("(no interactive elements are visible)")
    return "\n".join(lines)


_COLOURS = ["#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4", "#008080", "#9a6324", "#800000", "#000075"]


def draw_marks(png: bytes, marks: list[Mark]) -> bytes:
    """The screenshot with each element outlined and its label at the top-left corner, as WebVoyager draws them."""
    image = Image.open(io.BytesIO(png)).convert("RGB")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=14)
    for mark in marks:
        colour = _COLOURS[mark.label % len(_COLOURS)]
        box = mark.element
        left, top = int(box.x), int(box.y)
        draw.rectangle([left, top, int(box.x + box.width) - 1, int(box.y + box.height) - 1], outline=colour, width=2)
        label = str(mark.label)
        box = draw.textbbox((0, 0), label, font=font)
        width, height = box[2] - box[0] + 6, box[3] - box[1] + 4
        draw.rectangle([left, top, left + width, top + height], fill=colour)
        draw.text((left + 3 - box[0], top + 2 - box[1]), label, fill="white", font=font)
    out = io.BytesIO()
    image.save(out, format="PNG", compress_level=1)
    return out.getvalue()


class WebVoyagerAdapter:
    name = "webvoyager"

    def __init__(self, screen: tuple[int, int], marks: Marks, instructions: str | None = None) -> None:
        self.screen = screen
        self._marks = marks
        self._instructions = instructions
        self.current: dict[int, Mark] = {}

    def instructions(self) -> str:
        return self._instructions or INSTRUCTIONS

    def tools(self) -> list[dict[str, Any]] | None:
        return None

    async def view(self, observation: Observation) -> View:
        marks = await self._marks()
        self.current = {mark.label: mark for mark in marks}
        return View(text=observation_text(observation), image=draw_marks(observation.screenshot_png, marks),
                    detail=element_list(marks))

    def read(self, message: dict[str, Any], finish: str | None) -> Reading:
        content = message.get("content")
        if not isinstance(content, str) or not content.strip():
            cut = " (cut off at the token limit)" if finish == "length" else ""
            return Reading(invalid=f"the reply has no text{cut}: answer with 'Thought: ...' and 'Action: ...'")
        at = content.find("Action:")
        if at < 0:
            return Reading(invalid="the reply has no 'Action:'; answer with 'Thought: ...' then 'Action: ...', "
                                   f"one of: {_FORMATS}")
        rest = content[at + len("Action:"):].strip()
        line = rest.splitlines()[0].strip() if rest else ""
        return self._translate(line, rest)

    def _mark(self, label: str) -> Mark | str:
        mark = self.current.get(int(label))
        if mark is None:
            known = f"the labels are 0 to {max(self.current)}" if self.current else "no element is labelled"
            return f"there is no element [{label}] on the screenshot: {known}"
        return mark

    def _translate(self, line: str, rest: str) -> Reading:
        width, height = self.screen
        if match := _CLICK.fullmatch(line):
            mark = self._mark(match[1])
            if isinstance(mark, str):
                return Reading(invalid=mark)
            x, y = mark.element.centre
            return Reading(calls=[ToolCall.of("computer", action="click", x=x, y=y)])
        if match := _TYPE.fullmatch(line):
            mark = self._mark(match[1])
            if isinstance(mark, str):
                return Reading(invalid=mark)
            x, y = mark.element.centre
            typing = ToolCall.of("computer", action="type", text=match[2]) if match[2] else \
                ToolCall.of("computer", action="key", keys=["backspace"])
            return Reading(calls=[ToolCall.of("computer", action="click", x=x, y=y),
                                  ToolCall.of("computer", action="key", keys=["ctrl", "a"]), typing,
                                  ToolCall.of("computer", action="key", keys=["enter"])])
        if match := _SCROLL.fullmatch(line):
            if match[1] == "WINDOW":
                x, y = width // 2, height // 2
            else:
                mark = self._mark(match[1])
                if isinstance(mark, str):
                    return Reading(invalid=mark)
                x, y = mark.element.centre
            # WebVoyager scrolls two thirds of the window; a wheel click moves about 100 px.
            amount = max(1, round(height * 2 / 3 / 100))
            return Reading(calls=[ToolCall.of("computer", action="scroll", direction=match[2], amount=amount,
                                              x=x, y=y)])
        if line == "Wait":
            return Reading(calls=[ToolCall.of("computer", action="wait", seconds=WAIT_S)])
        if line == "GoBack":
            return Reading(calls=[ToolCall.of("navigate", back=True)])
        if line == "Google":
            return Reading(calls=[ToolCall.of("navigate", url=GOOGLE)])
        if match := _ANSWER.fullmatch(rest):
            return Reading(calls=[ToolCall.of("terminate", status="success", answer=match[1].strip())])
        return Reading(invalid=f"cannot read the action {line[:80]!r}: use one of {_FORMATS}")
