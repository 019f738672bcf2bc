"""Small asyncio helpers shared by the runtime and the agent loop."""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable


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
