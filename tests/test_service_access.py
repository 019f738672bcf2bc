"""Who may call the rollout service and what it lets out: the real `webeval serve` command and a real server.

Any address but loopback needs a bearer token and the command refuses to start without one; the token guards every
route; bodies over the cap are 413 whether declared or streamed; a task id is looked up in the population, never on
disk; the policy's key and the bearer token never reach a response, a log line, a metric or a file.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
import pytest

from fixtures.openai_stub import OpenAIStub, Reply
from tests.conftest import ROOT
from tests.service_lab import local_tasks, one_line, serving
from webeval.service import ServiceSettings

pytestmark = pytest.mark.xdist_group("service")

TOKEN = "tok-" + secrets.token_hex(16)
WEBEVAL = str(Path(sys.executable).with_name("webeval"))


def serve_command(*arguments: str, env: dict[str, str] | None = None, timeout: float = 60):
    return subprocess.run([WEBEVAL, "serve", *arguments], cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


@pytest.mark.parametrize("arguments, env, says", [
    (("--host", "0.0.0.0"), {}, "--host 0.0.0.0 listens beyond this machine: pass --token-env NAME"),
    (("--host", "10.1.2.3", "--token-env", "WEBEVAL_TEST_UNSET"), {}, "$WEBEVAL_TEST_UNSET is not set"),
    (("--host", "0.0.0.0", "--token-env", "WEBEVAL_TEST_SHORT"), {"WEBEVAL_TEST_SHORT": "abc"}, "is too short"),
    (("--suite", "nowhere"), {}, "benchmark 'nowhere' is unknown: use one of local, miniwob, rubric, tasks"),
    (("--suite", "tasks:/no/such/file.jsonl"), {}, "/no/such/file.jsonl: no such task file or folder"),
    (("--policy", "openai"), {}, "no base_url and no model (pass --policy-base-url"),
    (("--policy", "openai", "--policy-base-url", "http://127.0.0.1:9/v1", "--policy-model", "m",
      "--dump-observation"), {}, "--dump-observation is evaluation's"),
    (("--suite", "miniwob", "--miniwob-seeds", "x"), {}, "--miniwob-seeds"),
    (("--session-ttl", "0"), {}, "--session-ttl must be positive"),
])
def test_the_command_refuses_to_start_in_one_line(arguments, env, says):
    suite = () if "--suite" in arguments else ("--suite", "local")
    done = serve_command(*suite, "--port", "0", *arguments, env=env)
    assert done.returncode == 2, done
    assert done.stderr.count("\n") == 1 and says in done.stderr, done.stderr
    assert "listening" not in done.stdout


def test_an_endpoint_that_cannot_serve_stops_the_start_in_one_line_with_status_3():
    done = serve_command("--suite", "local", "--port", "0", "--policy", "openai", "--policy-base-url",
                         "http://127.0.0.1:9/v1", "--policy-model", "stub-model")
    assert done.returncode == 3, done
    assert done.stderr.count("\n") == 1 and "the policy endpoint http://127.0.0.1:9/v1" in done.stderr, done.stderr
    assert "listening" not in done.stdout


@pytest.fixture(scope="module")
async def guarded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("service")
    async with local_tasks() as source:
        async with serving(source, folder, ServiceSettings(slots=1), token=TOKEN, max_body=2048) as running:
            yield running


ROUTES = [("GET", "/health"), ("GET", "/metrics"), ("POST", "/seed_session"), ("POST", "/computer"),
          ("POST", "/navigate"), ("POST", "/tabs"), ("POST", "/terminate"), ("POST", "/verify"),
          ("POST", "/close_session"), ("POST", "/run"), ("POST", "/aggregate_metrics"),
          ("GET", "/sessions/s1/steps/1/screenshot.png"), ("GET", "/openapi.json"), ("GET", "/no/such/route")]


async def test_the_bearer_token_guards_every_route(guarded):
    async with guarded.client() as anyone:
        for method, path in ROUTES:
            for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": TOKEN}):
                answer = await anyone.request(method, path, headers=headers, json={"task_id": "Dictionary--2"})
                assert answer.status_code == 401, (method, path, headers, answer.text)
                assert "bearer token" in one_line(answer) and answer.headers["WWW-Authenticate"] == "Bearer"
    async with guarded.client(Authorization=f"Bearer {TOKEN}") as trusted:
        assert (await trusted.get("/health")).json()["status"] == "ok"
        seeded = await trusted.post("/seed_session", json={"task_id": "Dictionary--2"})
        cookie = {"Cookie": f"webeval_session={seeded.cookies['webeval_session']}"}
        ended = await trusted.post("/terminate", headers=cookie, json={"status": "success", "answer": "fluke"})
        verdict = await trusted.post("/verify", headers=cookie)
    assert ended.json()["done"] and verdict.json()["reward"] == 1.0


async def test_bodies_over_the_cap_are_413_declared_or_streamed(guarded):
    big = json.dumps({"task_id": "Dictionary--2", "padding": "x" * 4000}).encode()

    async def streamed():
        for start in range(0, len(big), 500):
            yield big[start:start + 500]

    async with guarded.client(Authorization=f"Bearer {TOKEN}") as client:
        assert (await client.get("/health")).json()["free_slots"] == 1
        for path in ("/seed_session", "/run", "/aggregate_metrics"):
            declared = await client.post(path, content=big, headers={"Content-Type": "application/json"})
            chunked = await client.post(path, content=streamed(), headers={"Content-Type": "application/json"})
            for answer in (declared, chunked):
                assert answer.status_code == 413, (path, answer.text)
                assert one_line(answer) == "the request body is over the service's cap of 2048 bytes (--max-body)"
        assert "transfer-encoding" not in declared.request.headers and chunked.request.headers[
            "transfer-encoding"] == "chunked"
        assert (await client.get("/health")).json()["free_slots"] == 1  # nothing was started
        seeded = await client.post("/seed_session", json={"task_id": "Dictionary--2"})
        cookie = {"Cookie": f"webeval_session={seeded.cookies['webeval_session']}", "Content-Type": "application/json"}
        tool = await client.post("/computer", content=streamed(), headers=cookie)
        still = await client.post("/computer", headers=cookie, json={"action": "wait", "seconds": 0})
        await client.post("/close_session", headers=cookie)
    assert tool.status_code == 413 and still.json()["step"] == 2  # the oversized call never reached the episode


async def test_a_task_id_is_a_key_of_the_population_never_a_path(guarded):
    before = sorted(path for path in guarded.service.out.rglob("*"))
    async with guarded.client(Authorization=f"Bearer {TOKEN}") as client:
        for task_id in ("../../etc/passwd", "/etc/passwd", "Dictionary--2/../../x", "tasks/Dictionary--2",
                        "Dictionary--2\x00", "~root"):
            answer = await client.post("/seed_session", json={"task_id": task_id})
            assert answer.status_code == 404 and "is not in this service's population" in one_line(answer), task_id
        empty = await client.post("/seed_session", json={"task_id": ""})
        unsafe = await client.post("/seed_session", json={"task_id": "Dictionary--2", "group_id": "../../x"})
    assert empty.status_code == 422 and one_line(empty).startswith("body.task_id:")
    assert unsafe.status_code == 422 and "group_id" in one_line(unsafe)
    assert sorted(path for path in guarded.service.out.rglob("*")) == before


def leaking_endpoint(key: str) -> OpenAIStub:
    """An endpoint that refuses the key and says it back, as OpenAI's 401 does with part of a key."""
    return OpenAIStub([Reply(status=401, error=f"Incorrect API key provided: {key}. Check it and retry.")],
                      api_key=None)


def test_secrets_never_reach_responses_logs_metrics_or_files(tmp_path):
    key = "sk-webeval-" + secrets.token_hex(16)
    env = {"WEBEVAL_TEST_TOKEN": TOKEN, "WEBEVAL_TEST_POLICY_KEY": key}
    with leaking_endpoint(key) as endpoint:
        server = subprocess.Popen(
            [WEBEVAL, "serve", "--suite", "local", "--slots", "1", "--host", "0.0.0.0", "--port", "0",
             "--token-env", "WEBEVAL_TEST_TOKEN", "--out", str(tmp_path / "out"), "--policy", "openai",
             "--policy-base-url", endpoint.base_url, "--policy-model", "stub-model",
             "--policy-api-key-env", "WEBEVAL_TEST_POLICY_KEY"],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=open(tmp_path / "stderr.txt", "w"), text=True,
            env={**os.environ, **env})
        try:
            line = server.stdout.readline()
            assert "listening on http://0.0.0.0:" in line, line
            url = "http://127.0.0.1:" + line.split("0.0.0.0:")[1].split()[0]
            headers = {"Authorization": f"Bearer {TOKEN}"}
            with httpx.Client(base_url=url, headers=headers, timeout=120) as client:
                run = client.post("/run", json={"task_id": "Dictionary--2", "responses_create_params": {}})
                after = [client.get("/health"), client.get("/metrics"),
                         client.post("/run", json={"task_id": "Dictionary--2", "responses_create_params": {}})]
            assert any(key in json.dumps(request) or key in str(headers_seen)
                       for request, headers_seen in zip(endpoint.requests, endpoint.headers))  # it was sent
            started = [child.pid for child in psutil.Process(server.pid).children(recursive=True)]
        finally:
            server.send_signal(signal.SIGINT)
            out, _ = server.communicate(timeout=60)
    body = run.json()
    assert (body["mask_sample"], body["reward"], body["failure_kind"]) == (True, None, "infra_error[policy_auth]")
    assert "Incorrect API key provided: ***" in body["failure_reason"]
    assert after[0].status_code == 503 and after[2].status_code == 503  # a refused key stops the engine at once
    assert server.returncode == 0
    texts = {"run": run.text, **{f"after-{i}": answer.text for i, answer in enumerate(after)}, "stdout": line + out,
             "stderr": (tmp_path / "stderr.txt").read_text()}
    texts.update({str(path): path.read_text(errors="replace") for path in (tmp_path / "out").rglob("*")
                  if path.is_file() and path.suffix in (".json", ".jsonl", ".txt")})
    assert "POST /run" in texts["stderr"]  # the access log was written, and redacted
    for where, text in texts.items():
        assert key not in text and TOKEN not in text, where
    deadline = time.monotonic() + 15  # Chromium's helpers exit a moment after its browser process
    while [pid for pid in started if psutil.pid_exists(pid)] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert started and not [pid for pid in started if psutil.pid_exists(pid)]  # Xvfb, Chromium: all gone


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP])
def test_a_stop_from_outside_masks_the_open_sessions_closes_the_slots_and_exits_0(tmp_path, stop):
    server = subprocess.Popen([WEBEVAL, "serve", "--suite", "local", "--slots", "1", "--port", "0", "--out",
                               str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = server.stdout.readline()
        url = line.split()[4]
        with httpx.Client(base_url=url, timeout=120) as client:
            seeded = client.post("/seed_session", json={"task_id": "Dictionary--2", "rollout_id": "open-1"})
            assert seeded.status_code == 200, seeded.text
        started = [child.pid for child in psutil.Process(server.pid).children(recursive=True)]
        began = time.monotonic()
        server.send_signal(stop)
        server.communicate(timeout=90)
    finally:
        if server.poll() is None:
            server.kill()
    assert server.returncode == 0 and time.monotonic() - began < 60
    record = json.loads((tmp_path / "rollouts.jsonl").read_text().splitlines()[0])
    assert (record["rollout_id"], record["mask_sample"], record["reward"], record["failure_kind"]) == (
        "open-1", True, None, "interrupted")
    deadline = time.monotonic() + 15
    while [pid for pid in started if psutil.pid_exists(pid)] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert started and not [pid for pid in started if psutil.pid_exists(pid)]
