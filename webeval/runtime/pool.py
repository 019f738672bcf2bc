"""A pool of slots in one process: episodes take a free slot and give it back; the pool knows how long each slot
held one (a slot's idle time is what a scheduler wastes)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import AsyncIterator, Sequence

from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt

from webeval.outcomes.record import InfraError
from webeval.runtime.remote import RemoteSlot
from webeval.runtime.slot import Slot

AnySlot = Slot | RemoteSlot
log = logging.getLogger(__name__)


class SlotPool:
    def __init__(self, slots: Sequence[AnySlot]) -> None:
        self.slots = list(slots)
        self.names = {id(slot): f"slot-{index}" for index, slot in enumerate(self.slots)}
        self.busy_s = dict.fromkeys(self.names.values(), 0.0)
        self.started_s = time.monotonic()
        self._free: asyncio.Queue = asyncio.Queue()
        self._starting = asyncio.Semaphore(2)  # how many start at once: start()'s `at_once`
        self._behind: asyncio.Future | None = None  # the slots still starting behind the first (start(all_ready=False))

    @classmethod
    def local(cls, count: int, screen: tuple[int, int], browser_path: str | None = None) -> "SlotPool":
        return cls([Slot(*screen, browser_path) for _ in range(count)])

    async def start(self, at_once: int = 2, *, all_ready: bool = True) -> None:
        """Every slot ready, `at_once` at a time (eight Chromium launches together starve two cores), then free.
        A slot that cannot exist here raises NotRun, and every slot is closed again.

        With `all_ready=False`, only the first `at_once` are waited for: the others start behind them, each free as
        soon as it is ready, so that episodes begin while the rest start. One of those that cannot start is closed
        and left out (said in a warning): the pool goes on with the slots it has."""
        first, rest = (self.slots, []) if all_ready else (self.slots[:at_once], self.slots[at_once:])
        self._starting = asyncio.Semaphore(at_once)
        try:
            await asyncio.gather(*(self._start_one(slot) for slot in first))
        except BaseException:
            await self.close()
            raise
        for slot in first:
            self._free.put_nowait(slot)
        self.started_s = time.monotonic()
        if rest:
            self._behind = asyncio.ensure_future(asyncio.gather(*(self._start_behind(slot) for slot in rest)))

    async def _start_one(self, slot: AnySlot) -> None:
        async with self._starting:
            await started(slot)

    async def _start_behind(self, slot: AnySlot) -> None:
        try:
            await self._start_one(slot)
        except Exception as exc:  # noqa: BLE001 - the slots already started carry on without this one
            log.warning("%s did not start (%s): going on with the other slots", self.name(slot), exc)
            await slot.close()
            return
        self._free.put_nowait(slot)

    async def take(self) -> AnySlot:
        return await self._free.get()

    def give_back(self, slot: AnySlot, held_s: float) -> None:
        self.busy_s[self.name(slot)] += held_s
        self._free.put_nowait(slot)

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[AnySlot]:
        """A free slot for the length of the block; given back however the block ends."""
        slot = await self.take()
        took = time.monotonic()
        try:
            yield slot
        finally:
            self.give_back(slot, time.monotonic() - took)

    def name(self, slot: AnySlot) -> str:
        return self.names[id(slot)]

    def free(self) -> int:
        return self._free.qsize()

    def idle_fraction(self) -> float:
        """The share of slot time since the pool started that no episode held."""
        wall = (time.monotonic() - self.started_s) * len(self.slots)
        return 1 - sum(self.busy_s.values()) / wall if wall > 0 else 0.0

    async def close(self) -> None:
        if self._behind is not None:
            self._behind.cancel()
            await asyncio.gather(self._behind, return_exceptions=True)
        await asyncio.gather(*(slot.close() for slot in self.slots), return_exceptions=True)


async def started(slot: AnySlot, starts: int = 3) -> None:
    """The slot started, or started again: a part killed while it starts gets another start."""
    await AsyncRetrying(stop=stop_after_attempt(starts), retry=retry_if_exception_type(InfraError),
                        reraise=True)(slot.ready)
