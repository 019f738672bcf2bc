"""Asking a model to write the rubrics of seed tasks (the prompt and checks: webeval.tasks.rubric_writing).

The model is reached as a judge is (ChatJudge: the one model-endpoint layer, its retry policy and its re-ask). Each
seed is asked again, `reasks` times at most, while its reply gives no usable rubric; a seed that never gets one, or
whose model refuses, is a Failure with the reason. A transport, timeout, authentication or HTTP error of the endpoint
(after the retries) is not the model's inability: it stops the whole generation (JudgeError).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Sequence

from webeval.judges.protocols.chat import ChatJudge
from webeval.models import Endpoint, Unreadable
from webeval.outcomes.record import JudgeError
from webeval.tasks import Task
from webeval.tasks.rubric_writing import PROMPT_VERSION, Seed, Unwritable, messages, reask_text, written_task

REASKS = 2
TEMPERATURE = 0.0


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


class RubricWriter(ChatJudge):
    """A judge's endpoint and transport, asked for rubrics instead of verdicts."""

    name = "rubric-writer"
    prompt_version = PROMPT_VERSION

    async def write(self, line: int, seed: Seed) -> Written | Failure:
        request: dict[str, Any] = {"model": self.endpoint.model, "messages": messages(seed),
                                   "temperature": TEMPERATURE}
        why: list[str] = []  # each unusable reply's reason, as they came

        def read(content: str) -> Task:
            try:
                return written_task(seed, line, content, self.endpoint.model)
            except Unwritable as exc:
                why.append(str(exc))
                raise Unreadable(str(exc)) from None

        try:
            reading = await self.ask_until_read(request, read, reask_text)
        except JudgeError as exc:
            if exc.kind != "unparseable":  # the endpoint failed, not the model
                raise
            if why and len(why) == self.reasks + 1:
                return Failure(line, f"{why[-1]} (after {len(why)} replies)", len(why))
            return Failure(line, f"the model refused: {exc}", len(why) + 1)
        return Written(line, reading.value, reading.asked)


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
