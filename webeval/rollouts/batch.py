"""Collecting a batch of rollouts: all of them, or (WebGym's rule for stragglers) once a share of them has ended, the
rest get a grace period and are then cut: masked `cut`, their slots freed, never a reward of 0.

An interrupt (Ctrl-C, SIGTERM) ends a batch the same way within a bounded time: the rollouts in flight are masked
`interrupted`, those that never started have no record, so a later collection of the same folder runs them.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field
from typing import Callable, Iterable, Protocol

from webeval.rollouts.engine import CUT, INTERRUPTED, EngineStopped, Flight, mark_cancelled
from webeval.rollouts.records import RolloutRecord
from webeval.rollouts.requests import RequestError, RolloutRequest, parse_request

INTERRUPT_GRACE_S = 20.0  # a cancelled episode writes its evidence and closes its context: 10 s bounds each part


@dataclass
class Batch:
    """What a batch left: a record for each rollout that ran, the requests refused, those that never started."""

    records: list[RolloutRecord] = field(default_factory=list)
    rejected: list[tuple[int, str]] = field(default_factory=list)  # (index in the batch, one-line error)
    not_started: list[RolloutRequest] = field(default_factory=list)
    stopped: str | None = None  # why the engine stopped, if it did


class Runner(Protocol):
    """What a batch is collected from: a RolloutEngine in this process, or a router over engines on a Ray cluster
    (webeval.rollouts.ray). A cancelled run() ends with the record its flight's `why` asks for, or not started."""

    flights: dict[str, Flight]
    stopped: str | None

    def prepare(self, request: RolloutRequest) -> object: ...

    async def run(self, request: RolloutRequest) -> RolloutRecord: ...


Running = dict[asyncio.Future, tuple[int, RolloutRequest]]  # each rollout under way: its index in the batch


async def collect(engine: Runner, requests: Iterable[RolloutRequest | dict], *,
                  completion_threshold: float | None = None, grace_s: float = 0.0,
                  on_record: Callable[[RolloutRecord], None] | None = None,
                  interrupted: asyncio.Event | None = None) -> Batch:
    """Run the requests on the engine at once (it holds them to its slots) and gather one result for each."""
    batch = Batch()
    running: Running = {}
    for index, data in enumerate(requests):
        try:
            request = parse_request(data, f"request {index}")
            engine.prepare(request)
        except RequestError as exc:
            batch.rejected.append((index, str(exc)))
            continue
        running[asyncio.ensure_future(engine.run(request))] = (index, request)
    wanted = math.ceil(len(running) * completion_threshold) if completion_threshold is not None else len(running)
    stop = interrupted or asyncio.Event()
    await _until(engine, running, wanted, grace_s if completion_threshold is not None else None, stop, batch,
                 on_record)
    batch.stopped = engine.stopped
    return batch


async def _until(engine: Runner, running: Running, wanted: int,
                 grace_s: float | None, stop: asyncio.Event, batch: Batch, on_record) -> None:
    pending, ended, deadline = set(running), 0, None
    loop = asyncio.get_running_loop()
    stopping = asyncio.ensure_future(stop.wait())
    try:
        while pending:
            timeout = None if deadline is None else max(0.0, deadline - loop.time())
            done, pending = await asyncio.wait(pending | {stopping}, timeout=timeout,
                                               return_when=asyncio.FIRST_COMPLETED)
            pending.discard(stopping)
            for future in done - {stopping}:
                ended += 1
                _gather_one(future, running, batch, on_record)
            if stopping in done:
                await _end(engine, pending, running, INTERRUPTED, batch, on_record)
                return
            if deadline is None and grace_s is not None and ended >= wanted:
                deadline = loop.time() + grace_s
            elif deadline is not None and loop.time() >= deadline:
                await _end(engine, pending, running, CUT, batch, on_record)
                return
    finally:
        stopping.cancel()


def _gather_one(future: asyncio.Future, running: Running, batch: Batch, on_record) -> None:
    index, request = running[future]
    if future.cancelled():
        batch.not_started.append(request)
        return
    error = future.exception()
    if isinstance(error, EngineStopped):
        batch.not_started.append(request)
    elif isinstance(error, RequestError):  # refused where it was to run: a node whose benchmark differs
        batch.rejected.append((index, str(error)))
    elif error is not None:
        raise error
    else:
        batch.records.append(future.result())
        if on_record is not None:
            on_record(future.result())


async def _end(engine: Runner, pending: set[asyncio.Future], running: Running, why: str, batch: Batch,
               on_record) -> None:
    """Cancel what is still running: cut (or interrupted) if it holds a slot; not started if it waits for one."""
    for future in pending:
        flight = engine.flights.get(running[future][1].id)
        if flight is not None:
            mark_cancelled(flight, why)
        future.cancel()
    if pending:
        await asyncio.wait(pending, timeout=INTERRUPT_GRACE_S)
    for future in pending:
        if future.done():
            _gather_one(future, running, batch, on_record)
        else:
            batch.not_started.append(running[future][1])  # past every bound: said, not waited on
