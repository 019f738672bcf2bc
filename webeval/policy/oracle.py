"""The oracle: a task's own solution, acted out through the same executor and input path a model's actions take.

Its steps name elements by selector; they are resolved to screen coordinates at run time. A target that is off
screen is scrolled to with the wheel first, as a person would.
"""

from __future__ import annotations

from typing import Awaitable, Callable

from webeval.actions import Box, Observation
from webeval.policy.base import PolicyTurn, ToolCall
from webeval.tasks import OracleStep, Task


Locate = Callable[[str], Awaitable[Box | None]]
Ready = Callable[[], Awaitable[bool]]
MAX_SCROLLS = 40
MAX_WAITS = 15  # seconds a target may take to appear (a slow page under load) before the solution is wrong


class OracleError(RuntimeError):
    """The solution does not fit the page: a bug of the task or the site, never a model failure."""


class OraclePolicy:
    name = "oracle"
    model = None

    def __init__(self, locate: Locate, rewrite_url: Callable[[str], str] = lambda url: url,
                 ready: Ready | None = None) -> None:
        self._locate = locate
        self._ready = ready
        self._rewrite = rewrite_url
        self._steps: list[OracleStep] = []
        self._index = 0
        self._typing_after_click = False
        self._scrolls = 0
        self._waits = 0

    async def begin(self, task: Task) -> None:
        if not task.solution:
            raise OracleError(f"task {task.id} has no solution to act out")
        self._steps = list(task.solution)
        self._index = 0
        self._typing_after_click = False
        self._scrolls = 0
        self._waits = 0

    async def end(self) -> None:
        pass

    async def act(self, observation: Observation) -> PolicyTurn:
        if self._index >= len(self._steps):
            raise OracleError("the solution ended without an answer step")
        step = self._steps[self._index]
        call = await self._call_for(step, observation.size)
        return PolicyTurn(calls=[call], raw=f"oracle step {self._index}: {step.model_dump_json(exclude_none=True)}")

    def _advance(self) -> None:
        self._index += 1
        self._scrolls = 0
        self._waits = 0
        self._typing_after_click = False

    async def _call_for(self, step: OracleStep, screen: tuple[int, int]) -> ToolCall:
        if step.do == "drag":
            return await self._drag(step, screen)
        if step.do in ("click", "double_click") or (step.do == "type" and step.selector and not self._typing_after_click):
            target = await self._target(step.selector, screen)
            if isinstance(target, ToolCall):
                return target
            x, y = target
            if step.do == "type":
                self._typing_after_click = True
                return ToolCall.of("computer", action="click", x=x, y=y)
            self._advance()
            return ToolCall.of("computer", action=step.do, x=x, y=y)
        if self._ready is not None and not await self._ready():
            # The last click's page is still on its way (a form posted on a slow machine): typing into it, or
            # answering before its request has reached the site, would make the solution look wrong.
            return self._wait(f"the page did not finish loading before step {self._index}")
        self._advance()
        if step.do == "type":
            return ToolCall.of("computer", action="type", text=step.text)
        if step.do == "key":
            return ToolCall.of("computer", action="key", keys=step.keys)
        if step.do == "scroll":
            return ToolCall.of("computer", action="scroll", direction=step.direction, amount=step.amount or 5,
                               x=screen[0] // 2, y=screen[1] // 2)
        if step.do == "navigate":
            return ToolCall.of("navigate", url=self._rewrite(step.url))
        if step.do == "back":
            return ToolCall.of("navigate", back=True)
        return ToolCall.of("terminate", status="success", answer=step.text)

    def _wait(self, why: str) -> ToolCall:
        self._waits += 1
        if self._waits > MAX_WAITS:
            raise OracleError(why)
        return ToolCall.of("computer", action="wait", seconds=1)

    async def _drag(self, step: OracleStep, screen: tuple[int, int]) -> ToolCall:
        start = await self._target(step.selector, screen)
        if isinstance(start, ToolCall):
            return start
        end = await self._target(step.to, screen)
        if isinstance(end, ToolCall):
            return end
        self._advance()
        return ToolCall.of("computer", action="drag", x=start[0], y=start[1], to_x=end[0], to_y=end[1])

    async def _target(self, selector: str, screen: tuple[int, int]) -> tuple[int, int] | ToolCall:
        box = await self._locate(selector)
        if box is None:
            return self._wait(f"no visible element matches {selector!r}")
        x, y = box.centre
        width, height = screen
        if 0 <= x < width and 0 <= y < height:
            return x, y
        self._scrolls += 1
        if self._scrolls > MAX_SCROLLS:
            raise OracleError(f"{selector!r} stays off screen at ({x}, {y}) after {MAX_SCROLLS} scrolls")
        # Wheel clicks of Chromium move about 100 px (X11); stop a little short so the target lands on screen.
        distance = y - height // 2
        amount = max(1, min(10, abs(distance) // 120))
        return ToolCall.of("computer", action="scroll", direction="down" if distance > 0 else "up", amount=amount,
                           x=width // 2, y=height // 2)


def oracle(session, prepared) -> OraclePolicy:
    """The policy factory that acts out each task's own solution: `run_task(task, slot, oracle, judge)`. It takes
    the episode's session (to find elements on screen) and its prepared task (to move URLs where the sites are)."""
    return OraclePolicy(session.locate, prepared.rewrite_url, session.page_ready)
