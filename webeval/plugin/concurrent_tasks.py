"""`--slots N`: a session's tasks run N at a time in one process, each episode on a slot of its own (its own Xvfb,
Chromium and input connection), with no xdist worker to start.

At the first task the session's selected tasks are handed, the longest expected first, to a pool of N slots on the
session's event loop; each test then awaits its own task's attempt, so the reports come in the tests' order while the
episodes run ahead of them. The attempt is the same record `evaluate()` makes, and every outcome, report and
reconciliation rule decides from it as without --slots. A verdict is awaited after the episode gave its slot back. The
suite's environment and judge are the first task's fixtures' (a suite's environment and judge do not depend on the
task).
"""

from __future__ import annotations

import asyncio
import math
from typing import Callable

import pytest

from webeval.agent.evaluate import Attempt, Evaluation, act, judge_acted
from webeval.plugin.keys import TASK
from webeval.runtime.pool import AnySlot, SlotPool
from webeval.tasks import Task

CLOSE_S = 30.0  # an episode cancelled at the session's end writes its evidence and closes its context first
SCHEDULER = pytest.StashKey["TaskScheduler"]()


def expected_steps(task: Task) -> float:
    """How long a task's episode is expected to be: its solution's steps; unknown (no solution) counts as longest."""
    return len(task.solution) if task.solution else math.inf


class TaskScheduler:
    """The selected tasks' attempts, run on a pool of slots as slots come free."""

    def __init__(self, pool: SlotPool, evaluation: Callable[[AnySlot], Evaluation]) -> None:
        self.pool, self.evaluation = pool, evaluation
        self.attempts: dict[str, asyncio.Task] = {}
        self.loop = asyncio.get_running_loop()
        self._started: asyncio.Task | None = None

    def schedule(self, items: list[pytest.Item]) -> None:
        self._started = asyncio.ensure_future(self.pool.start(all_ready=False))  # episodes begin as slots start
        tasks = [item for item in items if TASK in item.stash]
        # Slots take the attempts in the order they were made: the longest first, so that no long episode starts
        # last and keeps the session waiting on one slot (stable: tasks of equal or unknown length keep their order)
        for item in sorted(tasks, key=lambda item: -expected_steps(item.stash[TASK])):
            if item.nodeid not in self.attempts:
                self.attempts[item.nodeid] = asyncio.ensure_future(self._attempt(item.stash[TASK]))

    async def _attempt(self, task) -> Attempt:
        await asyncio.shield(self._started)
        async with self.pool.slot() as slot:
            how = self.evaluation(slot)
            acted = await act(task, how)
        return await judge_acted(acted, how)

    async def attempt(self, item: pytest.Item) -> Attempt:
        if asyncio.get_running_loop() is not self.loop:
            raise pytest.UsageError("--slots runs every task on the session's event loop: set "
                                    "asyncio_default_test_loop_scope = session (and the fixture scope) in pytest's "
                                    "configuration")
        return await self.attempts[item.nodeid]

    async def close(self) -> None:
        """Tasks not reached (-x, --maxfail, an interrupt) are cancelled and their episodes closed, then the slots."""
        pending = [task for task in self.attempts.values() if not task.done()]
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=CLOSE_S)
        for task in self.attempts.values():
            if task.done() and not task.cancelled():
                task.exception()  # read, so that an attempt nobody awaited leaves no unread error behind
        if self._started is not None and not self._started.done():
            self._started.cancel()
        await self.pool.close()
