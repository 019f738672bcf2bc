"""One node's share of a collection on Ray: a RolloutEngine over that node's slots, the benchmark opened there.

The actor starts its own Xvfb displays and Chromium browsers, serves the benchmark's sites and runs its judge on its
node, and writes every screenshot and attempt folder under its own folder on that node. What it hands back through
Ray is the record alone: image references (path under `node_root` on `node`, sha256), never pixels.
"""

from __future__ import annotations

import asyncio
import os
from contextlib import AsyncExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, AsyncContextManager, Callable

import psutil

from webeval.outcomes.redact import redact
from webeval.policy.choice import PolicyChoice
from webeval.rollouts.engine import (EngineSettings, EngineStopped, PolicyFor, RolloutEngine, TaskSource,
                                     mark_cancelled)
from webeval.rollouts.model_policies import ModelPolicies
from webeval.rollouts.requests import RequestError, parse_request

# How the benchmark is opened on a node: a picklable callable (a function importable there, or a functools.partial
# of one) returning an async context manager that yields the engine's task source, its sites and judges started.
BenchmarkOpener = Callable[[], AsyncContextManager[TaskSource]]
# How each node makes its policies: called on the node, so API keys are read from the node's own environment and
# never travel through Ray.
PoliciesFactory = Callable[[], PolicyFor]

RECORD, NOT_STARTED, STOPPED, REJECTED = "record", "not_started", "stopped", "rejected"  # what run() answers
TRAJECTORY = "trajectory"  # beside the record when asked: its attempt's trajectory.jsonl, as text


@dataclass(frozen=True)
class ChosenPolicies:
    """The policies the policy options chose, made on each node: a model endpoint through the engine's model
    policies (token ids, each request's sampling and seed, the key from the node's own environment), or else the
    choice's own factory (the oracle, recorded replies) for every request."""

    choice: PolicyChoice
    screen: tuple[int, int] = (1280, 720)
    token_ids: bool = True
    history: str = "append-only"

    def __call__(self) -> PolicyFor:
        choice = self.choice
        if choice.name == "openai" and choice.profile is not None:
            return ModelPolicies(choice.profile, self.screen, token_ids=self.token_ids, history=self.history,
                                 record=choice.record)
        factory = choice.factory(self.screen)
        return lambda request: factory


class NodeRollouts:
    """A Ray actor (made remote by the pool, one `browser` resource unit per slot): rollouts on this node's slots."""

    def __init__(self, name: str, folder: str, opener: BenchmarkOpener, policies: PoliciesFactory,
                 settings: EngineSettings) -> None:
        self.name, self.folder = name, Path(folder)
        self.opener, self.policies, self.settings = opener, policies, settings
        self.engine: RolloutEngine | None = None
        self._stack = AsyncExitStack()
        self._running: dict[str, asyncio.Task] = {}

    async def start(self) -> dict[str, Any]:
        """Open the benchmark and start every slot here; what the router needs to know of this actor, or (a
        benchmark or a slot that cannot start here) why not, in one line."""
        import ray  # only in a process that Ray started

        node = ray.get_runtime_context().get_node_id()
        try:
            tasks = await self._stack.enter_async_context(self.opener())
        except Exception as exc:
            await self._stack.aclose()
            said = str(exc).strip().splitlines()
            return {STOPPED: redact(f"the benchmark cannot open here: {said[0] if said else type(exc).__name__}")}
        engine = RolloutEngine(tasks, self.folder, self.policies(), replace(self.settings, node=node))
        try:
            await engine.start()  # nothing is left running when a slot cannot start
        except EngineStopped as exc:
            await self._stack.aclose()
            return {STOPPED: str(exc)}
        self._stack.push_async_callback(engine.close)
        self.engine = engine
        return {"name": self.name, "node": node, "address": ray.util.get_node_ip_address(), "pid": os.getpid(),
                "slots": len(engine.slots), "folder": str(self.folder.resolve())}

    async def run(self, request: dict[str, Any], trajectory: bool = False) -> dict[str, Any]:
        """One rollout on this node to its record (a JSON-ready dict), or why it did not run; with `trajectory`,
        its attempt's trajectory.jsonl beside it (text: the model's replies and token ids, screenshots by path)."""
        engine = self._engine()
        try:
            parsed = parse_request(request)
            task = self._running[parsed.id] = asyncio.ensure_future(engine.run(parsed))
        except RequestError as exc:
            return {REJECTED: str(exc)}
        try:
            record = await task
        except asyncio.CancelledError:
            return {NOT_STARTED: "cancelled before it took a slot"}
        except RequestError as exc:
            return {REJECTED: str(exc)}
        except EngineStopped as exc:
            return {STOPPED: str(exc)}
        finally:
            self._running.pop(parsed.id, None)
        record = record.model_copy(update={"slot": f"{self.name}/{record.slot}" if record.slot else None,
                                           "node_root": str(self.folder.resolve())})
        answer = {RECORD: record.model_dump(mode="json")}
        if trajectory:
            answer[TRAJECTORY] = await asyncio.to_thread(self._trajectory, record.attempt_path)
        return answer

    def _trajectory(self, attempt_path: str | None) -> str:
        path = self.folder / attempt_path / "trajectory.jsonl" if attempt_path else None
        return path.read_text(encoding="utf-8") if path is not None and path.is_file() else ""

    async def cancel(self, rollout_id: str, why: str) -> bool:
        """End a rollout in flight here as `why` (cut or interrupted): its run() answers with that record."""
        engine, task = self._engine(), self._running.get(rollout_id)
        flight = engine.flights.get(rollout_id)
        if flight is not None:
            mark_cancelled(flight, why)
        if task is None:
            return False
        task.cancel()
        return True

    async def stop(self, why: str) -> None:
        """Take no more rollouts here (the collection stopped); those in flight end as they would."""
        self._engine().stop(why)

    async def set_policy_version(self, version: str) -> None:
        self._engine().set_policy_version(version)

    async def stats(self) -> dict[str, Any]:
        engine = self._engine()
        stats = engine.stats
        return {"name": self.name, "in_flight": stats.in_flight, "free_slots": engine.free_slots(),
                "outcomes": dict(stats.outcomes), "steps": stats.steps, "busy_s": dict(engine.pool.busy_s),
                "idle_fraction": engine.pool.idle_fraction()}

    async def processes(self) -> dict[str, Any]:
        """This actor's process and the processes its slots run (Xvfb, Chromium), by id."""
        children = psutil.Process().children(recursive=True)
        return {"pid": os.getpid(), "children": [child.pid for child in children]}

    async def close(self) -> None:
        await self._stack.aclose()

    def _engine(self) -> RolloutEngine:
        if self.engine is None:
            raise EngineStopped(f"the Ray actor {self.name} was not started")
        return self.engine
