"""`--judge-ensemble A,B,C`: judges from profiles deciding by majority over the scripted judge, every member's verdict
kept, a split flagged, a tie masked."""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path

import pytest

from fixtures.openai_stub import OpenAIStub, error, text
from tests.test_judge_protocols import TASK, attempt
from tests.webvoyager_data import ORIGINAL, need_data
from webeval.judges.config import JudgeConfig, JudgeConfigError, Judging, with_members
from webeval.outcomes.record import JudgeError


def ensemble(tmp_path: Path, stack: ExitStack, replies: list) -> Judging:
    names = []
    for index, reply in enumerate(replies):
        stub = stack.enter_context(OpenAIStub([reply], models=(f"judge-{index}",)))
        profile = tmp_path / f"judge-{index}.json"
        profile.write_text(json.dumps({"base_url": stub.base_url, "model": f"judge-{index}", "retries": 0}))
        names.append(str(profile))
    config = with_members(JudgeConfig(protocol="webvoyager", prompts=str(ORIGINAL / "evaluation"),
                                      retries=0), ",".join(names), tmp_path)
    return Judging(config)


@need_data
async def test_the_majority_decides_and_a_split_is_flagged(tmp_path):
    with ExitStack() as stack:
        judging = ensemble(tmp_path, stack, [text("SUCCESS"), text("NOT SUCCESS"), text("It is done. SUCCESS")])
        verdict = await judging.judge(TASK, attempt(tmp_path / "a", count=2))
        await judging.close()
    assert verdict.success and verdict.judge == "ensemble" and verdict.details["disagreement"] is True
    assert verdict.reason.startswith("ensemble split 2-1")
    members = verdict.details["members"]
    assert [m["success"] for m in members.values()] == [True, False, True]
    assert all(m["protocol"] == "webvoyager" for m in members.values())


@need_data
async def test_a_member_that_fails_abstains_and_a_tie_is_masked(tmp_path):
    with ExitStack() as stack:
        judging = ensemble(tmp_path, stack, [text("SUCCESS"), error(500, "overloaded"), text("NOT SUCCESS")])
        with pytest.raises(JudgeError) as caught:
            await judging.judge(TASK, attempt(tmp_path / "a", count=2))
        await judging.close()
    assert caught.value.kind == "unparseable"
    assert "no majority (1 SUCCESS, 1 NOT SUCCESS, 1 abstained)" in str(caught.value)


def test_an_ensemble_of_one_is_refused(tmp_path):
    with pytest.raises(JudgeConfigError, match="name two or more judge profiles"):
        with_members(JudgeConfig(), "only-one", tmp_path)
