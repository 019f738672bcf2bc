"""`webeval serve --ray ADDRESS` for real: a Ray head and a second node on 127.0.0.1 (`ray start`, one `browser` unit
each, so two actors of one slot), the scripted policy endpoint, the real command, and /run requests through an HTTP
client. An actor killed with SIGKILL mid-/run masks the answers it had in flight `node_lost` (never a reward of 0)
and the later ones go to the survivor; with --resubmit-lost they run again there and pass. The step routes answer
409 in one line; an address where no head answers, or options that do not go with --ray, stop the start in one."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import psutil
import pytest

from fixtures.answering_endpoint import answering
from fixtures.openai_stub import OpenAIStub
from tests.ray_head import RayCluster, gone_within
from tests.service_lab import one_line

pytestmark = pytest.mark.xdist_group("ray")  # one worker takes the Ray tests in turn (`--dist loadgroup`)
ROOT = Path(__file__).resolve().parents[1]
WEBEVAL = str(Path(sys.executable).with_name("webeval"))
TASKS = ("Dictionary--2", "Dictionary--3")  # answer tasks the scripted endpoint knows
SEEDS = (0, 1, 2, 4, 5, 6, 8)  # it answers wrongly when seed % 4 == 3: these all pass


@pytest.fixture(scope="module")
def cluster():
    nodes = RayCluster()
    try:
        nodes.start_head(browsers=1)
        nodes.add_node(browsers=1)
        yield nodes
    finally:
        nodes.stop()


@pytest.fixture(scope="module")
def endpoint():
    with OpenAIStub(answering(delay_s=0.5)) as stub:  # half a second a turn: an episode is in flight for seconds
        yield stub


@asynccontextmanager
async def served(cluster: RayCluster, endpoint: OpenAIStub, out: Path, *more: str):
    """`webeval serve --ray` started, its URL once it listens; SIGTERM when the block ends (exit 0 checked)."""
    server = subprocess.Popen(
        [WEBEVAL, "serve", "--suite", "local", "--port", "0", "--out", str(out), "--ray", cluster.address,
         "--policy", "openai", "--policy-base-url", endpoint.base_url, "--policy-model", "stub-model",
         "--policy-retries", "0", *more],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=open(out.parent / f"{out.name}.stderr", "w"), text=True)
    try:
        line = await asyncio.wait_for(asyncio.to_thread(server.stdout.readline), 120)
        assert "listening on http://127.0.0.1:" in line, (out.parent / f"{out.name}.stderr").read_text()[-3000:]
        assert f"2 slots on the Ray cluster at {cluster.address}" in line, line
        yield line.split()[4], server
        server.send_signal(signal.SIGTERM)
        await asyncio.wait_for(asyncio.to_thread(server.wait), 60)
        assert server.returncode == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(10)


def actors(cluster: RayCluster) -> dict[str, psutil.Process]:
    """The cluster's NodeRollouts actors by name (`node-<node id>-0`: one per node here), from their processes."""
    found = {}
    for process in cluster.processes():
        try:
            if not process.cmdline()[0].startswith("ray::NodeRollouts"):  # `.run` added while it runs one
                continue
            raylet = next(parent for parent in process.parents() if "raylet" in parent.name())
            node = next(part for part in raylet.cmdline() if part.startswith("--node_id="))
        except (psutil.NoSuchProcess, IndexError, StopIteration):
            continue
        found[f"node-{node.split('=', 1)[1][:8]}-0"] = process
    return found


def run_body(task_id: str, seed: int, rollout_id: str) -> dict:
    return {"task_id": task_id, "group_id": task_id, "sample_index": seed, "seed": seed, "rollout_id": rollout_id,
            "responses_create_params": {"input": [{"role": "user", "content": "answer the task"}]}}


def records(path: Path) -> dict[str, dict]:
    return {line["rollout_id"]: line for line in map(json.loads, path.read_text().splitlines())} if path.exists() \
        else {}


async def kill_midway(client: httpx.AsyncClient, started: dict[str, psutil.Process], wave: list[dict]
                      ) -> tuple[list, str, str]:
    """The wave posted at once; once the first answer is back (every slot busy, more waiting), one actor is
    SIGKILLed. Its answers, the victim's name and the survivor's."""
    posted = [asyncio.ensure_future(client.post("/run", json=body)) for body in wave]
    await asyncio.wait(posted, return_when=asyncio.FIRST_COMPLETED)
    (victim, process), (survivor, _) = sorted(started.items())
    os.kill(process.pid, signal.SIGKILL)
    return await asyncio.gather(*posted), victim, survivor


async def test_a_killed_actor_masks_its_runs_node_lost_and_the_service_goes_on_with_the_survivor(cluster, endpoint,
                                                                                                tmp_path):
    out = tmp_path / "out"
    async with served(cluster, endpoint, out) as (url, server):
        own = [" ".join(child.cmdline()[:1]) for child in psutil.Process(server.pid).children(recursive=True)]
        assert not [name for name in own if "Xvfb" in name or "chrom" in name]  # the actors run the slots
        started = actors(cluster)
        assert len(started) == 2
        children = [child.pid for process in started.values() for child in process.children(recursive=True)]
        assert children  # each actor's own Xvfb and Chromium
        async with httpx.AsyncClient(base_url=url, timeout=300) as client:
            assert (await client.get("/health")).json()["slots"] == 2
            wave = [run_body(TASKS[i % 2], seed, f"w1-{i}") for i, seed in enumerate(SEEDS[:5])]
            answers, victim, survivor = await kill_midway(client, started, wave)
            later = await asyncio.gather(*(client.post("/run", json=run_body(TASKS[0], seed, f"w2-{seed}"))
                                           for seed in SEEDS[5:]))
            health = (await client.get("/health")).json()
            metrics = (await client.get("/metrics")).text
            unknown = await client.post("/run", json=run_body("Nowhere--1", 0, "w3-0"))
    bodies = [answer.json() for answer in answers + later]
    assert [answer.status_code for answer in answers + later] == [200] * 7, [a.text for a in answers + later]
    lost = [body for body in bodies if body["mask_sample"]]
    assert lost and all((b["reward"], b["failure_kind"]) == (None, "node_lost") and victim in b["failure_reason"]
                        for b in lost), lost
    passed = [body for body in bodies if not body["mask_sample"]]
    assert len(passed) + len(lost) == 7 and all(body["reward"] == 1.0 for body in passed)
    for body in passed:  # the model's items with their token ids, sent back from the node with the record
        calls = [item for item in body["response"]["output"] if item["type"] == "function_call"]
        assert len(calls) == 2 and calls[0]["prompt_token_ids"] and calls[1]["generation_log_probs"]
    on_disk = records(out / "rollouts.jsonl")
    assert sorted(on_disk) == sorted(body["rollout_id"] for body in bodies)
    assert all(on_disk[b["rollout_id"]]["slot"] == victim for b in lost)
    assert all(on_disk[f"w2-{seed}"]["slot"].startswith(survivor + "/") for seed in SEEDS[5:])
    assert not any(record["reward"] == 0 for record in on_disk.values())
    assert unknown.status_code == 404 and "not in this service's population" in one_line(unknown)
    assert (health["slots"], health["free_slots"], health["in_flight"], health["status"]) == (1, 1, 0, "ok")
    assert 'webeval_slots{state="free"} 1.0' in metrics and 'webeval_slots{state="busy"} 0.0' in metrics
    assert f'webeval_rollouts_total{{failure_kind="node_lost",outcome="node_lost"}} {len(lost)}.0' in metrics, metrics
    assert gone_within([process.pid for process in started.values()] + children, 30) == []  # ended with the service


async def test_with_resubmit_lost_the_runs_in_flight_on_a_killed_actor_pass_on_the_survivor(cluster, endpoint,
                                                                                            tmp_path):
    out = tmp_path / "out"
    async with served(cluster, endpoint, out, "--resubmit-lost") as (url, _):
        started = actors(cluster)
        assert len(started) == 2
        async with httpx.AsyncClient(base_url=url, timeout=300) as client:
            wave = [run_body(TASKS[i % 2], seed, f"r-{i}") for i, seed in enumerate(SEEDS[:4])]
            answers, victim, survivor = await kill_midway(client, started, wave)
            refused = [await client.request(method, path, json={"task_id": TASKS[0]}) for method, path in (
                ("POST", "/seed_session"), ("POST", "/computer"), ("POST", "/verify"), ("POST", "/close_session"),
                ("GET", "/sessions/s1/steps/1/screenshot.png"))]
    assert [answer.status_code for answer in answers] == [200] * 4, [answer.text for answer in answers]
    assert [(a.json()["reward"], a.json()["mask_sample"]) for a in answers] == [(1.0, False)] * 4
    lost = records(out / "lost-attempts.jsonl")
    assert lost and all((r["failure_kind"], r["reward"], r["slot"]) == ("node_lost", None, victim)
                        for r in lost.values())
    final = records(out / "rollouts.jsonl")
    assert sorted(final) == [f"r-{i}" for i in range(4)]
    assert all(final[rollout_id]["slot"].startswith(survivor + "/") for rollout_id in lost)
    for answer in refused:  # the step routes need a slot of the service's own, whatever the request carries
        assert answer.status_code == 409, answer.text
        assert one_line(answer).endswith("start another `webeval serve` without --ray for them")


@pytest.mark.parametrize("arguments, said", [
    (("--ray", "127.0.0.1:{port}"), "no Ray cluster answers at 127.0.0.1:{port} (connection refused): start one"),
    (("--ray", "127.0.0.1"), "is not HOST:PORT of a Ray head"),
    (("--ray", "127.0.0.1:{port}", "--slots", "2"), "--slots does not go with --ray"),
    (("--resubmit-lost",), "--resubmit-lost goes with --ray: only a Ray node can be lost"),
    (("--suite", "tasks:{tasks}", "--ray", "127.0.0.1:{port}"), "there is no policy for them: pass --policy"),
])
def test_a_ray_address_where_no_head_answers_or_options_that_do_not_go_with_it_are_one_line(arguments, said, tmp_path):
    from tests.ray_head import free_port

    port = free_port()  # nothing listens there
    tasks = tmp_path / "mine.jsonl"
    tasks.write_text(json.dumps({"id": "t1", "site": "shop", "goal": "Find tea.", "start_url": "http://127.0.0.1:9/",
                                 "answer": {"exact": "tea"}}) + "\n")
    arguments = [part.format(port=port, tasks=tasks) for part in arguments]
    suite = [] if "--suite" in arguments else ["--suite", "local"]
    began = time.monotonic()
    done = subprocess.run([WEBEVAL, "serve", *suite, "--port", "0", "--out", str(tmp_path / "out"), *arguments],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.startswith("webeval serve: error: ") and done.stderr.count("\n") == 1, done.stderr
    assert said.format(port=port) in done.stderr and "listening" not in done.stdout
    assert time.monotonic() - began < 40  # the connect bound is 10 s; the rest is the interpreter and its imports
    assert not (tmp_path / "out").exists()
