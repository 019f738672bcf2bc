"""The rollout engine against the naive ways of collecting the same rollouts (WebGym measured its asynchronous
system at 4-5x the synchronous one): the offline tasks x group 2, one model stand-in, three modes side by side.

- sequential: one slot, one rollout after another (on a fixed subset; compared as steps per second, since the
  subset's episodes are not as long as the whole suite's);
- synchronous: 8 slots stepping together: each step waits for all 8 model replies, and a new wave of 8 rollouts
  starts when the last one of the wave has ended;
- asynchronous: 8 slots, the engine.

The model stand-in is the real OpenAI policy (adapter, conversation, HTTP client) calling the scripted endpoint,
which answers each turn after a latency drawn from a log-normal distribution (median LATENCY_MEDIAN_S, sigma
LATENCY_SIGMA, drawn from a seed made of the rollout's seed and the step, so every mode meets the same latency at the
same turn); the turn then acts out the task's own solution, so each episode takes the task's own number of steps.

Figures: rollouts_async_over_sync (>= 4.0; the details give the ratio the same replies allow with a harness that cost
nothing, ideal_without_harness_cost), rollouts_async_over_sequential (>= 6.8, 85% of 8),
rollout_slot_idle_fraction (<= 0.10: the slots' time not holding a rollout, over the asynchronous run),
rollout_pss_gb_per_slot (<= 0.4: the proportional set size of this process and everything it started, over the
slots, highest sample), and the steps per second of each mode in the details.

The lockstep way waits at each step for the slowest of the wave's replies, so what the engine gains over it grows
with the slots: the goals are for 8 (what two cores carry); `--slots 16` measures the same workload on 16.

    .venv/bin/python -m bench.rollouts [--tasks N] [--sequential N] [--slots N] [--json]
"""

from __future__ import annotations

import asyncio
import heapq
import os
import random
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from bench.common import Figure, cli, loadavg, pss_kb, run_processes
from fixtures.openai_stub import OpenAIStub, Reply
from webeval.benchmarks.local import local_population
from webeval.benchmarks.local.offline_sites import OfflineSites
from webeval.benchmarks.local.site_server import SiteServer
from webeval.judges.verifier import verifier_judge
from webeval.policy.openai import Profile
from webeval.policy.oracle import oracle
from webeval.rollouts import EngineSettings, RolloutEngine, RolloutRequest, collect
from webeval.rollouts.model_policies import ModelPolicies

SLOTS = 8
GROUP = 2
# A vision model's turn on a shared vLLM server (a screenshot in, a short tool call out): 1.5 s at the median, and a
# heavy tail from batching and long replies: one reply in ten takes over 5.4 s, one in a hundred over 15 s.
LATENCY_MEDIAN_S = 1.5
LATENCY_SIGMA = 1.0


def latency(seed: int, step: int) -> float:
    return random.Random(seed * 1000 + step).lognormvariate(0, LATENCY_SIGMA) * LATENCY_MEDIAN_S


def stand_in_script(request: dict) -> Reply:
    step = sum(message["role"] == "assistant" for message in request["messages"]) + 1
    return Reply(content="acting", delay_s=latency(request.get("seed", 0), step))


class StandIn:
    """The real model call (its latency), then the oracle's action for the turn."""

    def __init__(self, model, acting, barrier: "Lockstep | None") -> None:
        self.model_policy, self.acting, self.barrier = model, acting, barrier
        self.name, self.model = model.name, model.model

    async def begin(self, task) -> None:
        await self.model_policy.begin(task)
        await self.acting.begin(task)

    async def end(self) -> None:
        if self.barrier is not None:
            self.barrier.leave()
        await self.model_policy.end()
        await self.acting.end()

    async def act(self, observation):
        reply = await self.model_policy.act(observation)
        if self.barrier is not None:
            await self.barrier.wait()
        turn = await self.acting.act(observation)
        return replace(turn, usage=reply.usage, latency_s=reply.latency_s, tokens=reply.tokens)


class Lockstep:
    """The synchronous way: a step ends when every episode of the wave still running has its reply."""

    def __init__(self, parties: int) -> None:
        self.parties, self.arrived, self.round = parties, 0, asyncio.Event()

    async def wait(self) -> None:
        self.arrived += 1
        if self.arrived >= self.parties:
            self._release()
        else:
            await self.round.wait()

    def leave(self) -> None:
        self.parties -= 1
        if self.parties and self.arrived >= self.parties:
            self._release()

    def _release(self) -> None:
        released, self.round = self.round, asyncio.Event()
        self.arrived = 0
        released.set()


class LocalTasks:
    def __init__(self, server: SiteServer) -> None:
        _, tasks = local_population()
        self.by_id = {task.id: task for task in tasks}
        self.environment, self.judge = OfflineSites(server), verifier_judge

    def task(self, task_id: str):
        return self.by_id[task_id]


def ideal_walls(requests: list[RolloutRequest], steps: dict[tuple[str, int], int],
                slots: int = SLOTS) -> dict[str, float]:
    """The wall time of each mode if the harness cost nothing: each step takes exactly its model reply's latency (the
    same draws the stand-in makes), the episodes their measured number of steps. Their ratio is the most any engine
    can gain over the lockstep way on this workload."""
    steps_of = {(r.task_id, r.sample_index): (r.seed, steps[(r.task_id, r.sample_index)]) for r in requests}
    replies = {key: [latency(seed, step) for step in range(1, count + 1)] for key, (seed, count) in steps_of.items()}
    free = [0.0] * slots
    for key in replies:  # the engine: a free slot takes the next rollout
        heapq.heappush(free, heapq.heappop(free) + sum(replies[key]))
    lockstep = 0.0
    keys = list(replies)
    for wave in (keys[i:i + slots] for i in range(0, len(keys), slots)):
        for step in range(max(len(replies[key]) for key in wave)):
            lockstep += max(replies[key][step] for key in wave if step < len(replies[key]))
    return {"async_s": round(max(free), 1), "sync_s": round(lockstep, 1),
            "async_over_sync": round(lockstep / max(free), 2)}


def requests_for(task_ids: list[str]) -> list[RolloutRequest]:
    return [RolloutRequest(task_id=task_id, group_id=task_id, sample_index=index, seed=hash_seed(task_id, index))
            for task_id in task_ids for index in range(GROUP)]


def hash_seed(task_id: str, index: int) -> int:
    return sum(ord(ch) * 31 ** i for i, ch in enumerate(task_id)) % 100_000 * 10 + index


def stand_in_policies(profile: Profile, waves: dict) -> callable:
    models = ModelPolicies(profile, (1280, 720), token_ids=False, history="windowed")

    def policy_for(request: RolloutRequest):
        make_model = models(request)

        def make(session, prepared):
            return StandIn(make_model(session, prepared), oracle(session, prepared), waves.get("barrier"))

        return make

    return policy_for


class PssSampler:
    def __init__(self) -> None:
        self.highest_kb = 0
        self._task: asyncio.Task | None = None

    async def _sample(self) -> None:
        while True:
            pids = [os.getpid(), *run_processes(os.getpid())]
            total = sum(await asyncio.to_thread(lambda: [pss_kb(pid) for pid in pids]))
            self.highest_kb = max(self.highest_kb, total)
            await asyncio.sleep(10)

    def __enter__(self) -> "PssSampler":
        self._task = asyncio.ensure_future(self._sample())
        return self

    def __exit__(self, *exc) -> None:
        self._task.cancel()


async def run_mode(mode: str, tasks: LocalTasks, profile: Profile, task_ids: list[str], folder: Path,
                   slots: int) -> dict:
    slots = 1 if mode == "sequential" else slots
    waves: dict = {}
    requests = requests_for(task_ids)
    async with RolloutEngine(tasks, folder / mode, stand_in_policies(profile, waves),
                             EngineSettings(slots=slots)) as engine:
        with PssSampler() as memory:
            began = time.monotonic()
            records = []
            batches = [requests[i:i + slots] for i in range(0, len(requests), slots)] if mode == "sync" else [requests]
            for wave in batches:
                if mode == "sync":
                    waves["barrier"] = Lockstep(len(wave))
                records += (await collect(engine, wave)).records
            wall = time.monotonic() - began
        busy = sum(engine.pool.busy_s.values())
    scored = [r for r in records if not r.mask_sample]
    steps = sum(r.steps for r in records)
    return {"mode": mode, "slots": slots, "rollouts": len(records), "scored": len(scored), "wall_s": round(wall, 1),
            "steps": {(r.task_id, r.sample_index): r.steps for r in records},
            "rollouts_per_s": round(len(records) / wall, 4), "steps_per_s": round(steps / wall, 3),
            "idle_fraction": round(1 - busy / (slots * wall), 3), "pss_gb": round(memory.highest_kb / 2**20, 3),
            "masked": sorted({r.failure_kind for r in records if r.mask_sample})}


async def measure_all(tasks: int, sequential: int, slots: int) -> list[Figure]:
    load = loadavg()
    with SiteServer() as server, OpenAIStub(stand_in_script) as stub, tempfile.TemporaryDirectory() as scratch:
        local = LocalTasks(server)
        task_ids = list(local.by_id)[:tasks]
        profile = Profile(base_url=stub.base_url, model="stub-model", timeout_s=60, retries=0)
        runs = {}
        for mode, ids in (("sequential", task_ids[:sequential]), ("sync", task_ids), ("async", task_ids)):
            runs[mode] = await run_mode(mode, local, profile, ids, Path(scratch), slots)
    sync, seq, fast = runs["sync"], runs["sequential"], runs["async"]
    complete = all(run["scored"] == run["rollouts"] for run in runs.values())
    ideal = ideal_walls(requests_for(task_ids), fast["steps"], slots) if complete else None
    for run in runs.values():
        del run["steps"]
    details = {"runs": runs, "ideal_without_harness_cost": ideal,
               "latency": {"median_s": LATENCY_MEDIAN_S, "sigma": LATENCY_SIGMA}, "group": GROUP, "slots": slots,
               "load_before": load, "load_after": loadavg(), "complete": complete,
               "sequential_subset": f"{sequential} of {tasks} tasks, compared as steps per second"}
    ratio = lambda a, b: round(a["rollouts_per_s"] / b["rollouts_per_s"], 2) if complete else None  # noqa: E731
    return [
        Figure("rollouts_async_over_sync", ratio(fast, sync), 4.0, "x", ">=", details),
        # The sequential subset's episodes are shorter than the whole suite's: throughput is compared in steps.
        Figure("rollouts_async_over_sequential", round(fast["steps_per_s"] / seq["steps_per_s"], 2)
               if complete else None, 6.8, "x", ">=", {"ideal": slots, "in_rollouts_per_s": ratio(fast, seq)}),
        Figure("rollout_slot_idle_fraction", fast["idle_fraction"], 0.10, "", "<=", {}),
        Figure("rollout_pss_gb_per_slot", round(fast["pss_gb"] / slots, 3), 0.4, "GB", "<=",
               {"highest_pss_gb": fast["pss_gb"], "steps_per_s": {m: r["steps_per_s"] for m, r in runs.items()}}),
    ]


def measure(tasks: int = 45, sequential: int = 8, slots: int = SLOTS) -> list[Figure]:
    return asyncio.run(measure_all(tasks, sequential, slots))


def options(parser) -> None:
    parser.add_argument("--tasks", type=int, default=45, help="offline tasks, each rolled out twice (default 45)")
    parser.add_argument("--sequential", type=int, default=8, help="tasks of the sequential mode (default 8)")
    parser.add_argument("--slots", type=int, default=SLOTS,
                        help=f"slots of the synchronous and asynchronous modes (default {SLOTS}, the goals' own)")


def main() -> None:
    cli(__doc__, measure, options)


if __name__ == "__main__":
    main()
