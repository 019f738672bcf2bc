"""The rollout engine: many episodes at once on a pool of slots in one asyncio process, one record per rollout.

No lockstep: each rollout takes a free slot, acts, gives the slot back as soon as its evidence is written, and is
judged off the slot in a bounded queue; model calls are bounded per endpoint by the policy's own transport. A slot
whose runtime dies is started again by the next rollout that takes it; the rollout it was running is masked. A
rollout is recorded once: cut (a straggler past the batch's grace), interrupted (the collection stopped while it was
in flight), masked by the outcome rules, or scored.
"""

from __future__ import annotations

import asyncio
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol

from webeval.agent.environment import Environment
from webeval.agent.evaluate import AnySlot, Attempt, Evaluation, PolicyFactory, act, judge_acted
from webeval.agent.loop import Budgets
from webeval.judges.decide import Judge, Unparseable
from webeval.outcomes.disk import DISK, PROFILE_BYTES, disk_error, full_disk, short_of_space
from webeval.outcomes.record import InfraError, NotRun
from webeval.outcomes.rundir import RunDir
from webeval.rollouts.records import CUT, HARNESS_ERROR, INTERRUPTED, RolloutRecord, masked, scored, turn_records
from webeval.rollouts.requests import RequestError, RolloutRequest, parse_request
from webeval.rollouts.store import RolloutStore
from webeval.runtime.downloads import DEFAULT_MAX_BYTES
from webeval.runtime.fd_limits import too_few
from webeval.runtime.pool import SlotPool
from webeval.runtime.slot import Slot
from webeval.tasks import Task

NOT_STARTED = "not_started"  # stopped while waiting for a slot: no record, a later collection runs it
# Masks that every later rollout would meet too: enough of them in a row stop the engine with one line.
ENDPOINT_KINDS = frozenset({"infra_error[policy_unavailable]", "infra_error[policy_request]",
                            "infra_error[policy_tokens]"})
STOP_AT_ONCE = frozenset({"infra_error[policy_auth]"})
DISK_KIND = f"infra_error[{DISK}]"  # the attempt, its record or the collection's store met a full disk


class TaskSource(Protocol):
    """What the engine runs tasks from: a benchmark's tasks, its environment and its judge."""

    environment: Environment
    judge: Judge

    def task(self, task_id: str) -> Task: ...


PolicyFor = Callable[[RolloutRequest], PolicyFactory]  # RequestError for a request it cannot serve


class EngineStopped(Exception):
    """The engine stopped taking rollouts (an endpoint that cannot serve, an interrupt): one line why."""


class EndpointWatch:
    """Rollouts in a row masked by the policy endpoint (or one it refused outright): past `stop_after`, every later
    rollout would meet the same problem, so whoever runs them stops with one line. A scored rollout resets it."""

    def __init__(self, stop_after: int) -> None:
        self.stop_after = stop_after
        self.in_a_row = 0

    def why_stop(self, record: RolloutRecord) -> str | None:
        kind = record.failure_kind or ""
        self.in_a_row = self.in_a_row + 1 if kind in ENDPOINT_KINDS else 0
        if kind in STOP_AT_ONCE or kind.startswith("not_run[") or self.in_a_row >= self.stop_after:
            return f"{record.failure_reason.splitlines()[0]} ({kind}; {max(self.in_a_row, 1)} rollout(s) in a row)"
        return None


@dataclass(frozen=True)
class EngineSettings:
    slots: int = 8
    screen: tuple[int, int] = (1280, 720)
    browser_path: str | None = None
    judge_concurrency: int = 8
    start_concurrency: int = 2  # slots started at once: eight Chromium launches together starve two cores
    budgets: Budgets = field(default_factory=Budgets)
    settle_cap_s: float = 3.0
    infra_retries: int = 0
    download_max_bytes: int = DEFAULT_MAX_BYTES
    unparseable: Unparseable = "mask"
    stop_after: int = 3  # rollouts in a row masked by the policy endpoint before the engine stops
    history: str | None = None  # how the policy keeps its prompt (recorded with every rollout)
    node: str | None = None


@dataclass
class Flight:
    """One rollout on its way: why it is being cancelled (if it is), its slot and its folder once it has them."""

    request: RolloutRequest
    began: float
    why: str | None = None
    slot: str | None = None
    folder: Path | None = None


def mark_cancelled(flight: Flight, why: str) -> None:
    """Why a rollout about to be cancelled ends: cut or interrupted if it holds a slot (its record says so); an
    interrupted one still waiting for a slot did not start (no record: a later collection runs it); a straggler is
    cut wherever it is."""
    flight.why = why if (flight.slot is not None or why == CUT) else NOT_STARTED


@dataclass
class EngineStats:
    outcomes: dict[str, int] = field(default_factory=dict)  # failure kind (or "passed") -> rollouts
    steps: int = 0
    step_s: list[float] = field(default_factory=list)  # each turn's whole time, for latency figures
    in_flight: int = 0

    def count(self, record: RolloutRecord) -> None:
        key = "passed" if record.outcome == "passed" else (record.failure_kind or record.outcome)
        self.outcomes[key] = self.outcomes.get(key, 0) + 1
        self.steps += record.steps
        self.step_s += [turn.timings["step"] for turn in record.turns if "step" in turn.timings]


class RolloutEngine:
    def __init__(self, tasks: TaskSource, out: Path, policy_for: PolicyFor, settings: EngineSettings = EngineSettings(),
                 slots: list[AnySlot] | None = None) -> None:
        self.tasks, self.policy_for, self.settings = tasks, policy_for, settings
        self.run_dir = RunDir(out)
        self.store = RolloutStore(Path(out))
        self.pool = SlotPool(slots) if slots is not None else SlotPool.local(settings.slots, settings.screen,
                                                                             settings.browser_path)
        self.policy_version = ""
        self.stats = EngineStats()
        self.flights: dict[str, Flight] = {}
        self.stopped: str | None = None
        self._judging = asyncio.Semaphore(settings.judge_concurrency)
        self._endpoint = EndpointWatch(settings.stop_after)

    async def __aenter__(self) -> "RolloutEngine":
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @property
    def slots(self) -> list[AnySlot]:
        return self.pool.slots

    async def start(self) -> None:
        """Every slot started (a few at a time) and free. A slot that cannot exist here stops the engine at once."""
        self.run_dir.path.mkdir(parents=True, exist_ok=True)
        too_low = too_few(slots=len(self.pool.slots), local_browser=any(isinstance(s, Slot) for s in self.pool.slots))
        if too_low is not None:
            raise EngineStopped(too_low)
        try:
            await self.pool.start(self.settings.start_concurrency)
        except NotRun as exc:
            raise EngineStopped(f"the slots cannot start here: {exc.message}") from None
        except InfraError as exc:  # a part died as it started, every time it was started
            raise EngineStopped(f"the slots did not start: {exc}") from None

    async def close(self) -> None:
        await self.pool.close()

    def set_policy_version(self, version: str | int) -> None:
        """The version of the policy's weights from now on: rollouts in flight end with it as their end version."""
        self.policy_version = str(version)

    def free_slots(self) -> int:
        return self.pool.free()

    async def run(self, request: RolloutRequest | dict) -> RolloutRecord:
        """One rollout to its record (also appended to rollouts.jsonl). RequestError for a bad request, before it
        takes a slot; EngineStopped when the engine stopped before the rollout started."""
        request = parse_request(request)
        task, policy = self.prepare(request)
        if self.stopped:
            raise EngineStopped(self.stopped)
        flight = self.flights[request.id] = Flight(request, time.monotonic())
        self.stats.in_flight += 1
        try:
            record = await self._fly(flight, task, policy)
        finally:
            self.stats.in_flight -= 1
            self.flights.pop(request.id, None)
        record = self._kept(record)
        self.stats.count(record)
        self._watch(record)
        return record

    def _kept(self, record: RolloutRecord) -> RolloutRecord:
        """The record, appended to rollouts.jsonl; one that a full disk keeps out is masked `disk` (a trainer never
        gets a rollout its store does not hold) and the engine takes no more."""
        try:
            self.store.append(record)
            return record
        except OSError as exc:
            if disk_error(exc) is None:
                raise
            line = full_disk(disk_error(exc), self.run_dir.path).line
        self.stop(line)
        return record.model_copy(update={"outcome": "infra_error", "verifier": None,
                                         **masked(DISK_KIND, f"infra[disk]: {line}; its record was not kept")})

    def prepare(self, request: RolloutRequest) -> tuple[Task, PolicyFactory]:
        try:
            task = self.tasks.task(request.task_id)
        except KeyError:
            raise RequestError(f"task_id: {request.task_id!r} is not a task of this benchmark") from None
        return task, self.policy_for(request)

    async def _fly(self, flight: Flight, task: Task, policy: PolicyFactory) -> RolloutRecord:
        version = flight.request.policy_version or self.policy_version
        try:
            attempt, timings = await self._attempt(flight, task, policy)
            return self._record(flight, version, attempt, timings)
        except asyncio.CancelledError:
            if flight.why in (None, NOT_STARTED) or (flight.why == INTERRUPTED and flight.slot is None):
                raise
            return self._masked(flight, version, flight.why, f"{flight.why}: the rollout was stopped in flight")
        except EngineStopped:
            raise
        except NotRun as exc:  # the slot could not start again
            return self._masked(flight, version, f"not_run[{exc.kind}]", f"precondition[{exc.kind}]: {exc.message}")
        except OSError as exc:  # its record met a full disk (an episode's own writes end it as infra[disk])
            if disk_error(exc) is None:
                return self._masked(flight, version, HARNESS_ERROR, f"harness_error: {exc!r}\n{traceback.format_exc()}")
            line = full_disk(disk_error(exc), self.run_dir.path).line
            return self._masked(flight, version, DISK_KIND, f"infra[disk]: {line}")
        except Exception as exc:  # an exception while every part of the slot answered: a bug, never a reward
            reason = f"harness_error: {exc!r}\n{traceback.format_exc()}"
            return self._masked(flight, version, HARNESS_ERROR, reason)

    async def _attempt(self, flight: Flight, task: Task, policy: PolicyFactory) -> tuple[Attempt, dict[str, float]]:
        slot = await self.pool.take()
        short = short_of_space(self.run_dir.path, PROFILE_BYTES)
        if short is not None:  # the rollout would only meet the full disk: it is not started, nor any after it
            self.stop(short.line)
        if self.stopped:
            self.pool.give_back(slot, 0.0)
            raise EngineStopped(self.stopped)
        flight.slot = self.pool.name(slot)
        took = time.monotonic()
        how = self._evaluation(slot, self._seen(policy, flight))
        try:
            acted = await act(task, how)
        finally:
            held = time.monotonic() - took
            self.pool.give_back(slot, held)
        judged = time.monotonic()
        async with self._judging:
            attempt = await judge_acted(acted, how)
        self.run_dir.append(attempt.record.model_copy(update={"extra": {"rollout_id": flight.request.id}}))
        return attempt, {"wait_s": took - flight.began, "slot_s": held, "judge_s": time.monotonic() - judged}

    def _evaluation(self, slot: AnySlot, policy: PolicyFactory) -> Evaluation:
        settings = self.settings
        return Evaluation(slot=slot, run_dir=self.run_dir, judge=self.tasks.judge, policy=policy,
                          environment=self.tasks.environment, budgets=settings.budgets,
                          settle_cap_s=settings.settle_cap_s, infra_retries=settings.infra_retries,
                          download_max_bytes=settings.download_max_bytes, unparseable=settings.unparseable)

    @staticmethod
    def _seen(policy: PolicyFactory, flight: Flight) -> PolicyFactory:
        def made(session, prepared):
            flight.folder = session.folder  # where a rollout cut short left its steps
            return policy(session, prepared)

        return made

    def _record(self, flight: Flight, version: str, attempt: Attempt, timings: dict[str, float]) -> RolloutRecord:
        record = attempt.record
        steps = attempt.episode.steps if attempt.episode is not None else []
        timings = {**timings, "total_s": time.monotonic() - flight.began, "policy_s": record.usage.get("policy_s", 0)}
        return RolloutRecord(
            **self._identity(flight, version), turns=turn_records(steps, record.path) if record.path else [],
            verifier=record.verdict, steps=record.steps, outcome=record.outcome.value, attempt_path=record.path,
            timings={k: round(v, 4) for k, v in timings.items()}, **scored(record))

    def _masked(self, flight: Flight, version: str, kind: str, reason: str) -> RolloutRecord:
        path = str(flight.folder.relative_to(self.run_dir.path)) if flight.folder is not None else None
        return RolloutRecord(**self._identity(flight, version), outcome=kind, attempt_path=path,
                             timings={"total_s": round(time.monotonic() - flight.began, 4)}, **masked(kind, reason))

    def _identity(self, flight: Flight, version: str) -> dict:
        request = flight.request
        return {"rollout_id": request.id, "task_id": request.task_id, "group_id": request.group_id,
                "sample_index": request.sample_index, "seed": request.seed, "policy_version_start": version,
                "policy_version_end": self.policy_version or version, "curriculum": request.curriculum,
                "history": self.settings.history, "slot": flight.slot, "node": self.settings.node}

    def _watch(self, record: RolloutRecord) -> None:
        """Stop before every later rollout meets the same problem: a full disk at once, an endpoint's in a row."""
        if record.failure_kind == DISK_KIND:
            self.stop(record.failure_reason.removeprefix("infra[disk]: ").split("; the rollout")[0])
        why = self._endpoint.why_stop(record)
        if why is not None:
            self.stop(why)

    def stop(self, why: str) -> None:
        """Take no more rollouts; those waiting for a slot end as not started (no record); in flight ones finish."""
        if self.stopped is None:
            self.stopped = why
