"""The rollout engine on real slots with the offline sites: records, rewards and masks, stragglers, bad requests,
a Chromium killed under a rollout, and resuming a collection."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import signal
from dataclasses import dataclass
from pathlib import Path

import pytest

from webeval.benchmarks.local import local_population
from webeval.benchmarks.local.offline_sites import OfflineSites
from webeval.benchmarks.local.site_server import SiteServer
from webeval.judges.verifier import verifier_judge
from webeval.policy.oracle import oracle
from webeval.rollouts import (EngineSettings, RolloutEngine, RolloutRequest, RolloutStore, collect)
from webeval.tasks import Task

pytestmark = pytest.mark.xdist_group("rollouts")


@dataclass
class LocalTasks:
    """The offline suite as a task source for the engine."""

    environment: OfflineSites
    judge: object
    by_id: dict[str, Task]

    def task(self, task_id: str) -> Task:
        return self.by_id[task_id]


@pytest.fixture(scope="module")
def local_tasks():
    _, tasks = local_population()
    with SiteServer() as server:
        yield LocalTasks(OfflineSites(server), verifier_judge, {task.id: task for task in tasks})


def requests_for(task_ids: list[str], group: int = 2) -> list[RolloutRequest]:
    return [RolloutRequest(task_id=task_id, group_id=task_id, sample_index=index, seed=1000 + index)
            for task_id in task_ids for index in range(group)]


def short_tasks(source: LocalTasks, count: int) -> list[str]:
    return [task.id for task in source.by_id.values() if 2 <= len(task.solution or ()) <= 5][:count]


class Slow:
    """The oracle, but its second turn takes `seconds`: a straggler."""

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


async def test_a_batch_of_oracle_rollouts_gives_one_scored_record_each_with_its_screens_on_disk(local_tasks, tmp_path):
    chosen = short_tasks(local_tasks, 5)
    settings = EngineSettings(slots=3)
    async with RolloutEngine(local_tasks, tmp_path, lambda request: oracle, settings) as engine:
        batch = await collect(engine, requests_for(chosen))
    assert not batch.rejected and not batch.not_started and batch.stopped is None
    records = {record.rollout_id: record for record in batch.records}
    assert sorted(records) == sorted(f"{task_id}.{index}" for task_id in chosen for index in range(2))
    for record in records.values():
        assert (record.reward, record.mask_sample, record.outcome) == (1.0, False, "passed"), record.failure_reason
        assert record.steps == len(record.turns) > 0 and record.attempt_path
        for turn in record.turns:
            shot = tmp_path / turn.image_refs[0].path
            assert hashlib.sha256(shot.read_bytes()).hexdigest() == turn.image_refs[0].sha256
        assert record.turns[-1].action[-1]["tool"] == "terminate" and record.turns[-1].action[-1]["status"] == "success"
    on_disk = RolloutStore(tmp_path).records()
    assert sorted(r.rollout_id for r in on_disk) == sorted(records)
    assert not list(tmp_path.rglob("*.b64"))  # screenshots are files, referenced by path and hash
    assert all("base64" not in line for line in (tmp_path / "rollouts.jsonl").read_text().splitlines())
    busy = sum(engine.pool.busy_s.values())
    assert busy > 0 and set(engine.pool.busy_s) == {"slot-0", "slot-1", "slot-2"}


async def test_a_straggler_is_cut_after_the_grace_and_masked_never_scored(local_tasks, tmp_path):
    chosen = short_tasks(local_tasks, 4)
    slow = chosen[0]

    def policy_for(request):
        if request.task_id == slow and request.sample_index == 0:
            return lambda session, prepared: Slow(oracle(session, prepared), 120)
        return oracle

    async with RolloutEngine(local_tasks, tmp_path, policy_for, EngineSettings(slots=4)) as engine:
        batch = await asyncio.wait_for(
            collect(engine, requests_for(chosen, group=1), completion_threshold=0.75, grace_s=1.0), 120)
        free_after = engine.free_slots()
    records = {record.task_id: record for record in batch.records}
    cut = records[slow]
    assert (cut.mask_sample, cut.reward, cut.failure_kind) == (True, None, "cut"), cut
    assert cut.attempt_path and (tmp_path / cut.attempt_path / "evidence.json").is_file()  # its evidence is kept
    assert all(records[t].reward == 1.0 for t in chosen[1:])
    assert free_after == 4  # the cut rollout's slot was freed


async def test_bad_requests_are_refused_one_by_one_and_the_others_run(local_tasks, tmp_path):
    good = short_tasks(local_tasks, 1)[0]
    requests = [
        {"task_id": "Nowhere--1", "group_id": "g", "sample_index": 0, "seed": 1},
        {"task_id": good, "group_id": "g", "sample_index": 0, "seed": -5},
        {"task_id": good, "group_id": "g", "sample_index": 1, "seed": 1, "policy": {"sampling": {"temperature": "hot"}}},
        {"task_id": good, "group_id": "g", "sample_index": 2, "seed": 1, "policy": {"sampling": {"tempurature": 1}}},
        {"task_id": good, "group_id": "g", "sample_index": 3, "seed": 7},
    ]
    async with RolloutEngine(local_tasks, tmp_path, lambda request: oracle, EngineSettings(slots=1)) as engine:
        batch = await collect(engine, requests)
    errors = dict(batch.rejected)
    assert sorted(errors) == [0, 1, 2, 3]
    assert "Nowhere--1" in errors[0] and "not a task" in errors[0]
    assert "seed" in errors[1] and "greater than or equal to 0" in errors[1]
    assert "sampling.temperature" in errors[2]
    assert "tempurature" in errors[3] and "not permitted" in errors[3]
    assert all("\n" not in error for error in errors.values())
    assert [record.rollout_id for record in batch.records] == ["g.3"] and batch.records[0].reward == 1.0


async def test_a_chromium_killed_under_a_rollout_masks_it_and_the_slot_goes_on(local_tasks, tmp_path):
    chosen = short_tasks(local_tasks, 3)
    victim = chosen[0]

    class Kill:
        def __init__(self, policy, engine):
            self.policy, self.engine = policy, engine
            self.name, self.model = policy.name, None

        async def begin(self, task):
            await self.policy.begin(task)

        async def end(self):
            await self.policy.end()

        async def act(self, observation):
            if observation.step == 2:
                os.kill(self.engine.slots[0].browser.browser_pid, signal.SIGKILL)
            return await self.policy.act(observation)

    holder = {}

    def policy_for(request):
        if request.task_id == victim:
            return lambda session, prepared: Kill(oracle(session, prepared), holder["engine"])
        return oracle

    async with RolloutEngine(local_tasks, tmp_path, policy_for, EngineSettings(slots=1)) as engine:
        holder["engine"] = engine
        batch = await asyncio.wait_for(collect(engine, requests_for(chosen, group=1)), 300)
    records = {record.task_id: record for record in batch.records}
    killed = records[victim]
    assert (killed.mask_sample, killed.reward, killed.failure_kind) == (True, None, "infra_error[browser]"), killed
    assert [records[t].reward for t in chosen[1:]] == [1.0, 1.0]  # the same slot, started again
    assert engine.slots[0].restarts == 1


async def test_a_resumed_collection_runs_only_the_rollouts_without_a_record(local_tasks, tmp_path):
    chosen = short_tasks(local_tasks, 2)
    requests = requests_for(chosen, group=2)
    async with RolloutEngine(local_tasks, tmp_path, lambda request: oracle, EngineSettings(slots=2)) as engine:
        first = await collect(engine, requests[:2])
        done = RolloutStore(tmp_path).done()
        second = await collect(engine, [r for r in requests if r.id not in done])
    ids = [record.rollout_id for record in RolloutStore(tmp_path).records()]
    assert len(first.records) == 2 and len(second.records) == 2
    assert sorted(ids) == sorted(request.id for request in requests)  # each once


def test_a_torn_last_line_is_cut_back_before_the_next_record(tmp_path: Path):
    from webeval.rollouts import RolloutRecord

    store = RolloutStore(tmp_path)
    store.append(RolloutRecord(rollout_id="a.0", task_id="a", group_id="a", sample_index=0, seed=0))
    with open(store.path, "ab") as out:
        out.write(b'{"rollout_id": "b.0", "task_')  # a writer killed mid-line
    store.append(RolloutRecord(rollout_id="c.0", task_id="c", group_id="c", sample_index=0, seed=0))
    lines = store.path.read_text().splitlines()
    assert [RolloutRecord.model_validate_json(line).rollout_id for line in lines] == ["a.0", "c.0"]


# -- rollouts against a model endpoint: the scripted stand-in, through the real client ---------------------------
from fixtures.openai_stub import OpenAIStub, Reply, call, prompt_token_ids  # noqa: E402
from webeval.policy.openai import Profile  # noqa: E402
from webeval.rollouts.model_policies import ModelPolicies  # noqa: E402

ANSWERS = {"Dictionary--2": "fluke", "Dictionary--3": "C2"}


def answering(reply_tokens: str = "auto"):
    """A model that waits once, then answers its task (the answer is known from the goal in the first message)."""

    def script(request: dict) -> Reply:
        goal = json.dumps(request["messages"][1])
        task = next(task_id for task_id in ANSWERS if local_goal(task_id) in goal)
        if sum(m["role"] == "assistant" for m in request["messages"]) == 0:
            return Reply(tool_calls=call("computer", {"action": "wait", "seconds": 0}).tool_calls, tokens=reply_tokens)
        return Reply(tool_calls=call("terminate", {"status": "success", "answer": ANSWERS[task]}).tool_calls,
                     tokens=reply_tokens)

    return script


def local_goal(task_id: str) -> str:
    _, tasks = local_population()
    return json.dumps(next(t.goal for t in tasks if t.id == task_id))[1:-1][:40]


def model_profile(stub: OpenAIStub, **fields) -> Profile:
    return Profile(base_url=stub.base_url, model="stub-model", retries=0, timeout_s=10, backoff_s=0, **fields)


async def test_model_rollouts_keep_each_turns_token_ids_as_received_and_the_prompt_append_only(local_tasks, tmp_path):
    with OpenAIStub(answering()) as stub:
        policies = ModelPolicies(model_profile(stub), (1280, 720))
        requests = [RolloutRequest(task_id=task_id, group_id=task_id, sample_index=i, seed=40 + i, policy_version=3,
                                   policy={"sampling": {"temperature": 0.7, "top_k": 20}})
                    for task_id in ANSWERS for i in range(2)]
        async with RolloutEngine(local_tasks, tmp_path, policies, EngineSettings(slots=2, history="append-only")) as engine:
            batch = await asyncio.wait_for(collect(engine, requests), 300)
        bodies = list(stub.requests)
    assert len(batch.records) == 4
    for record in batch.records:
        assert (record.reward, record.mask_sample, record.history) == (1.0, False, "append-only"), record
        assert record.policy_version_start == record.policy_version_end == "3"
        first, second = record.turns
        assert first.generation_token_ids and len(first.generation_token_ids) == len(first.generation_log_probs)
        # append-only: the second prompt is the first one, its reply, and what came after
        assert second.prompt_token_ids[:len(first.prompt_token_ids)] == first.prompt_token_ids
        assert len(second.prompt_token_ids) > len(first.prompt_token_ids)
    sent = {(body["seed"], body["temperature"], body["top_k"]) for body in bodies}
    assert sent == {(40, 0.7, 20), (41, 0.7, 20)}
    assert all(body["logprobs"] is True and body["return_token_ids"] is True and body["top_logprobs"] == 0
               and body["return_tokens_as_token_ids"] is True for body in bodies)
    episodes: dict[tuple, list[dict]] = {}  # by seed and task: each episode's requests in order
    for body in bodies:
        episodes.setdefault((body["seed"], json.dumps(body["messages"][1])[:300]), []).append(body)
    assert len(episodes) == 4
    for turns in episodes.values():
        for earlier, later in zip(turns, turns[1:]):
            assert later["messages"][:len(earlier["messages"])] == earlier["messages"]
    for record in batch.records:  # the prompt token ids the endpoint computed, stored unchanged
        sent = [t for (seed, goal), t in episodes.items() if seed == record.seed and local_goal(record.task_id) in goal]
        assert [turn.prompt_token_ids for turn in record.turns] == [prompt_token_ids(body) for body in sent[0]]


async def test_an_endpoint_that_gives_no_token_ids_masks_the_rollouts_and_stops_with_one_line(local_tasks, tmp_path):
    with OpenAIStub(answering(reply_tokens="none")) as stub:
        policies = ModelPolicies(model_profile(stub), (1280, 720))
        requests = [RolloutRequest(task_id="Dictionary--2", group_id="g", sample_index=i, seed=i) for i in range(6)]
        async with RolloutEngine(local_tasks, tmp_path, policies, EngineSettings(slots=1, stop_after=3)) as engine:
            batch = await asyncio.wait_for(collect(engine, requests), 300)
    assert len(batch.records) == 3 and len(batch.not_started) == 3
    assert all((r.mask_sample, r.reward, r.failure_kind) == (True, None, "infra_error[policy_tokens]")
               for r in batch.records)
    assert batch.stopped and "--no-token-ids" in batch.stopped and "\n" not in batch.stopped


async def test_an_endpoint_that_is_down_masks_rollouts_as_policy_and_stops_the_collection(local_tasks, tmp_path):
    stub = OpenAIStub(answering()).start()
    base = stub.base_url
    stub.stop()  # nothing listens there any more
    profile = Profile(base_url=base, model="stub-model", retries=1, timeout_s=5, backoff_s=0)
    requests = [RolloutRequest(task_id="Dictionary--2", group_id="g", sample_index=i, seed=i) for i in range(8)]
    async with RolloutEngine(local_tasks, tmp_path, ModelPolicies(profile, (1280, 720)),
                             EngineSettings(slots=2, stop_after=3)) as engine:
        batch = await asyncio.wait_for(collect(engine, requests), 300)
    assert 3 <= len(batch.records) <= 4 and len(batch.records) + len(batch.not_started) == 8
    assert all(r.failure_kind == "infra_error[policy_unavailable]" and r.reward is None for r in batch.records)
    assert batch.stopped and "connection" in batch.stopped.lower()
    assert not any(r.reward == 0 for r in RolloutStore(tmp_path).records())
