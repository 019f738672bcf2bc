"""Asking a model to write the rubrics of seed tasks (the prompt and checks: webeval.tasks.rubric_writing).

Each seed is asked once and asked again, `reasks` times at most, while its reply gives no usable rubric; a seed that
never gets one is a Failure with the last reason. A transport, timeout, authentication or HTTP error of the endpoint
(after the client's retries) is not the model's inability: it stops the whole generation (JudgeError).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Sequence

from webeval.judges.webvoyager import Endpoint, ModelJudge
from webeval.outcomes.record import JudgeError
from webeval.tasks import Task
from webeval.tasks.rubric_writing import Seed, Unwritable, messages, reask, written_task

REASKS = 2


@dataclass(frozen=True)
class Written:
    line: int
    task: Task
    asked: int


@dataclass(frozen=True)
class Failure:
    line: int
    reason: str
    asked: int


class RubricWriter(ModelJudge):
    """The judge's endpoint and transport, asked for rubrics instead of verdicts."""

    name = "rubric-writer"

    async def write(self, line: int, seed: Seed) -> Written | Failure:
        request: dict[str, Any] = {"model": self.endpoint.model, "messages": messages(seed)}
        if self.endpoint.temperature is not None:
            request["temperature"] = self.endpoint.temperature
        why = ""
        for asked in range(1, self.reasks + 2):
            try:
                content = await self._complete(request)
            except JudgeError as exc:
                if exc.kind != "unparseable":  # the endpoint failed, not the model
                    raise
                return Failure(line, f"the model refused: {exc}", asked)
            try:
                return Written(line, written_task(seed, line, content, self.endpoint.model), asked)
            except Unwritable as exc:
                why = str(exc)
                request["messages"] = [*request["messages"], {"role": "assistant", "content": content or ""},
                                       reask(why)]
        return Failure(line, f"{why} (after {self.reasks + 1} replies)", self.reasks + 1)


async def write_rubrics(seeds: Sequence[tuple[int, Seed]], endpoint: Endpoint, reasks: int = REASKS,
                        concurrency: int = 4) -> list[Written | Failure]:
    """Every seed's outcome, in seed order; raises JudgeError when the endpoint fails."""
    writer = RubricWriter(endpoint, reasks=reasks)
    gate = asyncio.Semaphore(concurrency)

    async def one(line: int, seed: Seed) -> Written | Failure:
        async with gate:
            return await writer.write(line, seed)

    try:
        async with asyncio.TaskGroup() as group:
            running = [group.create_task(one(line, seed)) for line, seed in seeds]
    except* JudgeError as errors:
        raise errors.exceptions[0] from None
    finally:
        await writer.close()
    return [task.result() for task in running]
