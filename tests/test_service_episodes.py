"""Whole episodes through POST /run, for real: the scripted policy endpoint behind the real client, real slots.

The verify response carries the model's response items with the token ids and log-probabilities as the endpoint
returned them; /aggregate_metrics counts a batch; a bad request is refused in one line; a client that disconnects
mid-/run frees its slot (masked interrupted), and one that disconnects while queued leaves no record.
"""

from __future__ import annotations

import asyncio
import json
import socket

import pytest

from fixtures.answering_endpoint import answering
from fixtures.openai_stub import OpenAIStub
from tests.service_lab import local_tasks, one_line, records, serving, until
from webeval.policy.openai import Profile
from webeval.rollouts.model_policies import ModelPolicies
from webeval.service import ServiceSettings

pytestmark = pytest.mark.xdist_group("service")


def policies(stub: OpenAIStub) -> ModelPolicies:
    profile = Profile(base_url=stub.base_url, model="stub-model", retries=0, timeout_s=60, backoff_s=0)
    return ModelPolicies(profile, (1280, 720))


@pytest.fixture(scope="module")
def stub():
    with OpenAIStub(answering()) as running:
        yield running


@pytest.fixture(scope="module")
async def served(stub, tmp_path_factory):
    async with local_tasks() as source:
        async with serving(source, tmp_path_factory.mktemp("service"), ServiceSettings(slots=2),
                           policies(stub)) as running:
            yield running


def run_body(task_id: str, seed: int, **params) -> dict:
    return {"task_id": task_id, "group_id": f"{task_id}-g", "sample_index": seed, "seed": seed,
            "responses_create_params": {"input": [{"role": "user", "content": "answer the task"}], **params}}


async def test_a_group_through_run_returns_the_models_items_with_token_ids_as_received(served, stub):
    async with served.client() as client:
        answers = await asyncio.gather(*(client.post("/run", json=run_body("Dictionary--2", seed, temperature=0.6))
                                         for seed in range(4)))
        bodies = [answer.json() for answer in answers]
        metrics = await client.post("/aggregate_metrics", json={"verify_responses": bodies})
    assert [answer.status_code for answer in answers] == [200] * 4
    assert [(b["reward"], b["mask_sample"]) for b in bodies] == [(1.0, False)] * 3 + [(0.0, False)]
    assert bodies[3]["failure_kind"] == "wrong_answer"
    on_disk = records(served.service.out)
    for body in bodies:
        assert body["responses_create_params"]["temperature"] == 0.6  # echoed as sent
        response = body["response"]
        assert response["object"] == "response" and response["model"] == "stub-model"
        kinds = [item["type"] for item in response["output"]]
        assert kinds == ["message", "function_call", "function_call_output"] * 2
        calls = [item for item in response["output"] if item["type"] == "function_call"]
        assert [json.loads(call["arguments"])["action" if i == 0 else "status"] for i, call in enumerate(calls)] == [
            "wait", "success"]
        turns = on_disk[body["rollout_id"]]["turns"]
        for call, turn in zip(calls, turns):  # the last item of each turn carries its tokens, unchanged
            assert call["prompt_token_ids"] == turn["prompt_token_ids"] and call["prompt_token_ids"]
            assert call["generation_token_ids"] == turn["generation_token_ids"]
            assert call["generation_log_probs"] == turn["generation_log_probs"]
        assert turns[1]["prompt_token_ids"][:len(turns[0]["prompt_token_ids"])] == turns[0]["prompt_token_ids"]
    sent = [request for request in stub.requests if request.get("seed") in range(4)]
    assert {request["temperature"] for request in sent} == {0.6} and {r["seed"] for r in sent} == {0, 1, 2, 3}
    figures = metrics.json()
    assert figures["agent_metrics"]["mean/reward"] == 0.75 and figures["agent_metrics"]["valid_rollouts"] == 4
    assert figures["group_level_metrics"] == [{"task_id": "Dictionary--2", "rollouts": 4, "valid_rollouts": 4,
                                               "masked_rollouts": 0, "mean/reward": 0.75, "min/reward": 0.0,
                                               "max/reward": 1.0, "std/reward": pytest.approx(0.4330127)}]


async def test_bad_run_requests_are_refused_in_one_line_and_nothing_runs(served):
    bad = {
        "policy_base_url": ({**run_body("Dictionary--2", 0), "policy_base_url": "http://127.0.0.1:1/v1"}, 403,
                            "--allow-request-endpoint"),
        "foreign tool": (run_body("Dictionary--2", 0, tools=[{"type": "function", "name": "bash"}]), 422,
                         "'bash' is not a tool of the action contract"),
        "unknown task": (run_body("Nowhere--1", 0), 404, "'Nowhere--1' is not in this service's population"),
        "a path": (run_body("../../etc/passwd", 0), 404, "is not in this service's population"),
        "hot sampling": (run_body("Dictionary--2", 0, temperature=5), 422, "temperature"),
        "unsafe group": ({**run_body("Dictionary--2", 0), "group_id": "../up"}, 422, "group_id"),
        "no params": ({"task_id": "Dictionary--2"}, 422, "responses_create_params"),
    }
    before = set(records(served.service.out))
    async with served.client() as client:
        for name, (body, status, says) in bad.items():
            answer = await client.post("/run", json=body)
            assert answer.status_code == status, (name, answer.text)
            assert says in one_line(answer), (name, answer.text)
        torn = await client.post("/run", content=b'{"task_id": "Dictionary--2", "responses_cr',
                                 headers={"Content-Type": "application/json"})
        metrics = await client.post("/aggregate_metrics", json={"verify_responses": [{"reward": None,
                                                                                      "mask_sample": False}]})
    assert torn.status_code == 422 and "JSON" in one_line(torn)
    assert metrics.status_code == 422 and "finite number" in one_line(metrics)
    assert set(records(served.service.out)) == before


def post_raw(port: int, body: dict) -> socket.socket:
    """POST /run on a socket the test closes itself, the way a client that goes away does."""
    conn = socket.create_connection(("127.0.0.1", port), timeout=30)
    data = json.dumps(body).encode()
    conn.sendall(b"POST /run HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 + f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
    return conn


async def test_a_client_that_disconnects_mid_run_frees_the_slot_and_the_rollout_is_masked(tmp_path):
    with OpenAIStub(answering(delay_s=60)) as slow:  # every reply takes a minute: the rollouts are mid-flight
        async with local_tasks() as source:
            async with serving(source, tmp_path, ServiceSettings(slots=1), policies(slow)) as running:
                engine = running.service.engine
                held = post_raw(running.port, {**run_body("Dictionary--2", 0), "rollout_id": "held-1"})
                await until(lambda: (engine.flights.get("held-1") or 0) and engine.flights["held-1"].slot, 60,
                            "the first /run holding the slot")
                queued = post_raw(running.port, {**run_body("Dictionary--2", 1), "rollout_id": "queued-1"})
                await until(lambda: "queued-1" in engine.flights, 30, "the second /run waiting for a slot")
                await until(lambda: len(slow.requests) >= 1, 60, "the model asked")
                queued.close()
                await until(lambda: "queued-1" not in engine.flights, 30, "the queued rollout dropped")
                assert engine.free_slots() == 0  # the first one still holds the slot
                held.close()
                await until(lambda: engine.free_slots() == 1 and not engine.flights, 60, "the slot freed")
                async with running.client() as client:
                    health = (await client.get("/health")).json()
    found = records(tmp_path)
    assert set(found) == {"held-1"}  # the queued one never started: no record
    assert (found["held-1"]["mask_sample"], found["held-1"]["reward"], found["held-1"]["failure_kind"]) == (
        True, None, "interrupted")
    assert health["free_slots"] == 1 and health["in_flight"] == 0
