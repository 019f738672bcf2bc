"""The one model-endpoint layer (webeval.models) at both of its doors, the policy's transport and the judge, over the
scripted endpoint (real HTTP, the real `openai` client): one retry policy, one preflight, one re-ask."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import replace

import pytest

from fixtures.openai_stub import OpenAIStub, Reply, error, text
from tests.conftest import ROOT
from tests.test_policy_client import FlakyModelList, NoModelList
from webeval.judges.config import JudgeConfig, JudgeConfigError, check_judge_endpoint
from webeval.judges.protocols.webeval import WebevalJudge
from webeval.models import Endpoint, PreflightError
from webeval.outcomes.evidence import Evidence
from webeval.outcomes.record import InfraError, JudgeError
from webeval.policy.openai import HttpTransport, PolicyAuthError, check_policy_endpoint
from webeval.policy.openai.profile import make_profile
from webeval.tasks import Task

KEY = "sk-endpoint-test-7c1e9b4d"
VERDICT = text(json.dumps({"reasoning": "shown", "verdict": "SUCCESS"}))
TASK = Task(id="Lab--0", site="Lab", goal="Find the answer.", start_url="https://lab.example/")
DOORS = ("policy", "judge")
# the kind each door gives a failure: (429/5xx after the retries, connection refused after them, a refused key)
KINDS = {"policy": ("policy_unavailable", "policy_unavailable", "policy_auth"), "judge": ("http", "transport", "auth")}


async def call(door: str, base_url: str, tmp_path, key: str = KEY, **settings) -> str:
    """One call through the door's own code path, to the end: the reply's text, or the door's own error."""
    settings = {"retries": 2, "backoff_s": 0.05, **settings}
    if door == "policy":
        profile = make_profile({"base_url": base_url, "model": "stub-model", **settings})
        transport = HttpTransport(profile, key)
        try:
            return (await transport.complete({"model": "stub-model", "messages": []})).text
        finally:
            await transport.close()
    judge = WebevalJudge(Endpoint(base_url, "stub-model", key, timeout_s=10, **settings))
    try:
        evidence = Evidence(task_id=TASK.id, goal=TASK.goal, answer="42", screenshots=[], folder=tmp_path)
        return (await judge.judge(TASK, evidence)).raw
    finally:
        await judge.close()


def kind_of(error: Exception) -> str:
    assert isinstance(error, (InfraError, JudgeError)), error
    assert "\n" not in str(error) and KEY not in str(error)
    return error.kind


class Timed:
    """A script that answers in turn and notes when each request arrived: the waits between attempts, measured at
    the server."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.arrivals: list[float] = []

    def __call__(self, request: dict) -> Reply:
        self.arrivals.append(time.monotonic())
        return self.replies[min(len(self.arrivals), len(self.replies)) - 1]

    @property
    def gaps(self) -> list[float]:
        return [later - earlier for earlier, later in zip(self.arrivals, self.arrivals[1:])]


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("header, seconds", [("Retry-After", "1"), ("retry-after-ms", "600")])
async def test_a_429_waits_as_long_as_the_server_asks(door, header, seconds, tmp_path):
    script = Timed(error(429, "slow down", **{header: seconds}), VERDICT)
    with OpenAIStub(script) as stub:
        reply = await call(door, stub.base_url, tmp_path, backoff_s=0.0)
    asked = float(seconds) / (1000 if header.endswith("-ms") else 1)
    assert "SUCCESS" in reply and len(stub.requests) == 2 and asked <= script.gaps[0] < asked + 1


@pytest.mark.parametrize("door", DOORS)
async def test_a_429_asking_longer_than_the_cap_gives_up_at_once(door, tmp_path):
    with OpenAIStub([error(429, "quota", **{"Retry-After": "3600"})]) as stub:
        with pytest.raises(Exception) as caught:
            await call(door, stub.base_url, tmp_path, max_wait_s=5)
    assert len(stub.requests) == 1  # no wait of 5 s either: that would have been followed by a second request
    assert kind_of(caught.value) == KINDS[door][0]
    assert "HTTP 429: quota; it asked to wait 3600 s, more than max_wait_s 5" in str(caught.value)


@pytest.mark.parametrize("door", DOORS)
async def test_503_then_success_with_a_doubling_wait(door, tmp_path):
    script = Timed(error(503, "loading"), error(503, "loading"), VERDICT)
    with OpenAIStub(script) as stub:
        reply = await call(door, stub.base_url, tmp_path, backoff_s=0.2)
    assert "SUCCESS" in reply and len(stub.requests) == 3
    assert 0.2 <= script.gaps[0] < 0.2 + 0.5 and 0.4 <= script.gaps[1] < 0.4 + 0.5


@pytest.mark.parametrize("door", DOORS)
async def test_503_past_the_retries_names_the_last_answer_and_the_attempts(door, tmp_path):
    with OpenAIStub([error(503, "still loading")]) as stub:
        with pytest.raises(Exception) as caught:
            await call(door, stub.base_url, tmp_path, retries=1)
    assert len(stub.requests) == 2 and kind_of(caught.value) == KINDS[door][0]
    assert str(caught.value).endswith(f"stub-model at {stub.base_url}: HTTP 503: still loading (2 attempts)")


@pytest.mark.parametrize("door", DOORS)
async def test_a_stopped_server_is_retried_then_unavailable(door, tmp_path):
    stub = OpenAIStub().start()
    stub.stop()  # a real server that was there and is gone: its port refuses the connection
    began = time.monotonic()
    with pytest.raises(Exception) as caught:
        await call(door, stub.base_url, tmp_path, retries=2, backoff_s=0.1)
    assert time.monotonic() - began >= 0.1 + 0.2  # two waits: the connection was tried three times
    assert kind_of(caught.value) == KINDS[door][1]
    assert "connection failed" in str(caught.value) and str(caught.value).endswith("(3 attempts)")


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("status", [401, 403])
async def test_a_refused_key_is_never_retried(door, status, tmp_path):
    with OpenAIStub([error(status, f"Incorrect API key provided: {KEY}")]) as stub:
        with pytest.raises(Exception) as caught:
            await call(door, stub.base_url, tmp_path, retries=3)
    assert len(stub.requests) == 1 and kind_of(caught.value) == KINDS[door][2]
    assert "refused the API key" in str(caught.value) and f"(HTTP {status})" in str(caught.value)
    if door == "policy":
        assert isinstance(caught.value, PolicyAuthError)  # the session stops


@pytest.mark.parametrize("door", DOORS)
async def test_another_client_error_is_never_retried(door, tmp_path):
    with OpenAIStub([error(400, "image input is not supported")]) as stub:
        with pytest.raises(Exception) as caught:
            await call(door, stub.base_url, tmp_path, retries=3)
    assert len(stub.requests) == 1
    assert kind_of(caught.value) == {"policy": "policy_request", "judge": "http"}[door]
    assert "rejected the request: HTTP 400: image input is not supported" in str(caught.value)


# -- the one preflight, at both doors ---------------------------------------------------------------------------
def preflight(door: str, base_url: str, environ: dict[str, str], **fields) -> None:
    """The session-start check as each door makes it; its one line, as that door raises it."""
    fields = {"model": "stub-model", "retries": 0, **fields}
    if door == "policy":
        profile = make_profile({"base_url": base_url, "api_key_env": "T_KEY", **fields})
        check_policy_endpoint(profile, environ)
    else:
        config = JudgeConfig(base_url=base_url, model=fields["model"], api_key_env="T_KEY", retries=fields["retries"])
        check_judge_endpoint(config, environ)


def refusal(door: str) -> type[Exception]:
    return PreflightError if door == "policy" else JudgeConfigError


@pytest.mark.parametrize("door", DOORS)
def test_preflight_passes_without_spending_a_completion(door):
    with OpenAIStub(models=("a", "stub-model"), api_key=KEY) as stub:
        preflight(door, stub.base_url, {"T_KEY": KEY})
    assert stub.requests == []


@pytest.mark.parametrize("door", DOORS)
def test_preflight_lines_are_the_same_at_both_doors(door):
    with OpenAIStub(models=("llava", "qwen"), api_key=KEY) as stub:
        with pytest.raises(refusal(door)) as refused:
            preflight(door, stub.base_url, {"T_KEY": "sk-wrong-key-5512"})
        with pytest.raises(refusal(door)) as unserved:
            preflight(door, stub.base_url, {"T_KEY": KEY}, model="gpt-x")
    where = f"the {door} endpoint {stub.base_url}"
    assert str(refused.value).startswith(f"{where} refused the API key from $T_KEY: HTTP 401: ")
    assert "sk-wrong-key-5512" not in str(refused.value)
    assert str(unserved.value) == f"{where} does not serve model 'gpt-x'; it serves: llava, qwen"
    gone = OpenAIStub().start()
    gone.stop()
    with pytest.raises(refusal(door), match=f"^the {door} endpoint {gone.base_url} is unreachable: "):
        preflight(door, gone.base_url, {"T_KEY": KEY})


@pytest.mark.parametrize("door", DOORS)
def test_preflight_waits_for_an_endpoint_that_is_loading_its_model(door):
    with FlakyModelList(2) as stub:
        preflight(door, stub.base_url, {"T_KEY": KEY}, retries=2)
    with FlakyModelList(3) as stub:
        with pytest.raises(refusal(door)) as caught:
            preflight(door, stub.base_url, {"T_KEY": KEY}, retries=2)
    assert str(caught.value) == f"the {door} endpoint {stub.base_url} answered HTTP 503: loading the model"


@pytest.mark.parametrize("door", DOORS)
def test_preflight_without_a_model_list_asks_for_one_token(door):
    with NoModelList([Reply(content="OK")]) as stub:
        preflight(door, stub.base_url, {"T_KEY": KEY})
    assert stub.requests == [{"model": "stub-model", "messages": [{"role": "user", "content": "Reply with OK."}],
                              "max_tokens": 1}]


def test_preflight_imports_neither_openai_nor_pytest():
    # The controller runs it before any worker starts; `openai` alone would cost it 0.6-0.8 s of CPU.
    with OpenAIStub() as stub:
        fields = {"base_url": stub.base_url, "model": "stub-model"}
        script = ("import sys; from webeval.judges.config import JudgeConfig, check_judge_endpoint; "
                  "from webeval.policy.openai import check_policy_endpoint, load_profile; "
                  f"check_judge_endpoint(JudgeConfig(**{fields!r})); "
                  f"check_policy_endpoint(load_profile(None, {fields!r}), {{}}); "
                  "print(sorted({'openai', 'pytest', '_pytest'} & set(sys.modules)))")
        done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr


def test_an_unset_key_is_named_at_each_door():
    with OpenAIStub(api_key=KEY) as stub:
        with pytest.raises(PreflightError, match=r"refused the API key from \$T_KEY \(\$T_KEY is not set\): HTTP 401"):
            preflight("policy", stub.base_url, {})  # an endpoint that needs no key may be called without one
        with pytest.raises(JudgeConfigError, match=r"^the judge's API key variable \$T_KEY is not set$"):
            preflight("judge", stub.base_url, {})  # a judge that names a key variable needs it set
    assert stub.requests == []


# -- the one re-ask --------------------------------------------------------------------------------------------
async def test_every_protocol_re_asks_through_one_helper_and_names_itself(tmp_path):
    endpoint = Endpoint("http://127.0.0.1:9/v1", "stub-model", retries=0)
    with OpenAIStub([text(""), text("no idea"), VERDICT]) as stub:
        judge = WebevalJudge(replace(endpoint, base_url=stub.base_url))
        verdict = await judge.judge(TASK, Evidence(task_id=TASK.id, goal=TASK.goal, answer="42", screenshots=[],
                                                   folder=tmp_path))
        await judge.close()
    assert verdict.success and verdict.details["asked"] == 3
    assert (verdict.judge, verdict.protocol) == ("webeval", "webeval") and verdict.prompt_version.startswith("webeval#")
    follow_ups = [request["messages"][-1]["content"] for request in stub.requests[1:]]
    assert follow_ups == [
        "Your reply could not be read: it has no text. Reply again with exactly one JSON object: "
        '{"reasoning": "...", "verdict": "SUCCESS"} or "NOT SUCCESS".',
        "Your reply could not be read: it has no verdict (no SUCCESS or NOT SUCCESS, and no JSON object with a "
        'verdict). Reply again with exactly one JSON object: {"reasoning": "...", "verdict": "SUCCESS"} or '
        '"NOT SUCCESS".']
