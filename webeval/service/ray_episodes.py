"""`webeval serve --ray ADDRESS`: the service's whole episodes (`POST /run`) run on the node actors of a Ray cluster,
through the router of webeval.rollouts.ray (docs/training.md, "The service on Ray").

The service's process starts no display and no browser and opens no site: each node's actor opens the benchmark
there and runs its slots. The head keeps the population (a task id outside it is a 404 before anything is sent), the
router and rollouts.jsonl. Each record comes back from its node with its trajectory's text (the model's replies and
token ids, screenshots by path, never pixels): what /run's response items are made of. An actor lost with a /run in
flight masks it `node_lost`, resubmitted once on an actor still alive when asked, as in a collection.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from webeval.benchmarks import BenchmarkSetup
from webeval.rollouts import RolloutRecord, RolloutRequest
from webeval.rollouts.engine import EngineSettings, EngineStats, Flight
from webeval.rollouts.ray import BenchmarkOpener, PoliciesFactory, RayRollouts, RayRouter, known_tasks
from webeval.service.response_items import trajectory_steps
from webeval.tasks import Task
from webeval.tasks.taskset import TaskSet, TaskSubset


class PopulationTasks:
    """The head's tasks: the population's, looked up by id (KeyError for any other); nothing is opened here, the
    actors open the benchmark on their nodes."""

    def __init__(self, setup: BenchmarkSetup) -> None:
        self.name, self.tasks = setup.name, setup.tasks
        self.ids = frozenset(setup.population.ids)
        self._by_id: dict[str, Task] = {}

    def task(self, task_id: str) -> Task:
        if task_id not in self.ids:
            raise KeyError(f"task {task_id!r} is not in benchmark {self.name}")
        if isinstance(self.tasks, (TaskSet, TaskSubset)):  # read from its line, never all of them
            return self.tasks.get(task_id)
        if not self._by_id:
            self._by_id = {task.id: task for task in self.tasks}
        return self._by_id[task_id]


@dataclass
class ActorTime:
    busy_s: dict[str, float] = field(default_factory=dict)  # actor -> seconds its slots held rollouts


class RayEpisodes:
    """What the rollout service asks of its engine (start, close, run, slots, free_slots, flights, stopped, stats,
    pool), answered by a router over actors on the cluster this process has joined (cluster.connect). Its slots are
    those of the actors still alive: an actor lost takes its slots with it."""

    def __init__(self, address: str, out: Path, opener: BenchmarkOpener, policies: PoliciesFactory,
                 settings: EngineSettings, tasks: PopulationTasks, *, resubmit_lost: bool = False) -> None:
        self.address = address
        self.rollouts = RayRollouts(out, opener, policies, settings, resubmit_lost=resubmit_lost,
                                    check=known_tasks(tasks.ids), trajectories=True)
        self.router: RayRouter | None = None
        self.pool = ActorTime()

    @property
    def where(self) -> str:
        return f"the Ray cluster at {self.address}"

    async def start(self) -> None:
        """The actors placed and started (EngineStopped, one line, when they cannot be)."""
        self.router = await self.rollouts.__aenter__()

    async def close(self) -> None:
        """The actors closed and ended (their slots' processes with them)."""
        if self.router is not None:
            await self.rollouts.__aexit__(None, None, None)

    @property
    def slots(self) -> list[str]:
        members = self.router.members if self.router is not None else []
        return [f"{member.name}/slot-{index}" for member in list(members) if member.lost is None
                for index in range(member.slots)]

    def free_slots(self) -> int:
        return self.router.free_slots() if self.router is not None else 0

    @property
    def flights(self) -> dict[str, Flight]:
        return self.router.flights if self.router is not None else {}

    @property
    def stopped(self) -> str | None:
        return self.router.stopped if self.router is not None else None

    @property
    def stats(self) -> EngineStats:
        return self.router.stats if self.router is not None else EngineStats()

    async def run(self, request: RolloutRequest) -> RolloutRecord:
        if self.router is None:
            raise RuntimeError("RayEpisodes.run before start")
        record = await self.router.run(request)
        if record.slot and "slot_s" in record.timings:
            actor = record.slot.split("/", 1)[0]
            self.pool.busy_s[actor] = self.pool.busy_s.get(actor, 0.0) + record.timings["slot_s"]
        return record

    def take_steps(self, rollout_id: str) -> list[dict[str, Any]]:
        """The steps of the rollout's trajectory, as its node sent them with its record (none when it has none);
        taken once."""
        text = self.router.take_trajectory(rollout_id) if self.router is not None else None
        return trajectory_steps(text or "")
