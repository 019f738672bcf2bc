"""The `rubric` protocol over the scripted judge: a ruling per fact, success only when every group holds, screenshots
chosen by relevance with the last one kept, bot walls as infra[site_blocked]; and the rubric tasks on the offline
sites passing with the oracle under it."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest

from fixtures.openai_stub import OpenAIStub, text
from tests.conftest import ROOT
from tests.runs import run
from tests.test_judge_protocols import attempt
from webeval.judges.config import JudgeConfig, Judging
from webeval.judges.decide import decide
from webeval.outcomes.record import JudgeError, Outcome
from webeval.tasks import Task

TASK = Task(id="Shop-rubric--9", site="Shop", goal="Find the laptop's name and weight.",
            start_url="https://shop.example/", rubric=[["The name is Lumen Book 14."],
                                                         ["The weight is 1.24 kg.", "The weight is in kilograms."]])


def scripted(images: list[Path], scores: dict[int, int] | None = None, rulings: dict[str, bool] | None = None,
             blocked: bool = False):
    """A judge that scores the i-th screenshot scores[i] (else 1) and rules on every fact listed to it."""
    urls = ["data:image/png;base64," + base64.b64encode(path.read_bytes()).decode() for path in images]

    def reply(request: dict):
        if request["messages"][0]["content"].startswith("You help judge"):
            index = urls.index(request["messages"][1]["content"][1]["image_url"]["url"])
            return text(f"It shows a product page.\nScore: {(scores or {}).get(index, 1)}")
        ids = re.findall(r"^(\d+\.\d+): ", request["messages"][1]["content"][0]["text"], re.M)
        return text(json.dumps({"facts": {i: {"holds": (rulings or {}).get(i, True), "why": "seen"} for i in ids},
                                "blocked": blocked}))

    return reply


async def judged(tmp_path: Path, count: int = 8, **script):
    evidence = attempt(tmp_path / "a", count=count)
    with OpenAIStub(scripted(evidence.screenshot_paths(), **script), models=("judge-model",)) as stub:
        judge = Judging(JudgeConfig(base_url=stub.base_url, model="judge-model", protocol="rubric", retries=0))
        try:
            return await judge.judge(TASK, evidence), stub.requests
        finally:
            await judge.close()


async def test_every_group_holds_and_the_screenshots_are_chosen_by_relevance(tmp_path):
    verdict, requests = await judged(tmp_path, scores={1: 5, 2: 3, 4: 4, 6: 2})
    assert verdict.success and verdict.protocol == "rubric" and verdict.details["groups"] == [True, True]
    assert set(verdict.details["facts"]) == {"1.1", "2.1", "2.2"}
    # scored 5, 4 and 3 kept (at most 3 besides the last), 2 and 1 dropped; the last always kept
    assert verdict.details["screenshots"] == ["step-002.png", "step-003.png", "step-005.png", "step-008.png"]
    final = requests[-1]["messages"][1]["content"]
    assert "Visited URLs:\nhttps://www.allrecipes.com/search?q=vegan+cookies" in final[0]["text"]
    assert sum(part["type"] == "image_url" for part in final) == 4 and len(requests) == 7 + 1


async def test_one_fact_that_fails_fails_its_group_and_the_task(tmp_path):
    verdict, _ = await judged(tmp_path, count=2, rulings={"2.2": False})
    assert not verdict.success and verdict.details["groups"] == [True, False]
    assert verdict.details["facts"]["2.2"]["holds"] is False and "2.2 does not hold" in verdict.reason


async def test_a_bot_wall_is_infra_site_blocked(tmp_path):
    evidence = attempt(tmp_path / "a", count=2)
    with OpenAIStub(scripted(evidence.screenshot_paths(), blocked=True), models=("judge-model",)) as stub:
        judge = Judging(JudgeConfig(base_url=stub.base_url, model="judge-model", protocol="rubric", retries=0))
        decision = await decide(TASK, evidence, judge.judge)
        walled = evidence.model_copy(update={"titles": ["Just a moment..."]})
        before = len(stub.requests)
        title = await decide(TASK, walled, judge.judge)
        await judge.close()
    assert decision.outcome is Outcome.infra_error and decision.kind == "site_blocked"
    assert title.outcome is Outcome.infra_error and len(stub.requests) == before  # seen in the title: no call


async def test_a_reply_that_skips_a_fact_is_asked_again_then_judge_failed(tmp_path):
    evidence = attempt(tmp_path / "a", count=2)
    with OpenAIStub([text(json.dumps({"facts": {"1.1": {"holds": True}}}))], models=("judge-model",)) as stub:
        judge = Judging(JudgeConfig(base_url=stub.base_url, model="judge-model", protocol="rubric", retries=0))
        with pytest.raises(JudgeError) as caught:
            await judge.judge(TASK, evidence)
        await judge.close()
    assert caught.value.kind == "unparseable" and "no ruling on every fact (1.1, 2.1, 2.2)" in str(caught.value)
    assert len(stub.requests) == 3


def test_rubric_tasks_pass_with_the_oracle_under_the_rubric_protocol(tmp_path):
    def reply(request: dict):
        if request["messages"][0]["content"].startswith("You help judge"):
            return text("Score: 4")
        body = request["messages"][1]["content"][0]["text"]
        facts = re.findall(r"^(\d+\.\d+): .* is (.+)\.$", body, re.M)
        answer = re.search(r"Final answer of the agent: (.*)", body)[1]
        return text(json.dumps({"facts": {i: {"holds": value in answer, "why": "in the answer"}
                                          for i, value in facts}, "blocked": False}))

    with OpenAIStub(reply, models=("judge-model",)) as stub:
        profile = tmp_path / "judge.json"
        profile.write_text(json.dumps({"base_url": stub.base_url, "model": "judge-model"}))
        job = run(["suites/rubric", "-n", "2", "-p", "no:randomly", "-k", "Dictionary-rubric--0 or News-rubric--1",
                   "--judge-profile", str(profile), "--run-dir", str(tmp_path / "run")], tmp_path / "run")
    assert "2 passed" in job.output, job.output[-1500:]
    records = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    groups = {r["task_id"]: r["verdict"]["details"]["groups"] for r in records}
    assert groups == {"Dictionary-rubric--0": [True, True], "News-rubric--1": [True, True, True]}


def test_the_rubric_tasks_are_twelve_or_more_with_two_to_four_groups():
    rows = [json.loads(line) for path in sorted((ROOT / "webeval/benchmarks/rubric/task_files").glob("*.jsonl"))
            for line in path.read_text().splitlines()]
    assert len(rows) >= 12 and all(2 <= len(row["rubric"]) <= 4 for row in rows)
    assert all(f"facts-{sum(map(len, row['rubric']))}" in row["tags"] for row in rows)
