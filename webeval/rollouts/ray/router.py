"""The router on the collection's head: each request to an actor with a free slot, one record per rollout.

No lockstep: a request goes to whichever actor has a slot free (at most as many in flight on an actor as it has
slots) and its record comes back when that rollout ends. The head writes rollouts.jsonl, one record per rollout id.

An actor that dies (its process killed, its node gone) takes its rollouts in flight with it: each is masked
`node_lost` (reward null, never 0). An actor that stops answering (a rollout's record not back within the episode's
own bound and a margin) is ended, and is lost the same way. With `resubmit_lost` each is run once more on an actor still alive; the
resubmission's record is the rollout's record in rollouts.jsonl, and the lost attempt is kept, with the same
rollout id, in lost-attempts.jsonl beside it. A rollout lost again, or lost with no actor left, keeps its
`node_lost` record.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import ray
from ray.exceptions import RayActorError

from webeval.outcomes.redact import redact
from webeval.rollouts.batch import INTERRUPT_GRACE_S
from webeval.rollouts.engine import (CUT, INTERRUPTED, NOT_STARTED, EndpointWatch, EngineStats, EngineStopped,
                                     Flight)
from webeval.rollouts.ray.node_actor import RECORD, REJECTED, STOPPED, TRAJECTORY
from webeval.rollouts.records import NODE_LOST, RolloutRecord, masked
from webeval.rollouts.requests import RequestError, RolloutRequest, parse_request
from webeval.rollouts.store import RolloutStore

LOST_ATTEMPTS = "lost-attempts.jsonl"
CANCEL_ANSWER_S = INTERRUPT_GRACE_S - 2.0  # an actor told to cut a rollout answers with its record within this
# Beyond the episode's own watchdog on the actor: the verdict (its judge's timeouts and retries) and Ray's delivery.
ANSWER_MARGIN_S = 300.0


class Unanswered(Exception):
    """An actor did not answer within its bound: it is taken as hung."""


@dataclass
class Member:
    """One actor of the collection, as the router sees it."""

    name: str
    handle: Any  # its Ray actor handle
    node: str
    address: str
    slots: int
    folder: str  # its collection folder on its node
    pid: int
    in_flight: int = 0
    lost: str | None = None  # why it is gone, once it is


@dataclass
class RouterStats(EngineStats):
    started_s: float = field(default_factory=time.monotonic)
    lost_attempts: int = 0  # rollouts that were in flight on an actor as it died
    resubmitted: int = 0  # lost rollouts that were run again to a record of their own


class RayRouter:
    """The engine's interface (prepare, run, flights, stopped, stop) over actors on a cluster, so that `collect`
    (stragglers cut, interrupts, endpoint stops) runs on it unchanged."""

    def __init__(self, members: list[Member], out: Path, *, answer_timeout_s: float,
                 check: Callable[[RolloutRequest], object] | None = None, resubmit_lost: bool = False,
                 stop_after: int = 3, history: str | None = None, trajectories: bool = False) -> None:
        self.members, self.check, self.resubmit_lost, self.history = members, check, resubmit_lost, history
        # With `trajectories`, each record's trajectory.jsonl comes back from its node with it, kept until taken.
        self.trajectories: dict[str, str] | None = {} if trajectories else None
        self.answer_timeout_s = answer_timeout_s  # a rollout's record back from its actor, or the actor is hung
        self.store = RolloutStore(out)
        self.lost_store = RolloutStore(out, LOST_ATTEMPTS)
        self.flights: dict[str, Flight] = {}
        self.stopped: str | None = None
        self.policy_version = ""
        self.stats = RouterStats()
        self._endpoint = EndpointWatch(stop_after)
        self._changed = asyncio.Event()

    def prepare(self, request: RolloutRequest) -> None:
        """RequestError (one line) for a request the actors would refuse, before it is sent anywhere."""
        if self.check is not None:
            self.check(request)

    def free_slots(self) -> int:
        return sum(member.slots - member.in_flight for member in self.members if member.lost is None)

    def take_trajectory(self, rollout_id: str) -> str | None:
        """The trajectory.jsonl text of the rollout's record (asked for with `trajectories`), once: None when its
        record has none (lost with its node, not started)."""
        return self.trajectories.pop(rollout_id, None) if self.trajectories is not None else None

    def set_policy_version(self, version: str | int) -> None:
        self.policy_version = str(version)
        for member in self._alive():
            member.handle.set_policy_version.remote(self.policy_version)

    def stop(self, why: str) -> None:
        """Send nothing more; those waiting for an actor end as not started; those in flight finish."""
        if self.stopped is None:
            self.stopped = why
            for member in self._alive():
                member.handle.stop.remote(why)
        self._wake()

    async def run(self, request: RolloutRequest | dict) -> RolloutRecord:
        """One rollout on some actor to its record, also appended to the head's rollouts.jsonl."""
        request = parse_request(request)
        self.prepare(request)
        if self.stopped:
            raise EngineStopped(self.stopped)
        flight = self.flights[request.id] = Flight(request, time.monotonic())
        self.stats.in_flight += 1
        try:
            record = await self._fly(flight)
        finally:
            self.stats.in_flight -= 1
            self.flights.pop(request.id, None)
        self.store.append(record)
        self.stats.count(record)
        why = self._endpoint.why_stop(record)
        if why is not None:
            self.stop(why)
        return record

    async def _fly(self, flight: Flight) -> RolloutRecord:
        record = await self._attempt(flight)
        if record.failure_kind != NODE_LOST or not self.resubmit_lost or flight.why or not self._alive():
            return record
        lost, flight.slot = record, None
        try:
            record = await self._attempt(flight)
        except EngineStopped:  # nothing left to take it: the lost attempt is its record
            return lost
        except asyncio.CancelledError:  # interrupted before it took a slot: a later collection runs it
            self.lost_store.append(lost)
            raise
        self.lost_store.append(lost)
        self.stats.resubmitted += 1
        return record

    async def _attempt(self, flight: Flight) -> RolloutRecord:
        try:
            member = await self._take()
        except asyncio.CancelledError:
            if flight.why == CUT:
                return self._masked(flight, CUT, "cut: the rollout was stopped before it took a slot", None)
            raise
        flight.slot = member.name
        request = flight.request.model_dump(mode="json")
        answer = asyncio.wrap_future(member.handle.run.remote(request, self.trajectories is not None).future())
        try:
            return self._answered(flight, member, await self._answer(flight, member, answer))
        except RayActorError as exc:
            return self._masked(flight, NODE_LOST, self._lose(member, _first_line(exc)), member)
        except Unanswered as exc:
            return self._masked(flight, NODE_LOST, self._lose(member, str(exc), end=True), member)
        finally:
            member.in_flight -= 1
            self._wake()

    async def _answer(self, flight: Flight, member: Member, answer: asyncio.Future) -> dict[str, Any]:
        """The actor's answer; cancelled here, the actor is told to end the rollout as its flight says, and its
        record (cut, interrupted) is awaited within a bound."""
        try:
            return await _within(answer, self.answer_timeout_s)
        except asyncio.CancelledError:
            member.handle.cancel.remote(flight.request.id, flight.why or NOT_STARTED)
            if flight.why not in (CUT, INTERRUPTED):
                _abandon(answer)
                raise
            return await _within(answer, CANCEL_ANSWER_S)

    def _answered(self, flight: Flight, member: Member, answer: dict[str, Any]) -> RolloutRecord:
        if RECORD in answer:
            record = RolloutRecord.model_validate(answer[RECORD])
            if self.trajectories is not None and answer.get(TRAJECTORY):
                self.trajectories[record.rollout_id] = answer[TRAJECTORY]
            return record
        if STOPPED in answer:
            self.stop(answer[STOPPED])
            raise EngineStopped(answer[STOPPED])
        if REJECTED in answer:
            raise RequestError(answer[REJECTED])
        raise asyncio.CancelledError()  # not started there: it was cancelled while it waited for a slot

    async def _take(self) -> Member:
        """The actor with the most free slots, once one has a free slot."""
        while True:
            if self.stopped:
                raise EngineStopped(self.stopped)
            alive = self._alive()
            if not alive:
                lost = "; ".join(f"{member.name}: {member.lost}" for member in self.members)
                self.stop(f"every Ray actor of the collection was lost ({lost})")
                raise EngineStopped(self.stopped)
            free = [member for member in alive if member.in_flight < member.slots]
            if free:
                member = max(free, key=lambda m: m.slots - m.in_flight)
                member.in_flight += 1
                return member
            changed = self._changed
            await changed.wait()

    def _lose(self, member: Member, why: str, end: bool = False) -> str:
        """The member gone (ended now if it is hung): nothing more is sent to it. The masked rollout's reason."""
        if member.lost is None:
            member.lost = redact(why)
            if end:
                kill(member)  # its other rollouts in flight come back as lost too
            self._wake()
        self.stats.lost_attempts += 1
        return (f"node_lost: the Ray actor {member.name} on node {member.node} ({member.address}) was lost with "
                f"the rollout in flight: {member.lost}")

    def _masked(self, flight: Flight, kind: str, reason: str, member: Member | None) -> RolloutRecord:
        request = flight.request
        version = request.policy_version or self.policy_version
        return RolloutRecord(
            rollout_id=request.id, task_id=request.task_id, group_id=request.group_id,
            sample_index=request.sample_index, seed=request.seed, policy_version_start=version,
            policy_version_end=self.policy_version or version, curriculum=request.curriculum, history=self.history,
            outcome=kind, slot=member.name if member else None, node=member.node if member else None,
            node_root=member.folder if member else None,
            timings={"total_s": round(time.monotonic() - flight.began, 4)}, **masked(kind, reason))

    def _alive(self) -> list[Member]:
        return [member for member in self.members if member.lost is None]

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()


async def _within(answer: asyncio.Future, seconds: float) -> dict[str, Any]:
    try:
        return await asyncio.wait_for(asyncio.shield(answer), seconds)
    except asyncio.TimeoutError:
        _abandon(answer)
        raise Unanswered(f"no answer within {seconds:g} s: the actor was ended as hung") from None


def _abandon(answer: asyncio.Future) -> None:
    """An answer no one awaits any more: what it ends with (the ended actor's error) is read, not logged as lost."""
    answer.add_done_callback(lambda done: done.cancelled() or done.exception())


def _first_line(error: BaseException) -> str:
    said = str(error).strip().splitlines()
    return said[0] if said else type(error).__name__


def kill(member: Member) -> None:
    """The actor ended now, whatever it is doing (its slots' processes die with it)."""
    ray.kill(member.handle, no_restart=True)
