"""Rollouts across a real Ray cluster on this machine: a head (`ray start --head` on 127.0.0.1) and a second node
joined to it, two `browser` units each, so one actor of two slots on each node, each serving the offline sites itself.
An actor killed with SIGKILL in the middle of a batch, a node that dies (its raylet killed), stragglers cut, an
interrupted collection resumed, an endpoint that is down, and addresses where no Ray head answers."""

from __future__ import annotations

import asyncio
import hashlib
import http.server
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path

import pytest
import ray

from fixtures.openai_stub import OpenAIStub, Reply, call
from tests.ray_head import RayCluster, gone_within
from webeval.benchmarks import benchmark_setup, open_benchmark
from webeval.cli import CommandError
from webeval.cli.ray_collection import collect_suite_on_ray
from webeval.policy.choice import PolicyChoice
from webeval.policy.oracle import oracle
from webeval.policy.openai import Profile
from webeval.rollouts import EngineSettings, EngineStopped, RolloutRequest, RolloutStore, collect
from webeval.rollouts.model_policies import ModelPolicies
from webeval.rollouts.ray import LOST_ATTEMPTS, RayRollouts, collect_on_ray, connect, known_tasks

pytestmark = pytest.mark.xdist_group("ray")
ROOT = Path(__file__).resolve().parents[1]
TASKS = {task.id: task for task in benchmark_setup("local").tasks}
SHORT = [task.id for task in TASKS.values() if 2 <= len(task.solution or ()) <= 5]
# How each actor opens the offline benchmark on its node (its sites served there, judged there by their verifiers):
# what `--suite local` hands the actors.
offline_benchmark = partial(open_benchmark, "local")


@asynccontextmanager
async def stalling_on(node_id: str, marker: str):
    """The offline benchmark, except that on one node opening it stalls (after saying so in a file)."""
    if ray.get_runtime_context().get_node_id() == node_id:
        Path(marker).write_text("opening")
        await asyncio.sleep(300)
    async with offline_benchmark() as tasks:
        yield tasks


@asynccontextmanager
async def unopenable():
    raise OSError("the task file /data/tasks.jsonl is not on this node")
    yield


def oracle_for(request):
    return oracle


def oracle_policies():
    return oracle_for


class Stalling:
    """The oracle, except that one rollout stalls for a long while at its second turn: a straggler."""

    def __init__(self, policy, seconds: float) -> None:
        self.policy, self.seconds = policy, seconds
        self.name, self.model = policy.name, None

    async def begin(self, task) -> None:
        await self.policy.begin(task)

    async def end(self) -> None:
        await self.policy.end()

    async def act(self, observation):
        if observation.step == 2:
            await asyncio.sleep(self.seconds)
        return await self.policy.act(observation)


def stalling_for(rollout_id: str, request):
    if request.id == rollout_id:
        return lambda session, prepared: Stalling(oracle(session, prepared), 300)
    return oracle


def stalling_policies(rollout_id: str):
    return partial(stalling_for, rollout_id)


def requests_for(task_ids: list[str], group: int) -> list[RolloutRequest]:
    return [RolloutRequest(task_id=task_id, group_id=task_id, sample_index=index, seed=100 + index)
            for task_id in task_ids for index in range(group)]


@pytest.fixture(scope="module")
def cluster():
    nodes = RayCluster()
    try:
        nodes.start_head(browsers=2)
        nodes.add_node(browsers=2)
        connect(nodes.address)
        yield nodes
    finally:
        ray.shutdown()
        nodes.stop()


def pool(out: Path, policies=oracle_policies, **options) -> RayRollouts:
    """One actor per node, owning the node's two browsers."""
    return RayRollouts(out, offline_benchmark, policies, EngineSettings(), check=known_tasks(TASKS), **options)


async def known_dead(node_id: str) -> None:
    while any(node["NodeID"] == node_id and node["Alive"] for node in ray.nodes()):
        await asyncio.sleep(0.5)


def killer(router, victim, after: int, killed: dict):
    """on_record: SIGKILL the victim actor's process once `after` records are in and it has rollouts in flight."""
    seen = []

    def on_record(record) -> None:
        seen.append(record.rollout_id)
        if not killed and len(seen) >= after and victim.in_flight > 0:
            killed["in_flight"] = {f.request.id for f in router.flights.values() if f.slot == victim.name}
            os.kill(victim.pid, signal.SIGKILL)

    return on_record


async def test_forty_rollouts_on_two_actors_one_killed_midway_resubmitted_once_on_the_survivor(cluster, tmp_path):
    requests = requests_for(SHORT[:10], group=4)
    killed: dict = {}
    async with pool(tmp_path, resubmit_lost=True) as router:
        assert sorted(member.slots for member in router.members) == [2, 2]
        victim, survivor = router.members
        slot_processes = (await victim.handle.processes.remote())["children"]
        assert slot_processes  # its own Xvfb and Chromium
        batch = await asyncio.wait_for(collect(router, requests, on_record=killer(router, victim, 8, killed)), 900)
    assert killed and not batch.rejected and not batch.not_started and batch.stopped is None
    final = RolloutStore(tmp_path).records()
    assert sorted(r.rollout_id for r in final) == sorted(r.id for r in requests)  # one record per rollout id
    assert all((r.reward, r.mask_sample) == (1.0, False) for r in final), [r.failure_reason for r in final]
    lost = RolloutStore(tmp_path, LOST_ATTEMPTS).records()
    assert lost and {r.rollout_id for r in lost} & killed["in_flight"]
    for attempt in lost:  # in flight on the victim when it died (sent to it before its death was known, too)
        assert (attempt.mask_sample, attempt.reward, attempt.failure_kind) == (True, None, "node_lost"), attempt
        assert attempt.slot == victim.name and attempt.node == victim.node and victim.name in attempt.failure_reason
    resubmitted = {r.rollout_id: r for r in final if r.rollout_id in {a.rollout_id for a in lost}}
    assert all(r.slot.startswith(survivor.name + "/") for r in resubmitted.values())
    assert router.stats.resubmitted == len(lost) and victim.lost and survivor.lost is None
    assert gone_within(slot_processes + [victim.pid], 15) == []  # its Xvfb and Chromium died with it
    for record in final[:5]:  # screenshots stay on the node that took them: path under node_root, and sha256
        for turn in record.turns:
            shot = Path(record.node_root) / turn.image_refs[0].path
            assert hashlib.sha256(shot.read_bytes()).hexdigest() == turn.image_refs[0].sha256
    assert "base64" not in (tmp_path / "rollouts.jsonl").read_text()


async def test_an_actor_that_stops_answering_is_ended_and_its_rollouts_resubmitted(cluster, tmp_path):
    requests = requests_for(SHORT[:4], group=2)
    stopped: dict = {}
    async with pool(tmp_path, resubmit_lost=True, answer_timeout_s=20) as router:
        victim, survivor = router.members

        def freeze(record) -> None:  # SIGSTOP: the actor's process alive, answering nothing
            if not stopped and victim.in_flight > 0:
                stopped["in_flight"] = {f.request.id for f in router.flights.values() if f.slot == victim.name}
                os.kill(victim.pid, signal.SIGSTOP)

        batch = await asyncio.wait_for(collect(router, requests, on_record=freeze), 600)
    final = RolloutStore(tmp_path).records()
    assert stopped and sorted(r.rollout_id for r in final) == sorted(r.id for r in requests)
    assert all((r.reward, r.mask_sample) == (1.0, False) for r in final) and len(batch.records) == len(requests)
    lost = RolloutStore(tmp_path, LOST_ATTEMPTS).records()
    # in flight there as it stopped (a record already on its way back is not), or sent to it before it was known hung
    assert lost and all(r.failure_kind == "node_lost" and r.slot == victim.name and "no answer within 20 s" in r.failure_reason
               for r in lost)
    assert gone_within([victim.pid], 30) == []  # ended, not left stopped


async def test_a_node_that_dies_masks_its_rollouts_node_lost_and_without_resubmission_they_stay_so(cluster, tmp_path):
    requests = requests_for(SHORT[:4], group=2)
    killed: dict = {}
    try:
        async with pool(tmp_path) as router:
            # not the node this driver joined through: that one's death would end the driver too
            victim = next(member for member in router.members if member.node != ray.get_runtime_context().get_node_id())
            slot_processes = (await victim.handle.processes.remote())["children"]

            def node_dies(record) -> None:
                if not killed and victim.in_flight > 0:
                    killed["in_flight"] = {f.request.id for f in router.flights.values() if f.slot == victim.name}
                    cluster.kill_node(victim.node)

            batch = await asyncio.wait_for(collect(router, requests, on_record=node_dies), 600)
    finally:  # the cluster as the other tests expect it: the dead node known dead, a new one in its place
        await asyncio.wait_for(known_dead(victim.node), 120)
        cluster.add_node(browsers=2)
    records = {r.rollout_id: r for r in RolloutStore(tmp_path).records()}
    assert killed and sorted(records) == sorted(r.id for r in requests) and len(batch.records) == len(requests)
    lost = [r for r in records.values() if r.failure_kind == "node_lost"]
    # those in flight there, and any sent to it in the seconds before the cluster knew the node was gone
    assert lost and {r.rollout_id for r in lost} & killed["in_flight"]
    assert all((r.mask_sample, r.reward, r.node, r.slot) == (True, None, victim.node, victim.name) for r in lost)
    assert all(r.reward == 1.0 for r in records.values() if r.failure_kind != "node_lost")
    assert not (tmp_path / LOST_ATTEMPTS).exists()
    assert gone_within(slot_processes + [victim.pid], 30) == []


async def test_a_node_that_dies_as_its_actor_starts_leaves_the_others_to_collect(cluster, tmp_path):
    doomed = next(node["NodeID"] for node in ray.nodes() if node["Alive"] and node["Resources"].get("browser")
                  and node["NodeID"] != ray.get_runtime_context().get_node_id())
    marker = tmp_path / "opening"
    requests = requests_for(SHORT[:2], group=2)
    rollouts = RayRollouts(tmp_path, partial(stalling_on, doomed, str(marker)), oracle_policies, EngineSettings(),
                           check=known_tasks(TASKS))
    try:
        with pytest.warns(UserWarning, match=r"the Ray actor node-\w+-0 died as it started: .*; collecting on the 1 "
                                             r"others"):
            starting = asyncio.ensure_future(rollouts.__aenter__())
            while not marker.exists():
                assert not starting.done(), starting
                await asyncio.sleep(0.2)
            cluster.kill_node(doomed)
            router = await asyncio.wait_for(starting, 120)
        try:
            assert [member.node for member in router.members] != [doomed] and len(router.members) == 1
            batch = await asyncio.wait_for(collect(router, requests), 300)
        finally:
            await rollouts.__aexit__(None, None, None)
    finally:
        await asyncio.wait_for(known_dead(doomed), 120)
        cluster.add_node(browsers=2)
    assert sorted(r.rollout_id for r in batch.records) == sorted(r.id for r in requests)
    assert all(r.reward == 1.0 for r in batch.records)


async def test_a_benchmark_that_cannot_open_on_a_node_is_one_line_and_its_browsers_are_given_back(cluster, tmp_path):
    with pytest.raises(EngineStopped, match=r"^the Ray actor node-\w+-0 cannot start: the benchmark cannot open here: "
                                            r"the task file /data/tasks.jsonl is not on this node$"):
        async with RayRollouts(tmp_path, unopenable, oracle_policies):
            pass

    async def browsers_free() -> None:
        while ray.available_resources().get("browser", 0) < 4:
            await asyncio.sleep(0.5)

    await asyncio.wait_for(browsers_free(), 60)


async def test_a_straggler_on_an_actor_is_cut_after_the_grace_its_evidence_kept_on_the_node(cluster, tmp_path):
    requests = requests_for(SHORT[:4], group=1)
    slow = requests[0].id
    async with pool(tmp_path, policies=partial(stalling_policies, slow)) as router:
        batch = await asyncio.wait_for(collect(router, requests, completion_threshold=0.75, grace_s=1.0), 300)
        free = [await member.handle.stats.remote() for member in router.members]
    records = {r.rollout_id: r for r in batch.records}
    cut = records[slow]
    assert (cut.mask_sample, cut.reward, cut.failure_kind) == (True, None, "cut"), cut
    assert (Path(cut.node_root) / cut.attempt_path / "evidence.json").is_file()
    assert all(records[r.id].reward == 1.0 for r in requests[1:])
    assert [stats["free_slots"] for stats in free] == [2, 2]  # the cut rollout's slot was freed


async def test_an_interrupted_collection_on_ray_resumes_with_each_rollout_once(cluster, tmp_path):
    requests = requests_for(SHORT[:6], group=2)
    interrupt = asyncio.Event()
    first = await asyncio.wait_for(collect_on_ray(
        cluster.address, tmp_path, offline_benchmark, oracle_policies, requests, task_ids=TASKS,
        on_record=lambda record: interrupt.set(), interrupted=interrupt), 600)
    assert first.not_started and first.records
    assert all(r.reward == 1.0 or (r.failure_kind, r.reward) == ("interrupted", None) for r in first.records)
    second = await asyncio.wait_for(collect_on_ray(
        cluster.address, tmp_path, offline_benchmark, oracle_policies, requests, task_ids=TASKS), 600)
    again = [r.id for r in first.not_started] + [r.rollout_id for r in first.records if r.failure_kind]
    assert sorted(r.rollout_id for r in second.records) == sorted(again)  # nothing that ended runs twice
    final = RolloutStore(tmp_path).final()
    assert sorted(final) == sorted(r.id for r in requests) and all(r.reward == 1.0 for r in final.values())


async def test_a_suite_collected_on_ray_refuses_an_unknown_task_on_the_head_and_runs_the_others(cluster, tmp_path):
    requests = [{"task_id": "Nowhere--1", "group_id": "g", "sample_index": 0, "seed": 1},
                {"task_id": SHORT[0], "group_id": "g", "sample_index": 1, "seed": 1},
                {"task_id": SHORT[1], "group_id": "g", "sample_index": 2, "seed": 1}]
    oracle_choice = PolicyChoice.from_values({"policy": "oracle"})
    batch = await asyncio.wait_for(
        collect_suite_on_ray(cluster.address, "local", {}, oracle_choice, requests, tmp_path), 300)
    assert [index for index, _ in batch.rejected] == [0] and "not a task" in batch.rejected[0][1]
    assert sorted(r.rollout_id for r in batch.records) == ["g.1", "g.2"]
    assert all(r.reward == 1.0 and r.node_root.startswith(str(tmp_path)) for r in batch.records)
    with pytest.raises(CommandError, match=r"^benchmark 'nowhere' is unknown: use one of .*$"):
        await collect_suite_on_ray(cluster.address, "nowhere", {}, oracle_choice, requests, tmp_path / "bad")
    with pytest.raises(CommandError, match=r"^no policy: pass --policy"):
        await collect_suite_on_ray(cluster.address, "local", {}, PolicyChoice(), requests, tmp_path / "bad")
    assert not (tmp_path / "bad").exists()


def test_the_command_collects_a_suite_on_the_cluster_with_its_screens_on_the_nodes(cluster, tmp_path):
    out = tmp_path / "out"
    done = webeval("rollouts", "collect", "--suite", "local", "--task-id", SHORT[0], "--task-id", SHORT[1],
                   "--group-size", "2", "--out", str(out), "--ray", cluster.address, "--resubmit-lost")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "rollouts complete: rollouts=4, scored=4, masked=0, mean_reward=1.000" in done.stdout
    records = RolloutStore(out).records()
    assert len(records) == 4 and len({r.node for r in records}) >= 1
    assert all(Path(r.node_root).parent == out.resolve() / "nodes" and (Path(r.node_root) / r.attempt_path).is_dir()
               for r in records)


async def test_an_endpoint_that_is_down_masks_rollouts_on_every_actor_and_stops_with_one_line(cluster, tmp_path):
    stub = OpenAIStub(lambda request: Reply(tool_calls=call("terminate", {"status": "success", "answer": "x"})
                                            .tool_calls)).start()
    base = stub.base_url
    stub.stop()  # nothing listens there any more
    profile = Profile(base_url=base, model="stub-model", retries=1, timeout_s=5, backoff_s=0)
    requests = [RolloutRequest(task_id="Dictionary--2", group_id="g", sample_index=i, seed=i) for i in range(12)]
    batch = await asyncio.wait_for(collect_on_ray(
        cluster.address, tmp_path, offline_benchmark, partial(ModelPolicies, profile, (1280, 720)), requests,
        task_ids=TASKS, settings=EngineSettings(stop_after=3)), 300)
    assert batch.records and batch.not_started and len(batch.records) + len(batch.not_started) == 12
    assert all(r.failure_kind == "infra_error[policy_unavailable]" and r.reward is None for r in batch.records)
    assert batch.stopped and "connection" in batch.stopped.lower() and "\n" not in batch.stopped
    assert not any(r.reward == 0 for r in RolloutStore(tmp_path).records())


def webeval(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "webeval.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.parametrize("where, said", [
    ("closed", "no Ray cluster answers at 127.0.0.1:{port} (connection refused): start one with `ray start --head"),
    ("http", "answers, but not as a Ray head"),
    ("silent", "no Ray cluster answers at 127.0.0.1:{port} (no answer within 10 s)"),
    ("malformed", "is not HOST:PORT of a Ray head"),
])
def test_a_ray_address_where_no_head_answers_is_one_line_and_a_bounded_wait(where, said, tmp_path):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    server = None
    if where == "closed":
        listener.close()
    elif where == "silent":
        listener.listen(8)  # accepts, never answers
    elif where == "http":
        listener.close()
        server = http.server.ThreadingHTTPServer(("127.0.0.1", port), http.server.BaseHTTPRequestHandler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
    address = "127.0.0.1" if where == "malformed" else f"127.0.0.1:{port}"
    out = tmp_path / "out"
    began = time.monotonic()
    try:
        done = webeval("rollouts", "collect", "--suite", "local", "--out", str(out), "--ray", address, timeout=120)
    finally:
        listener.close()
        if server is not None:
            server.shutdown()
            server.server_close()
    took = time.monotonic() - began
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.startswith("webeval rollouts collect: error: ") and done.stderr.count("\n") == 1, done.stderr
    assert said.format(port=port) in done.stderr and not done.stdout
    assert took < 40  # the connect bound is 10 s; the rest is the interpreter and the command's imports
    assert not out.exists()


@pytest.mark.parametrize("args, said", [
    (["--slots", "4"], "--slots does not go with --ray"),
    (["--resubmit-lost"], "--resubmit-lost goes with --ray"),
])
def test_options_that_do_not_go_with_ray_are_one_line(args, said, tmp_path):
    if "--slots" in args:
        args = [*args, "--ray", "127.0.0.1:1"]  # refused before any connection is tried
    done = webeval("rollouts", "collect", "--suite", "local", "--out", str(tmp_path / "out"), *args, timeout=120)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and said in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()
