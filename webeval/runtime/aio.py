"""Small asyncio helpers shared by the runtime and the agent loop."""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable, TypeVar

T = TypeVar("T")


async def gather_or_cancel(*aws: Awaitable[Any]) -> list[Any]:
    """Like asyncio.gather, but on the first error the others are cancelled and awaited, never left running."""
    tasks = [asyncio.ensure_future(a) for a in aws]
    try:
        return await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def detached(work: Awaitable[Any], pending: set[asyncio.Future], *ignored: type[BaseException]) -> asyncio.Future:
    """Run `work` on its own, kept in `pending` until it ends; an error of the `ignored` kinds ends it quietly (a page
    that closed meanwhile), so no error is left unread."""

    async def run() -> None:
        try:
            await work
        except ignored:
            pass

    future = asyncio.ensure_future(run())
    pending.add(future)
    future.add_done_callback(pending.discard)
    return future


async def run_watched(work: Awaitable[T], check: Callable[[], BaseException | None], every_s: float,
                      stop_s: float) -> asyncio.Future[T]:
    """Run `work` to its end, calling `check` every `every_s` seconds meanwhile: an error it returns ends the work
    (cancelled, and waited on for at most `stop_s`) and is raised. Cancelled from outside (a watchdog, a cut), the
    work stops with it, never left running. Returns the finished work, its result or error for the caller to read."""
    task = asyncio.ensure_future(work)
    while True:
        try:
            done, _ = await asyncio.wait({task}, timeout=every_s)
        except asyncio.CancelledError:
            await _stopped(task, stop_s)
            raise
        if done:
            return task
        error = check()
        if error is not None:
            await _stopped(task, stop_s)
            raise error


async def _stopped(task: asyncio.Future[Any], stop_s: float) -> None:
    task.cancel()
    await asyncio.wait({task}, timeout=stop_s)
