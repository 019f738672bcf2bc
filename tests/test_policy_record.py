"""Record and replay of a policy's exchanges: exact requests (screenshots stored once), no secrets, deterministic
playback, and divergence as a failure class, never a crash."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from PIL import Image

from fixtures.openai_stub import OpenAIStub, call, text
from webeval.actions import Observation
from webeval.outcomes.record import FailureClass
from webeval.policy.openai import (
    HttpTransport, OpenAIPolicy, Recorder, RecordingTransport, ReplayMissing, ReplayTransport, find_recording,
    make_adapter,
)
from webeval.policy.openai.profile import make_profile
from webeval.policy.openai.recording import expand_request, read_recording
from webeval.tasks import Task

KEY = "sk-record-test-0a1b2c3d4e5f"
SCREEN = (1280, 720)


def png(colour: str) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (64, 36), colour).save(out, format="PNG")
    return out.getvalue()


def task(origin: str) -> Task:
    return Task(id="Shop--9", site="Shop", goal="Open the kettle page.", start_url=f"{origin}/shop/")


def observations(origin: str, title_suffix: str = "") -> list[Observation]:
    return [Observation(step=1, screenshot_png=png("white"), size=SCREEN, url=f"{origin}/shop/",
                        title="Shop" + title_suffix),
            Observation(step=2, screenshot_png=png("white"), size=SCREEN, url=f"{origin}/shop/kettle",
                        title="Kettle", last_result=f"navigated to {origin}/shop/kettle")]


SCRIPT_OF = [lambda origin: call("navigate", {"url": f"{origin}/shop/kettle"}),
             lambda origin: call("terminate", {"status": "success", "answer": "12"})]


async def record(folder: Path, origin: str) -> tuple[list, OpenAIStub]:
    with OpenAIStub([make(origin) for make in SCRIPT_OF], api_key=KEY) as stub:
        profile = make_profile({"base_url": stub.base_url, "model": "stub-model"})
        recorder = Recorder(folder, (KEY,))
        recorder.header("Shop--9", f"{origin}/shop/", SCREEN, profile.model_dump(mode="json"))
        policy = OpenAIPolicy(profile, make_adapter(profile, SCREEN, None),
                              lambda: RecordingTransport(HttpTransport(profile, KEY), recorder))
        await policy.begin(task(origin))
        turns = [await policy.act(obs) for obs in observations(origin)]
        await policy.end()
    return turns, stub


async def replay(folder: Path, origin: str, title_suffix: str = "", steps: int = 2) -> list:
    path = find_recording(folder.parent.parent.parent, "Shop--9")
    header, _ = read_recording(path)
    profile = make_profile(header["profile"])
    policy = OpenAIPolicy(profile, make_adapter(profile, SCREEN, None), lambda: ReplayTransport(path, f"{origin}/shop/"),
                          name="replay")
    await policy.begin(task(origin))
    obs = observations(origin, title_suffix)
    obs += [Observation(step=3, screenshot_png=png("white"), size=SCREEN, url=f"{origin}/x", title="X")]
    turns = [await policy.act(o) for o in obs[:steps]]
    await policy.end()
    return turns


@pytest.fixture
def attempt(tmp_path) -> Path:
    folder = tmp_path / "run" / "tasks" / "Shop--9" / "attempt-1"
    folder.mkdir(parents=True)
    return folder


async def test_recording_keeps_exact_requests_and_replies_without_the_key(attempt):
    turns, stub = await record(attempt, "http://127.0.0.1:1111")
    header, entries = read_recording(attempt / "policy" / "exchanges.jsonl")
    assert header["task_id"] == "Shop--9" and header["screen"] == [1280, 720]
    assert header["profile"]["model"] == "stub-model" and header["profile"]["api_key_env"] == "OPENAI_API_KEY"
    assert [expand_request(attempt / "policy", e["request"]) for e in entries] == stub.requests
    assert [json.loads(e["reply"])["choices"][0]["message"]["tool_calls"][0]["function"]["name"] for e in entries] == [
        "navigate", "terminate"]
    assert len(list((attempt / "policy" / "images").iterdir())) == 1  # the same screenshot is stored once
    assert all(KEY.encode() not in path.read_bytes() for path in attempt.rglob("*") if path.is_file())
    sent = {name.lower(): value for name, value in stub.headers[0].items()}
    assert sent["authorization"] == f"Bearer {KEY}"  # it was used, just never written


async def test_replay_plays_back_offline_with_the_site_on_a_new_port(attempt):
    recorded, _ = await record(attempt, "http://127.0.0.1:1111")
    replayed = await replay(attempt, "http://127.0.0.1:2222")
    assert [t.end for t in replayed] == [None, None]
    assert [json.loads(t.calls[0].arguments) for t in replayed] == [
        {"url": "http://127.0.0.1:2222/shop/kettle"}, {"status": "success", "answer": "12"}]
    assert [t.usage for t in replayed] == [t.usage for t in recorded]


async def test_a_diverging_observation_ends_the_episode(attempt):
    await record(attempt, "http://127.0.0.1:1111")
    (turn,) = await replay(attempt, "http://127.0.0.1:1111", title_suffix=" (sale)", steps=1)
    assert turn.calls == [] and turn.end[0] is FailureClass.replay_diverged
    assert turn.end[1].startswith("replay diverged: turn 1: the request differs from the recording: recorded ")
    assert "Title: Shop (sale)" in turn.end[1]


async def test_an_episode_longer_than_its_recording_diverges(attempt):
    await record(attempt, "http://127.0.0.1:1111")
    turns = await replay(attempt, "http://127.0.0.1:1111", steps=3)
    assert turns[2].end == (FailureClass.replay_diverged,
                            "replay diverged: the recording ends after 2 turns, and the episode goes on")


def test_find_recording_takes_the_latest_recorded_attempt(tmp_path):
    for attempt in ("attempt-2", "attempt-10", "attempt-3"):
        (tmp_path / "tasks" / "A--1" / attempt / "policy").mkdir(parents=True)
        (tmp_path / "tasks" / "A--1" / attempt / "policy" / "exchanges.jsonl").write_text("")
    (tmp_path / "tasks" / "A--1" / "attempt-11").mkdir()  # an attempt without a recording
    assert find_recording(tmp_path, "A--1").parts[-3] == "attempt-10"
    with pytest.raises(ReplayMissing, match=f"no recording of task B--1 under {tmp_path}"):
        find_recording(tmp_path, "B--1")


async def test_recorded_text_reply_replays_as_the_same_invalid_turn(attempt):
    with OpenAIStub([text("no tools today")]) as stub:
        profile = make_profile({"base_url": stub.base_url, "model": "stub-model"})
        recorder = Recorder(attempt, ())
        recorder.header("Shop--9", "http://127.0.0.1:1111/shop/", SCREEN, profile.model_dump(mode="json"))
        policy = OpenAIPolicy(profile, make_adapter(profile, SCREEN, None),
                              lambda: RecordingTransport(HttpTransport(profile, "k"), recorder))
        await policy.begin(task("http://127.0.0.1:1111"))
        live = await policy.act(observations("http://127.0.0.1:1111")[0])
        await policy.end()
    (again,) = await replay(attempt, "http://127.0.0.1:1111", steps=1)
    assert live.calls == again.calls == [] and again.raw == live.raw
