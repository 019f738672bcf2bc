"""Each family's documented profile drives the local suite's oracle-checked tasks through the scripted server, as a
user runs it: `pytest suites/local --policy openai --policy-profile docs/profiles/<family>.toml`. The scripted server
plays the family's exact reply format for the moves of the task's own solution (its oracle, acted out here first at
the suite's screen size), converted into the family's coordinate space for the image it was sent. Every task passes
its verifier and every click lands within one pixel of the oracle's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from fixtures.openai_stub import OpenAIStub, Reply
from tests.conftest import ROOT
from tests.families import FAMILIES, PROFILES, Act, family_profile, latest_image, reply
from webeval.agent.episode import Episode
from webeval.agent.loop import AgentLoop, Budgets
from webeval.benchmarks.local import local_population
from webeval.benchmarks.local.offline_sites import OfflineSites
from webeval.benchmarks.local.site_server import SiteServer
from webeval.policy.openai.image import Frame, frame_for
from webeval.policy.oracle import OraclePolicy

SCREEN = (1280, 720)
SELECTED = ("Shop--3", "Shop--1")  # clicks only; search box, typing, Enter, click
HOSTED_KEY = "sk-recipe-5ecret-4d2c9e"
_, TASKS = local_population()


@pytest.fixture(scope="module")
async def plans(runtime, tmp_path_factory) -> dict[str, list[dict[str, Any]]]:
    """The moves of each selected task's solution (screen pixels), by goal: the oracle acting in a real browser."""
    await runtime.ready()
    found = {}
    with SiteServer() as server:
        for task in (t for t in TASKS if t.id in SELECTED):
            prepared = OfflineSites(server).prepare(task)
            folder = tmp_path_factory.mktemp(task.id)
            session = await runtime.browser.new_session(folder)
            try:
                await session.context.add_cookies(prepared.cookies)

                oracle = OraclePolicy(session.locate, prepared.rewrite_url, session.page_ready)
                episode = await AgentLoop(session, runtime.device, oracle, Budgets(max_steps=12)).run(
                    prepared.task, Episode(task_id=task.id, folder=folder))
            finally:
                await session.close()
            assert episode.status == "success", episode.reason
            found[task.goal] = [step.actions[0] for step in episode.steps]
    return found


def goal_and_step(stub: OpenAIStub, request: dict[str, Any]) -> tuple[str, int]:
    """The task (by its goal, in the opening message) and how many replies the model gave in it so far."""
    if "messages" in request:
        opening = request["messages"][1]["content"][0]["text"]
        return opening.removeprefix("Task: "), sum(1 for m in request["messages"] if m["role"] == "assistant")
    first, depth = stub.first_request(request), 0
    while request.get("previous_response_id") in stub.responses:
        request, depth = stub.responses[request["previous_response_id"]], depth + 1
    return first["input"][0]["content"][0]["text"].removeprefix("Task: "), depth


def player(family: str, plans: dict[str, list[dict[str, Any]]], holder: dict):
    """The family's model: the solution's next move, in its format, its points in its space for the image sent."""
    def script(request: dict[str, Any]) -> Reply:
        stub, profile = holder["stub"], holder["profile"]
        goal, step = goal_and_step(stub, request)
        move = plans[goal][step]
        if move.get("tool") == "terminate":
            return reply(family, Act("answer", text=move["answer"]))
        image, _ = latest_image(request)
        frame = Frame(SCREEN, image.size, profile.coordinate_space or image.size)
        if move["action"] == "click":
            return reply(family, Act("click", *frame.to_space(move["x"], move["y"])))
        if move["action"] == "type":
            return reply(family, Act("type", text=move["text"]))
        if move["action"] == "key":
            return reply(family, Act("key", keys=tuple(move["keys"])))
        return reply(family, Act("wait"))

    return script


def trajectory(run_dir: Path, record: dict[str, Any]) -> list[dict[str, Any]]:
    lines = (run_dir / record["path"] / "trajectory.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


@pytest.mark.parametrize("family", list(FAMILIES))
def test_a_family_profile_drives_the_local_suite_with_every_click_on_target(plans, family, tmp_path):
    holder: dict = {}
    model = family_profile(family, "http://127.0.0.1:9/v1").model
    with OpenAIStub(player(family, plans, holder), models=(model,), api_key=HOSTED_KEY) as stub:
        holder["stub"], holder["profile"] = stub, family_profile(family, stub.base_url)
        run_dir = tmp_path / "run"
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
        env.update(OPENAI_API_KEY=HOSTED_KEY, VLLM_API_KEY=HOSTED_KEY)
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "suites/local", "-p", "no:xdist", "-k", " or ".join(SELECTED),
             "--run-dir", str(run_dir), "--policy", "openai", "--policy-profile", str(PROFILES / FAMILIES[family]),
             "--policy-base-url", stub.base_url, "--dump-observation"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    records = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert {r["task_id"]: r["outcome"] for r in records} == dict.fromkeys(SELECTED, "passed"), proc.stdout[-3000:]
    for record in records:
        goal = next(t.goal for t in TASKS if t.id == record["task_id"])
        done = [action for step in trajectory(run_dir, record) for action in step["actions"]]
        clicks = [(a["x"], a["y"]) for a in done if a.get("action") == "click"]
        wanted = [(m["x"], m["y"]) for m in plans[goal] if m.get("action") == "click"]
        assert len(clicks) == len(wanted) and all(abs(cx - wx) <= 1 and abs(cy - wy) <= 1 for (cx, cy), (wx, wy)
                                                  in zip(clicks, wanted)), (clicks, wanted)
        dumped = sorted((run_dir / record["path"] / "model-input").glob("step-*.json"))
        facts = json.loads(dumped[0].read_text())
        sent = frame_for(holder["profile"], SCREEN).image
        assert len(dumped) == record["steps"] and (facts["screen"], facts["image"]) == (list(SCREEN), list(sent))
        # The model got its resized image; the trajectory (judge, report) keeps the full-size lossless screenshot.
        kept = Image.open(run_dir / record["path"] / "step-001.png")
        assert (kept.format, kept.size) == ("PNG", SCREEN)
    profile = holder["profile"]
    assert f"serving recipe: {profile.recipe.describe()}" in proc.stdout
    assert_the_family_spoke_its_own_way(family, stub, run_dir, records)
    assert HOSTED_KEY not in proc.stdout + proc.stderr
    assert not [p for p in run_dir.rglob("*") if p.is_file() and HOSTED_KEY.encode() in p.read_bytes()]


def assert_the_family_spoke_its_own_way(family: str, stub: OpenAIStub, run_dir: Path,
                                        records: list[dict[str, Any]]) -> None:
    """What only this family does: the Responses API chained by response id, reasoning counted and not sent back,
    a text grammar with no tools."""
    if family == "computer-use":
        assert set(stub.paths) == {"/responses"}
        openings = [r for r in stub.requests if "previous_response_id" not in r]
        assert len(openings) == len(SELECTED) and all(r["tools"][0]["type"] == "computer_use_preview"
                                                      for r in stub.requests)
    else:
        assert set(stub.paths) == {"/chat/completions"}
    if family == "ui-tars":
        assert not any("tools" in r for r in stub.requests)
    if family == "reasoning":
        steps = [step for record in records for step in trajectory(run_dir, record)]
        assert all(step["usage"]["reasoning_tokens"] == 42 and "<reasoning of the" in step["raw"] for step in steps)
        assert sum(record["usage"]["completion_tokens"] for record in records) == 20 * len(steps)
        sent_back = [m for r in stub.requests for m in r["messages"] if m["role"] == "assistant"]
        assert sent_back and not any("reasoning_content" in m for m in sent_back)  # reasoning_history = "drop"
