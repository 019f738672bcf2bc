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
