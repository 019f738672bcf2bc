"""Step sessions of the rollout service, for real: a uvicorn server on 127.0.0.1, real slots, real HTTP clients.

The action contract's errors come back as the next observation's text; a session not stepped within its time to
live is closed, its slot freed, its /verify masked session_expired; more sessions than slots is 429 with Retry-After;
a cookie names its own session only; a Chromium killed mid-session masks it as infrastructure and the slot recovers;
screenshots are served by session and step, never by path.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import signal
import socket
import time

import pytest

from tests.service_lab import cookie_of, local_tasks, one_line, records, seed, serving, until
from webeval.service import ServiceSettings
from webeval.service.access import COOKIE, CookieSigner

pytestmark = pytest.mark.xdist_group("service")

TTL_S = 4.0
SLOTS = 2


@pytest.fixture(scope="module")
async def served(tmp_path_factory):
    folder = tmp_path_factory.mktemp("service")
    async with local_tasks() as source:
        async with serving(source, folder, ServiceSettings(slots=SLOTS, session_ttl_s=TTL_S)) as running:
            yield running


async def close_all(client, cookies) -> None:
    for cookie in cookies:
        await client.post("/close_session", headers=cookie)


async def test_a_session_steps_through_the_action_contract_and_verifies_its_reward(served):
    async with served.client() as client:
        cookie, first = await seed(client, "Dictionary--2", group_id="g-1", seed=7)
        assert (first["step"], first["done"], first["task_id"]) == (1, False, "Dictionary--2")
        assert "Word of the Day" in first["goal"] and first["url"].endswith("/dictionary/")
        assert [tool["function"]["name"] for tool in first["tools"]] == ["computer", "navigate", "tabs", "terminate"]
        shot = await client.get(first["screenshot"]["url"], headers=cookie)
        assert shot.status_code == 200 and shot.content[:8] == b"\x89PNG\r\n\x1a\n"
        assert hashlib.sha256(shot.content).hexdigest() == first["screenshot"]["sha256"]
        assert (first["screenshot"]["width"], first["screenshot"]["height"]) == (1280, 720)

        outside = await client.post("/computer", headers=cookie, json={"action": "click", "x": 1280, "y": 10})
        assert outside.json()["step"] == 2
        assert outside.json()["last_result"] == "error: computer: point (1280, 10) is outside the 1280x720 screenshot"
        torn = await client.post("/computer", headers=cookie, content=b'{"action": "click", "x": 1')
        assert torn.json()["last_result"].startswith("error: computer: arguments are not valid JSON")
        waited = await client.post("/computer", headers=cookie, json={"action": "wait", "seconds": 0})
        assert waited.json()["step"] == 4 and not waited.json()["last_result"].startswith("error")
        wrong_type = await client.post("/navigate", headers=cookie, json={"url": "file:///etc/passwd"})
        assert wrong_type.json()["last_result"] == "error: navigate: url 'file:///etc/passwd' is not an http(s) URL"
        two_tabs = await client.post("/tab", headers=cookie, json={"action": "focus"})
        assert two_tabs.json()["last_result"] == "error: tabs: tabs action 'focus' takes tab_id and no url"
        earlier = await client.get(f"/sessions/{first['session_id']}/steps/1/screenshot.png", headers=cookie)
        assert earlier.content == shot.content  # read back from the attempt's folder now

        ended = await client.post("/terminate", headers=cookie, json={"status": "success", "answer": "fluke"})
        assert ended.json()["done"] is True and "POST /verify" in ended.json()["text"]
        verdict = await client.post("/verify", headers=cookie,
                                    json={"responses_create_params": {"input": "x"}, "response": {"id": "r-1"}})
    body = verdict.json()
    assert (body["reward"], body["mask_sample"], body["failure_kind"], body["outcome"]) == (1.0, False, None, "passed")
    assert body["responses_create_params"] == {"input": "x"} and body["response"] == {"id": "r-1"}
    assert (body["group_id"], body["seed"], body["steps"]) == ("g-1", 7, 6)
    record = records(served.service.out)[first["session_id"]]
    assert record["reward"] == 1.0 and [turn["error"] is not None for turn in record["turns"]] == [
        True, True, False, True, True, False]


async def test_verify_before_terminate_ends_the_episode_as_the_agents_failure_to_answer(served):
    async with served.client() as client:
        cookie, _ = await seed(client, "Dictionary--3")
        verdict = (await client.post("/verify", headers=cookie)).json()
        again = await client.post("/computer", headers=cookie, json={"action": "wait", "seconds": 0})
    assert (verdict["reward"], verdict["mask_sample"], verdict["failure_kind"]) == (0.0, False, "no_answer")
    assert again.json()["done"] is True


async def test_a_session_not_stepped_within_its_ttl_is_closed_and_masked_and_its_slot_freed(served):
    async with served.client() as client:
        cookie, first = await seed(client, "Dictionary--2")
        began = time.monotonic()
        await until(lambda: served.service.engine.free_slots() == SLOTS, TTL_S + 40, "the slot back")
        freed_after = time.monotonic() - began
        late = await client.post("/computer", headers=cookie, json={"action": "wait", "seconds": 0})
        verdict = await client.post("/verify", headers=cookie)
        health = (await client.get("/health")).json()
    assert TTL_S - 0.5 <= freed_after <= TTL_S + 40
    assert late.status_code == 200 and late.json()["done"] is True and "session_expired" in late.json()["text"]
    body = verdict.json()
    assert (body["reward"], body["mask_sample"], body["failure_kind"]) == (None, True, "session_expired"), body
    assert f"no tool call within {TTL_S:g} s" in body["failure_reason"]
    assert health["free_slots"] == SLOTS and health["sessions"] == 0
    assert records(served.service.out)[first["session_id"]]["failure_kind"] == "session_expired"


async def test_more_sessions_than_slots_is_429_with_retry_after_never_a_hang(served):
    async with served.client() as client:
        held = [(await seed(client, "Dictionary--2"))[0] for _ in range(SLOTS)]
        try:
            began = time.monotonic()
            refused = await asyncio.gather(*(client.post("/seed_session", json={"task_id": "Dictionary--2"})
                                             for _ in range(30)))
            took = time.monotonic() - began
            assert {answer.status_code for answer in refused} == {429}
            assert all(int(answer.headers["Retry-After"]) >= 1 for answer in refused)
            assert "slots are taken" in one_line(refused[0]) and took < 10
            await client.post("/close_session", headers=held.pop())
            cookie, _ = await seed(client, "Dictionary--2")  # the freed slot is taken at once
            held.append(cookie)
        finally:
            await close_all(client, held)
        metrics = (await client.get("/metrics")).text
    assert 'webeval_refused_requests_total{reason="no_free_slot"} 30.0' in metrics
    assert 'webeval_slots{state="free"} 2.0' in metrics


async def test_a_cookie_opens_its_own_session_only(served):
    async with served.client() as client:
        mine, first = await seed(client, "Dictionary--2")
        theirs, second = await seed(client, "Dictionary--3")
        try:
            missing = await client.post("/computer", json={"action": "wait", "seconds": 0})
            forged = await client.post("/computer", headers={"Cookie": f"{COOKIE}={first['session_id']}.00ff"},
                                       json={"action": "wait", "seconds": 0})
            elsewhere = CookieSigner().cookie(first["session_id"])  # the same id, signed by another service
            foreign = await client.post("/computer", headers={"Cookie": f"{COOKIE}={elsewhere}"},
                                        json={"action": "wait", "seconds": 0})
            crossed = await client.get(f"/sessions/{second['session_id']}/steps/1/screenshot.png", headers=mine)
            assert (missing.status_code, forged.status_code, foreign.status_code, crossed.status_code) == (
                401, 403, 403, 403)
            assert "POST /seed_session first" in one_line(missing)
            assert one_line(crossed) == "this session cookie belongs to another session"
            still = await client.post("/computer", headers=mine, json={"action": "wait", "seconds": 0})
            assert still.json()["step"] == 2  # none of that touched the session
        finally:
            closed = await client.post("/close_session", headers=mine)
            await client.post("/close_session", headers=theirs)
        after = await client.post("/verify", headers=mine)
    assert closed.json()["failure_kind"] == "interrupted" and closed.json()["reward"] is None
    assert after.status_code == 404 and "is not known here" in one_line(after)


async def test_a_chromium_killed_mid_session_masks_it_as_infra_and_the_slot_recovers(served):
    engine = served.service.engine
    async with served.client() as client:
        cookie, first = await seed(client, "Dictionary--2")
        name = engine.flights[first["session_id"]].slot
        slot = next(slot for slot in engine.slots if engine.pool.name(slot) == name)
        restarts = slot.restarts
        os.kill(slot.browser.browser_pid, signal.SIGKILL)
        answer = await client.post("/computer", headers=cookie, json={"action": "click", "x": 640, "y": 300})
        verdict = (await client.post("/verify", headers=cookie)).json()
        assert answer.json()["done"] is True
        assert (verdict["mask_sample"], verdict["reward"], verdict["failure_kind"]) == (
            True, None, "infra_error[browser]"), verdict

        async def answered() -> dict[str, str]:  # each answers at once: a slow restart never outlasts another's TTL
            async def seeded():
                answer = await client.post("/seed_session", json={"task_id": "Dictionary--2"})
                assert answer.status_code in (200, 429), answer.text  # 429 while the killed slot restarts
                return answer if answer.status_code == 200 else None

            again = cookie_of(await until(seeded, 60, "a slot", every_s=0.5))
            await client.post("/terminate", headers=again, json={"status": "success", "answer": "fluke"})
            return again

        both = await asyncio.gather(*(answered() for _ in range(SLOTS)))  # every slot at once, the killed one too
        rewards = [(await client.post("/verify", headers=again)).json()["reward"] for again in both]
    assert rewards == [1.0, 1.0] and slot.restarts == restarts + 1


def raw_get(port: int, path: str, cookie: dict[str, str]) -> tuple[int, bytes]:
    """A request line sent as written: no client normalises its dots or escapes."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        conn.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nCookie: {cookie['Cookie']}\r\nConnection: close\r\n\r\n"
                     .encode())
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    return int(data.split(b" ", 2)[1]), data


async def test_screenshots_are_served_by_session_and_step_only_never_by_path(served):
    async with served.client() as client:
        cookie, first = await seed(client, "Dictionary--2")
        sid = first["session_id"]
        try:
            tries = {
                f"/sessions/{sid}/steps/../../../../../etc/passwd": 404,
                f"/sessions/{sid}/steps/..%2f..%2f..%2fetc%2fpasswd/screenshot.png": 404,
                f"/sessions/{sid}/steps/..%5c..%5cetc%5cpasswd/screenshot.png": 422,
                "/sessions/..%2f..%2f..%2fetc%2fpasswd/steps/1/screenshot.png": 404,
                "/sessions/..%5c..%5c..%5crollouts.jsonl/steps/1/screenshot.png": 403,
                f"/sessions/{sid}/../../rollouts.jsonl": 404,
                f"/sessions/{sid}/steps/0/screenshot.png": 404,
                f"/sessions/{sid}/steps/-1/screenshot.png": 404,
                f"/sessions/{sid}/steps/99/screenshot.png": 404,
                f"/sessions/{sid}/steps/1/screenshot.png/../../../../etc/hostname": 404,
            }
            for path, expected in tries.items():
                status, data = await asyncio.to_thread(raw_get, served.port, path, cookie)
                assert status == expected, (path, status, data[:300])
                assert b"root:" not in data and b"rollout_id" not in data and b"\x89PNG" not in data
            status, data = await asyncio.to_thread(raw_get, served.port, f"/sessions/{sid}/steps/1/screenshot.png",
                                                   cookie)
            assert status == 200 and b"\x89PNG" in data
        finally:
            await client.post("/close_session", headers=cookie)


async def test_a_second_call_while_one_is_answered_is_409_and_the_first_goes_on(served):
    async with served.client() as client:
        cookie, first = await seed(client, "Dictionary--2")
        try:
            slow = asyncio.ensure_future(client.post("/computer", headers=cookie,
                                                     json={"action": "wait", "seconds": 3}))
            await until(lambda: served.service.sessions.get(first["session_id"]).busy, 10, "the first call taken")
            second = await client.post("/computer", headers=cookie, json={"action": "wait", "seconds": 0})
            verdict = await client.post("/verify", headers=cookie)
            answered = await slow
        finally:
            await client.post("/close_session", headers=cookie)
    assert (second.status_code, verdict.status_code) == (409, 409)
    assert "still being answered" in one_line(second)
    assert answered.status_code == 200 and answered.json()["step"] == 2
