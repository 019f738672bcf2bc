"""The WebVoyager judge over a scripted OpenAI-compatible endpoint (real HTTP, real `openai` client), the reference
judge, their combination, profiles and keys."""

from __future__ import annotations

import base64
import io
import json
from dataclasses import replace
from pathlib import Path

import pytest
from PIL import Image

from fixtures.openai_stub import OpenAIStub, Reply, error, text
from webeval.judges.config import (
    JudgeConfig, JudgeConfigError, Judging, check_judge_endpoint, parse_kinds, with_profile,
)
from webeval.judges.protocols.webeval import MAX_SCREENSHOTS, WebevalJudge, parse_verdict
from webeval.judges.reference import golden_met, reference_verdict
from webeval.models import Endpoint, Unreadable
from webeval.outcomes.evidence import Evidence
from webeval.outcomes.record import JudgeError
from webeval.tasks import Task

SECRET = "sk-test-5ecret-judge-key"
TASK = Task(id="Allrecipes--3", site="Allrecipes", goal="Find vegan cookies with over 60 reviews.",
            start_url="https://www.allrecipes.com/",
            reference_answers=["'Vegan Chocolate Chip, Oatmeal, and Nut Cookies', 4.9 star, 67 viewers (> 60)"])


def verdict_reply(success: bool, reasoning: str = "The screenshot shows it.") -> Reply:
    return text(json.dumps({"reasoning": reasoning, "verdict": "SUCCESS" if success else "NOT SUCCESS"}))


def shots(folder: Path, count: int) -> list[str]:
    names = []
    for i in range(count):
        buffer = io.BytesIO()
        Image.new("RGB", (8, 8), (i * 7 % 256, 0, 0)).save(buffer, "PNG")
        name = f"step-{i + 1:03d}.png"
        (folder / name).write_bytes(buffer.getvalue())
        names.append(name)
    return names


def evidence(folder: Path, count: int = 3, answer: str | None = "Vegan Chocolate Chip, Oatmeal, and Nut Cookies, "
             "4.9 star, 67 viewers") -> Evidence:
    return Evidence(task_id=TASK.id, goal=TASK.goal, answer=answer, screenshots=shots(folder, count), folder=folder)


def sent_images(request: dict) -> list[bytes]:
    parts = request["messages"][1]["content"]
    return [base64.b64decode(p["image_url"]["url"].split(",", 1)[1]) for p in parts if p["type"] == "image_url"]


@pytest.fixture
def stub():
    server = OpenAIStub([verdict_reply(True)], models=("judge-model",), api_key=SECRET)
    with server:
        yield server


def judge_for(stub: OpenAIStub, **changes) -> WebevalJudge:
    last = changes.pop("last", None)
    endpoint = Endpoint(base_url=stub.base_url, model="judge-model", api_key=SECRET, timeout_s=10, retries=0)
    for key, value in changes.items():
        endpoint = Endpoint(**{**endpoint.__dict__, key: value})
    return WebevalJudge(endpoint, last)


# --- the protocol ------------------------------------------------------------------------------------------------

async def test_a_success_verdict_with_the_task_answer_and_screenshots(stub, tmp_path):
    stub.script = [verdict_reply(True, "The recipe page shows 4.9 stars and 67 reviews.")]
    judge = judge_for(stub)
    proof = evidence(tmp_path)
    verdict = await judge.judge(TASK, proof)
    await judge.close()
    assert verdict.success and verdict.reason == "The recipe page shows 4.9 stars and 67 reviews."
    assert verdict.judge == verdict.protocol == "webeval" and verdict.model == "judge-model" and verdict.raw
    request = stub.requests[0]
    assert request["model"] == "judge-model" and request["temperature"] == 0
    assert "screenshots are genuine" in request["messages"][0]["content"]
    intro = request["messages"][1]["content"][0]["text"]
    assert TASK.goal in intro and proof.answer in intro and "The last 3 screenshots" in intro
    assert sent_images(request) == [(tmp_path / n).read_bytes() for n in proof.screenshots]
    assert {k.lower(): v for k, v in stub.headers[0].items()}["authorization"] == f"Bearer {SECRET}"


async def test_the_goal_the_agent_saw_is_the_one_judged(stub, tmp_path):
    proof = evidence(tmp_path).model_copy(update={"goal": "Find a hotel for March 3-5, 2031"})
    judge = judge_for(stub)
    verdict = await judge.judge(TASK, proof)
    await judge.close()
    assert "Find a hotel for March 3-5, 2031" in stub.requests[0]["messages"][1]["content"][0]["text"]
    assert verdict.details["goal"] == "Find a hotel for March 3-5, 2031"


async def test_not_success_is_a_failed_verdict_with_the_judges_reason(stub, tmp_path):
    stub.script = [verdict_reply(False, "The answer names a recipe with 12 reviews.")]
    judge = judge_for(stub)
    verdict = await judge.judge(TASK, evidence(tmp_path))
    await judge.close()
    assert not verdict.success and verdict.reason == "The answer names a recipe with 12 reviews."
    assert "failure_class" not in verdict.details


async def test_all_screenshots_by_default_but_bounded(stub, tmp_path):
    judge = judge_for(stub)
    proof = evidence(tmp_path, MAX_SCREENSHOTS + 5)
    await judge.judge(TASK, proof)
    await judge.close()
    images = sent_images(stub.requests[0])
    assert len(images) == MAX_SCREENSHOTS
    assert images[-1] == (tmp_path / proof.screenshots[-1]).read_bytes()
    assert images[0] == (tmp_path / proof.screenshots[5]).read_bytes()


async def test_the_last_k_screenshots(stub, tmp_path):
    judge = judge_for(stub, last=2)
    proof = evidence(tmp_path, 6)
    verdict = await judge.judge(TASK, proof)
    await judge.close()
    assert sent_images(stub.requests[0]) == [(tmp_path / n).read_bytes() for n in proof.screenshots[-2:]]
    assert verdict.details["screenshots"] == proof.screenshots[-2:]


@pytest.mark.parametrize("content, success", [
    ('```json\n{"reasoning": "ok", "verdict": "SUCCESS"}\n```', True),
    ('Here is my verdict: {"reasoning": "ok", "verdict": "success"}', True),
    ('{"reasoning": "ok", "verdict": "SUCCESS"}', True),
    ('{"thought": "ok", "verdict": "SUCCESS"}', True),  # no 'reasoning' key: the verdict decides
    ('{"verdict": "NOT SUCCESS"}', False),
    ('{"analysis": "ok", "decision": "not_success", "confidence": 0.4}', False),
    ("The answer matches the last screenshot.\n\nSUCCESS", True),
    ("Thoughts: the price is not shown anywhere, so this is NOT SUCCESS", False),
    ("It looked like SUCCESS at first, but the date is wrong. Verdict: NOT SUCCESS", False),
])
def test_a_verdict_is_read_from_what_decides_it(content, success):
    assert parse_verdict(content)[0] is success


@pytest.mark.parametrize("content", ["The agent succeeded.", '{"reasoning": "ok", "verdict": "PARTIAL"}',
                                     '{"reasoning": "ok", "verdict": "SUCC', ""])
def test_a_reply_with_no_verdict_is_unreadable(content):
    with pytest.raises(Unreadable):
        parse_verdict(content)


async def test_the_thought_verdict_reply_passes(stub, tmp_path):
    stub.script = [text(json.dumps({"thought": "The recipe and rating are on screen.", "verdict": "SUCCESS"}))]
    judge = judge_for(stub)
    verdict = await judge.judge(TASK, evidence(tmp_path))
    await judge.close()
    assert verdict.success and verdict.reason == "The recipe and rating are on screen." and len(stub.requests) == 1


async def test_a_free_text_not_success_reply_fails(stub, tmp_path):
    stub.script = [text("The screenshots show a different recipe.\n\nNOT SUCCESS")]
    judge = judge_for(stub)
    verdict = await judge.judge(TASK, evidence(tmp_path))
    await judge.close()
    assert not verdict.success and "different recipe" in verdict.reason


async def test_garbage_is_asked_again_then_the_judge_has_failed_as_unparseable(stub, tmp_path):
    stub.script = [text("lorem ipsum"), text("dolor sit amet"), text("consectetur")]
    judge = judge_for(stub)
    with pytest.raises(JudgeError) as failed:
        await judge.judge(TASK, evidence(tmp_path))
    await judge.close()
    assert failed.value.kind == "unparseable" and len(stub.requests) == 3
    assert "could not be read" in stub.requests[1]["messages"][-1]["content"]  # the re-ask says why


async def test_a_readable_answer_to_a_re_ask_is_the_verdict(stub, tmp_path):
    stub.script = [text(""), verdict_reply(False, "wrong recipe")]
    judge = judge_for(stub)
    verdict = await judge.judge(TASK, evidence(tmp_path))
    await judge.close()
    assert not verdict.success and verdict.reason == "wrong recipe" and verdict.details["asked"] == 2


@pytest.mark.parametrize("reply, message", [
    (error(500, f"upstream broke for key {SECRET}"), "HTTP 500"),
    (error(429, "slow down"), "HTTP 429"),
    (error(404, "no such model"), "HTTP 404"),
    (Reply(drop=True), "connection failed"),
    (Reply(raw_body="<html>gateway</html>"), "the response is not a chat completion"),
    (Reply(raw_body='{"object": "chat.completion", "choices": []}'), "the response is not a chat completion"),
    (Reply(raw_body='{"choices": [{"index": 0}]}'), "the response is not a chat completion"),
    (Reply(delay_s=3.0, content="{}"), "no reply within 1 s"),
])
async def test_transport_http_timeout_and_schema_errors_are_judge_errors(stub, tmp_path, reply, message):
    stub.script = [reply]
    judge = judge_for(stub, timeout_s=1.0)
    with pytest.raises(JudgeError) as info:
        await judge.judge(TASK, evidence(tmp_path))
    await judge.close()
    assert message in str(info.value)
    assert f"judge judge-model at {stub.base_url}" in str(info.value)
    assert SECRET not in str(info.value)


async def test_a_refused_key_is_a_judge_error_that_never_shows_the_key(stub, tmp_path):
    judge = judge_for(stub, api_key="sk-wrong-" + SECRET)
    with pytest.raises(JudgeError, match="refused the API key") as info:
        await judge.judge(TASK, evidence(tmp_path))
    await judge.close()
    assert SECRET not in str(info.value)


async def test_an_unreachable_endpoint_is_a_judge_error(tmp_path):
    with OpenAIStub() as gone:
        url = gone.base_url
    judge = WebevalJudge(Endpoint(base_url=url, model="m", timeout_s=5, retries=0))
    with pytest.raises(JudgeError, match="connection failed"):
        await judge.judge(TASK, evidence(tmp_path))
    await judge.close()


# --- the reference judge and the combination -------------------------------------------------------------------

@pytest.mark.parametrize("golden, answer, met", [
    ("'Vegan Chocolate Chip, Oatmeal, and Nut Cookies', 4.9 star, 67 viewers (> 60)",
     "Vegan Chocolate Chip, Oatmeal, and Nut Cookies: 4.9 star from 67 viewers", True),
    ("'Vegan Chocolate Chip, Oatmeal, and Nut Cookies', 4.9 star, 67 viewers (> 60)",
     "Vegan Chocolate Chip, Oatmeal, and Nut Cookies, 4.8 star, 67 viewers", False),
    ("'Amherst and 7th' or 'Main Street Middle'", "The nearest stop is Main Street Middle.", True),
    ("'Amherst and 7th' or 'Main Street Middle'", "The nearest stop is Main Street.", False),
    ("11.2", "The answer is 11.2.", True),
    ("3", "There are 13 such papers.", False),
    ("Mon, 27 Mar 2023 17:46:54 UTC", "It was submitted Mon, 27 Mar 2023 17:46:54 UTC", True),
    ("$9/month; Pro Account: Get a PRO badge on your profile", "It is $9/month. Pro Account: get a PRO badge on "
     "your profile", True),
])
def test_golden_answers(golden, answer, met):
    assert golden_met(answer, golden) is met


def test_the_reference_judge_needs_a_golden_answer():
    plain = TASK.model_copy(update={"reference_answers": None})
    with pytest.raises(JudgeError, match="task Allrecipes--3 has no golden reference answer"):
        reference_verdict(plain, "anything")
    assert not reference_verdict(TASK, None).success
    verdict = reference_verdict(TASK, "Vegan Chocolate Chip, Oatmeal, and Nut Cookies, 4.9 star, 67 viewers")
    assert verdict.success and verdict.judge == "reference" and verdict.details["matched"]


async def test_reference_alone_calls_no_model(tmp_path):
    judging = Judging(JudgeConfig(kinds=("reference",)))
    verdict = await judging.judge(TASK, evidence(tmp_path))
    assert verdict.success and verdict.judge == "reference"


async def test_both_judges_pass_a_golden_task_only_together(stub, tmp_path):
    config = JudgeConfig(kinds=("model", "reference"), base_url=stub.base_url, model="judge-model",
                         api_key_env="JUDGE_KEY", retries=0)
    judging = Judging(config, {"JUDGE_KEY": SECRET})
    both = await judging.judge(TASK, evidence(tmp_path))
    assert both.success and both.judge == "webeval+reference" and both.details["reference"]["matched"]
    wrong = await judging.judge(TASK, evidence(tmp_path, answer="Some other cookies"))
    assert not wrong.success and wrong.judge == "reference"
    assert len(stub.requests) == 1  # a golden mismatch needs no model call
    stub.script = [verdict_reply(False, "The screenshots show 12 reviews.")]
    disagree = await judging.judge(TASK, evidence(tmp_path))
    assert not disagree.success and "12 reviews" in disagree.reason
    no_golden = TASK.model_copy(update={"reference_answers": None})
    stub.script = [verdict_reply(True)]
    assert (await judging.judge(no_golden, evidence(tmp_path, answer="x"))).success
    await judging.close()


# --- configuration ------------------------------------------------------------------------------------------------

def test_judge_kinds():
    assert parse_kinds("model") == ("model",)
    assert parse_kinds("model,reference") == parse_kinds("model+reference") == ("model", "reference")
    with pytest.raises(JudgeConfigError, match="--judge 'gpt': use model, reference, or both"):
        parse_kinds("gpt")


def test_profiles_from_a_file_fill_in_what_options_leave(tmp_path, monkeypatch):
    path = tmp_path / "judge-profiles.toml"
    path.write_text('[local]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "qwen-vl"\napi_key_env = "LOCAL_KEY"\n'
                    'temperature = 0.2\n')
    monkeypatch.setenv("WEBEVAL_JUDGE_PROFILES", str(path))
    config = with_profile(JudgeConfig(profile="local", model="override"))
    assert (config.base_url, config.model, config.api_key_env, config.temperature) == \
        ("http://127.0.0.1:9/v1", "override", "LOCAL_KEY", 0.2)
    assert with_profile(JudgeConfig(profile="openai-gpt-4o")).model == "gpt-4o"
    with pytest.raises(JudgeConfigError, match="--judge-profile 'nope' is unknown: use one of local, openai-gpt-4o"):
        with_profile(JudgeConfig(profile="nope"))


@pytest.mark.parametrize("body, message", [
    ('[p]\napi_key = "sk-1"\n', "profile 'p' holds an API key: name its variable with api_key_env"),
    ('[p]\nmodle = "x"\n', "profile 'p' has unknown key 'modle'"),
    ("[p\n", "invalid TOML"),
])
def test_bad_profile_files_are_named(tmp_path, monkeypatch, body, message):
    path = tmp_path / "profiles.toml"
    path.write_text(body)
    monkeypatch.setenv("WEBEVAL_JUDGE_PROFILES", str(path))
    with pytest.raises(JudgeConfigError) as info:
        with_profile(JudgeConfig(profile="p"))
    assert str(info.value).startswith(str(path)) and message in str(info.value)


def test_a_key_variable_that_is_not_set_is_a_configuration_error():
    config = JudgeConfig(base_url="http://127.0.0.1:9/v1", model="m", api_key_env="NO_SUCH_JUDGE_KEY")
    with pytest.raises(JudgeConfigError, match=r"the judge's API key variable \$NO_SUCH_JUDGE_KEY is not set"):
        config.endpoint({})
    endpoint = config.endpoint({"NO_SUCH_JUDGE_KEY": SECRET})
    assert SECRET not in json.dumps(config.public()) and SECRET not in config.describe()
    assert endpoint.redact(f"key {SECRET} leaked") == "key *** leaked"


def test_the_endpoint_check_stops_on_a_bad_key_an_unserved_model_or_no_endpoint(stub):
    config = JudgeConfig(base_url=stub.base_url, model="judge-model", api_key_env="JUDGE_KEY", retries=0)
    check_judge_endpoint(config, {"JUDGE_KEY": SECRET})
    with pytest.raises(JudgeConfigError, match="refused the API key from \\$JUDGE_KEY: HTTP 401") as refused:
        check_judge_endpoint(config, {"JUDGE_KEY": "sk-wrong-key-4821"})
    assert "sk-wrong-key-4821" not in str(refused.value)
    with pytest.raises(JudgeConfigError, match="does not serve model 'gpt-9'; it serves: judge-model"):
        check_judge_endpoint(replace(config, model="gpt-9"), {"JUDGE_KEY": SECRET})
    with OpenAIStub() as gone:
        url = gone.base_url
    with pytest.raises(JudgeConfigError, match=f"the judge endpoint {url} is unreachable: "):
        check_judge_endpoint(JudgeConfig(base_url=url, model="m", retries=0))
