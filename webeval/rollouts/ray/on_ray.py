"""A collection's actors placed on a Ray cluster, and a batch collected through them (docs/training.md, "Across
nodes with Ray").

Each actor owns slots on one node and asks the cluster for one unit of the `browser` resource per slot, pinned to
that node, with no CPU reserved (the slots' own processes use the node's cores; Ray's scheduler need not count them).
Its collection folder is `<out>/nodes/<actor>` on its node: the same path on every node, so on one machine every
actor's screenshots lie under the head's folder.
"""

from __future__ import annotations

import asyncio
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Collection, Iterable

import ray
from ray.exceptions import RayActorError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from webeval.agent.evaluate import WATCHDOG_MARGIN_S
from webeval.rollouts.batch import Batch, collect
from webeval.rollouts.engine import EngineSettings, EngineStopped
from webeval.rollouts.ray.cluster import BROWSER, CONNECT_TIMEOUT_S, actors_for, browser_nodes, connect
from webeval.rollouts.ray.node_actor import STOPPED, BenchmarkOpener, NodeRollouts, PoliciesFactory
from webeval.rollouts.ray.router import ANSWER_MARGIN_S, Member, RayRouter, kill
from webeval.rollouts.records import RolloutRecord
from webeval.rollouts.requests import RequestError, RolloutRequest, parse_request
from webeval.rollouts.store import RolloutStore

START_TIMEOUT_S = 300.0  # every actor placed and its slots started (two Chromium launches at a time per node)
CLOSE_TIMEOUT_S = 60.0


class RayRollouts:
    """`async with RayRollouts(out, opener, policies) as router:` the actors placed and started on the cluster this
    process has joined (cluster.connect), the router over them; the actors are closed and ended after the block."""

    def __init__(self, out: Path, opener: BenchmarkOpener, policies: PoliciesFactory,
                 settings: EngineSettings = EngineSettings(), *, slots_per_actor: int | None = None,
                 resubmit_lost: bool = False, check: Callable[[RolloutRequest], object] | None = None,
                 start_timeout_s: float = START_TIMEOUT_S, answer_timeout_s: float | None = None,
                 trajectories: bool = False) -> None:
        self.out = Path(out).resolve()
        self.opener, self.policies, self.settings = opener, policies, settings
        self.slots_per_actor, self.resubmit_lost, self.check = slots_per_actor, resubmit_lost, check
        self.start_timeout_s, self.trajectories = start_timeout_s, trajectories
        # a rollout's record back from its actor: the episode's own bound on the actor, then the verdict's margin
        self.answer_timeout_s = answer_timeout_s or (settings.budgets.task_timeout_s + WATCHDOG_MARGIN_S
                                                     + ANSWER_MARGIN_S)
        self.members: list[Member] = []

    async def __aenter__(self) -> RayRouter:
        handles = self._place()
        try:
            self.members = await self._start(handles)
        except BaseException:
            for handle in handles.values():
                ray.kill(handle, no_restart=True)
            raise
        return RayRouter(self.members, self.out, answer_timeout_s=self.answer_timeout_s, check=self.check,
                         resubmit_lost=self.resubmit_lost, stop_after=self.settings.stop_after,
                         history=self.settings.history, trajectories=self.trajectories)

    async def __aexit__(self, *exc_info: object) -> None:
        alive = [member for member in self.members if member.lost is None]
        closing = [asyncio.wrap_future(member.handle.close.remote().future()) for member in alive]
        if closing:
            await asyncio.wait(closing, timeout=CLOSE_TIMEOUT_S)
        for member in self.members:
            kill(member)

    def _place(self) -> dict[str, Any]:
        """One actor per node (or per `slots_per_actor` slots of a node), pinned there, not yet started."""
        nodes = browser_nodes()
        if not nodes:
            raise EngineStopped(f"no node of the Ray cluster offers the `{BROWSER}` resource: start each node with "
                                f"`ray start ... --resources '{{\"{BROWSER}\": N}}'` (N slots)")
        remote = ray.remote(NodeRollouts)
        handles: dict[str, Any] = {}
        on_node: dict[str, int] = {}
        for node, slots in actors_for(nodes, self.slots_per_actor):
            index = on_node[node.node_id] = on_node.get(node.node_id, -1) + 1
            name = f"node-{node.node_id[:8]}-{index}"
            handles[name] = remote.options(
                num_cpus=0, resources={BROWSER: slots}, max_restarts=0, max_task_retries=0,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node.node_id, soft=False),
            ).remote(name, str(self.out / "nodes" / name), self.opener, self.policies,
                     replace(self.settings, slots=slots))
        return handles

    async def _start(self, handles: dict[str, Any]) -> list[Member]:
        starting = {name: asyncio.wrap_future(handle.start.remote().future()) for name, handle in handles.items()}
        done, pending = await asyncio.wait(starting.values(), timeout=self.start_timeout_s)
        if pending:
            raise EngineStopped(f"{len(pending)} of {len(handles)} Ray actors did not start within "
                                f"{self.start_timeout_s:g} s: is the `{BROWSER}` resource held by another "
                                "collection? (`ray status` shows it)")
        members, died = [], []
        for name, started in starting.items():
            try:
                info = started.result()
            except RayActorError as exc:  # its node died (or was dying as it was placed): the others go on
                said = str(exc).strip().splitlines()
                died.append(f"the Ray actor {name} died as it started: {said[0] if said else type(exc).__name__}")
                continue
            if STOPPED in info:
                raise EngineStopped(f"the Ray actor {name} cannot start: {info[STOPPED]}")
            members.append(Member(name, handles[name], info["node"], info["address"], info["slots"], info["folder"],
                                  info["pid"]))
        if not members:
            raise EngineStopped(f"no Ray actor started ({'; '.join(died)})")
        for why in died:
            warnings.warn(f"{why}; collecting on the {len(members)} others", stacklevel=2)
        return members


def known_tasks(task_ids: Collection[str]) -> Callable[[RolloutRequest], None]:
    """A head-side check that refuses, before it is sent, a request for a task the actors' benchmark lacks."""
    def check(request: RolloutRequest) -> None:
        if request.task_id not in task_ids:
            raise RequestError(f"task_id: {request.task_id!r} is not a task of this benchmark")

    return check


async def collect_on_ray(address: str, out: Path, opener: BenchmarkOpener, policies: PoliciesFactory,
                         requests: Iterable[RolloutRequest | dict], *, settings: EngineSettings = EngineSettings(),
                         task_ids: Collection[str] | None = None, slots_per_actor: int | None = None,
                         resubmit_lost: bool = False, completion_threshold: float | None = None, grace_s: float = 0.0,
                         on_record: Callable[[RolloutRecord], None] | None = None,
                         interrupted: asyncio.Event | None = None,
                         connect_timeout_s: float | None = None) -> Batch:
    """`webeval rollouts collect --ray ADDRESS`: join the cluster (RayUnreachable, one line, within the bound), place
    the actors, collect the requests that have no record in `out`/rollouts.jsonl yet (resumable like the in-process
    collection: no rollout twice), and end the actors. EngineStopped (one line) when the actors cannot start.
    The connect bound is `connect_timeout_s` (default CONNECT_TIMEOUT_S)."""
    connect(address, connect_timeout_s or CONNECT_TIMEOUT_S)
    requests = list(requests)
    done = RolloutStore(out).done()
    kept = [index for index, data in enumerate(requests) if _rollout_id(data) not in done]
    check = known_tasks(task_ids) if task_ids is not None else None
    async with RayRollouts(out, opener, policies, settings, slots_per_actor=slots_per_actor,
                           resubmit_lost=resubmit_lost, check=check) as router:
        batch = await collect(router, [requests[index] for index in kept], completion_threshold=completion_threshold,
                              grace_s=grace_s, on_record=on_record, interrupted=interrupted)
    batch.rejected = [(kept[index], error) for index, error in batch.rejected]
    return batch


def _rollout_id(data: RolloutRequest | dict) -> str | None:
    try:
        return parse_request(data).id
    except RequestError:
        return None
