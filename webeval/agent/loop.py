"""The agent loop: observe -> policy -> validate -> execute, until terminate or a budget runs out."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Awaitable, Callable

from playwright.async_api import Error as PlaywrightError
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt

from webeval.actions import ActionError, Observation, Terminate, parse_turn
from webeval.agent.environment import PageHooks
from webeval.agent.episode import Episode, StepRecord, step_json
from webeval.outcomes.record import FailureClass, InfraError
from webeval.policy.base import Policy
from webeval.runtime.aio import gather_or_cancel
from webeval.runtime.executor import execute
from webeval.runtime.devices import InputDevice, Observer, ScreenObserver
from webeval.runtime.session import LastTabClosed, TaskSession
from webeval.tasks import Task


@dataclass(frozen=True)
class Budgets:
    max_steps: int = 30
    step_timeout_s: float = 120.0
    task_timeout_s: float = 900.0
    max_invalid: int = 3  # consecutive invalid replies before the episode fails as invalid_output
    start_retries: int = 2


async def open_start_page(session: TaskSession, url: str, retries: int) -> None:
    """Navigation transport errors are retried, then they are infrastructure, not the agent's fault."""

    async def attempt() -> None:
        try:
            await session.goto(url)
        except PlaywrightError as exc:
            if not await session.browser_alive():
                raise InfraError("browser", f"Chromium died opening {url}: {_first(exc)}") from None
            raise

    try:
        await AsyncRetrying(stop=stop_after_attempt(retries + 1), retry=retry_if_exception_type(PlaywrightError),
                            reraise=True)(attempt)
    except PlaywrightError as exc:
        raise InfraError("navigation", f"could not open {url}: {_first(exc)}") from None


def _first(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


async def _write(path: Path, data: bytes) -> None:
    await asyncio.to_thread(path.write_bytes, data)


Vitals = Callable[[], Awaitable[InfraError | None]]  # the dead or unresponsive part of the runtime, if any


async def _all_alive() -> InfraError | None:
    return None


class AgentLoop:
    def __init__(self, session: TaskSession, device: InputDevice, policy: Policy, budgets: Budgets,
                 vitals: Vitals = _all_alive, hooks: PageHooks | None = None, observer: Observer | None = None) -> None:
        self.session = session
        self.observer = observer or ScreenObserver(session.display)
        self.hooks = hooks
        self.device = device
        self.policy = policy
        self.budgets = budgets
        self.vitals = vitals

    async def run(self, task: Task, episode: Episode) -> Episode:
        """Fill in `episode` as the steps go, so that what was done survives the loop being cancelled."""
        began = time.monotonic()
        max_steps = task.max_steps or self.budgets.max_steps
        try:
            async with asyncio.timeout(self.budgets.task_timeout_s):
                await open_start_page(self.session, task.start_url, self.budgets.start_retries)
                if self.hooks is not None:
                    task = await self.hooks.start(self.session.require_active(), task)
                    episode.goal = task.goal
                await self.policy.begin(task)
                await self._steps(episode, max_steps)
        except TimeoutError:
            episode.failure_class = FailureClass.time_budget
            episode.reason = f"the task took longer than {self.budgets.task_timeout_s:.0f} s"
        except InfraError as exc:
            episode.infra = exc
        except LastTabClosed as exc:
            # A dead browser closes every tab too, which must not look like the agent's doing.
            episode.infra = await self.vitals()
            if episode.infra is None:
                episode.failure_class = FailureClass.closed_last_tab
                episode.reason = str(exc)
        except Exception:
            # Infrastructure only with evidence: a part of the runtime is gone or does not answer. Otherwise the
            # exception is a bug of the harness, and it is raised as one (a Playwright error included).
            episode.infra = await self.vitals()
            if episode.infra is None:
                raise
        finally:
            episode.duration_s = time.monotonic() - began
            active = self.session.active
            episode.final_url = active.url if active is not None and not active.is_closed() else ""
            await asyncio.wait_for(self.policy.end(), 10)
        return episode

    async def _steps(self, episode: Episode, max_steps: int) -> None:
        last_result: str | None = None
        invalid = 0
        with open(episode.folder / "trajectory.jsonl", "a", encoding="utf-8") as trajectory:
            for number in range(1, max_steps + 1):
                try:
                    record, last_result, done = await asyncio.wait_for(
                        self._step(episode, number, last_result), self.budgets.step_timeout_s)
                except asyncio.TimeoutError:
                    raise InfraError("step_timeout", f"step {number} took over {self.budgets.step_timeout_s:.0f} s")
                if record is None:  # the page ended the episode itself
                    return
                episode.steps.append(record)
                trajectory.write(json.dumps(step_json(record), ensure_ascii=False) + "\n")
                trajectory.flush()
                if done:
                    return
                invalid = invalid + 1 if record.error else 0
                if invalid >= self.budgets.max_invalid:
                    episode.failure_class = FailureClass.invalid_output
                    episode.reason = f"{invalid} invalid replies in a row; last: {record.error}"
                    return
        episode.failure_class = FailureClass.step_budget
        episode.reason = f"no answer within {max_steps} steps"

    async def _step(self, episode: Episode, number: int,
                    last_result: str | None) -> tuple[StepRecord | None, str | None, bool]:
        session = self.session
        timings: dict[str, float] = {}
        t0 = time.monotonic()
        timings["settle"] = await session.settle()
        # Input reaches the page asynchronously: only a settled page can say whether the last action ended it.
        if number > 1 and self.hooks is not None and await self.hooks.ended(session.require_active()):
            return None, None, True
        t1 = time.monotonic()
        page = session.require_active()
        # The grab and its encoding run on a thread while the browser is asked for any title the settling did not read.
        png, tabs = await gather_or_cancel(self.observer.screenshot_png(), session.tabs())
        title = next((tab.title for tab in tabs if tab.active), "")
        events = session.take_events()
        note = "; ".join(filter(None, [last_result, *events])) or None
        observation = Observation(step=number, screenshot_png=png, size=(session.display.width, session.display.height),
                                  url=page.url, title=title, tabs=tabs, last_result=note)
        shot = f"step-{number:03d}.png"
        writing = asyncio.ensure_future(_write(episode.folder / shot, png))
        t2 = time.monotonic()
        timings["observe"] = t2 - t1
        turn = await self.policy.act(observation)
        t3 = time.monotonic()
        timings["policy"] = t3 - t2
        record = StepRecord(step=number, screenshot=shot, url=page.url, title=title, raw=turn.raw, usage=turn.usage,
                            retries=turn.retries, latency_s=round(turn.latency_s or timings["policy"], 4),
                            screenshot_sha256=hashlib.sha256(png).hexdigest(), tokens=turn.tokens)
        if turn.end is not None:
            episode.failure_class, episode.reason = turn.end
            await writing
            return record, None, True
        try:
            if turn.invalid is not None:
                raise ActionError(turn.invalid)
            actions = parse_turn([(c.name, c.arguments) for c in turn.calls], observation.size)
        except ActionError as exc:
            record.error = str(exc)
            await writing
            return record, f"error: {exc}", False
        timings["validate"] = time.monotonic() - t3
        t4 = time.monotonic()
        done = await self._act(episode, record, actions)
        timings["execute"] = time.monotonic() - t4
        await writing
        timings["step"] = time.monotonic() - t0
        record.timings = {k: round(v, 4) for k, v in timings.items()}
        return record, "; ".join(record.results) or None, done

    async def _act(self, episode: Episode, record: StepRecord, actions: list) -> bool:
        """Execute a turn's actions in order; True when it terminated the episode."""
        for action in actions:
            record.actions.append(action.model_dump(exclude_none=True, exclude_defaults=False))
            if isinstance(action, Terminate):
                episode.answer = action.answer
                episode.status = action.status
                if action.status == "failure":
                    episode.failure_class = FailureClass.gave_up
                    episode.reason = f"the agent gave up: {action.answer}"
                return True
            record.results.append(await execute(action, self.session, self.device))
        return False
