"""Cost: tokens per task and per run, policy and judge apart, cached and reasoning tokens included, priced by the
profiles' tables; checked against totals computed by hand from the scripted endpoints' usage fields, through a real
session (a model policy and a model judge on loopback, a real browser). Every judge protocol's calls are counted,
re-asks included, re-judging too, and a verdict from the cache costs nothing; an attempt retried after an
infrastructure error is paid for too. `--cost-limit` stops starting tasks: the rest are missing, never failed, with
and without xdist."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.openai_stub import OpenAIStub, Reply, call, text
from tests.conftest import ROOT
from tests.test_import_webvoyager import UPSTREAM, import_examples
from tests.test_judge_protocols import TASK, attempt, webjudge_judge
from tests.test_slots import KillsItsBrowser, twelve_tasks
from tests.webvoyager_data import need_data
from webeval import Slot
from webeval.agent.evaluate import Evaluation, evaluate
from webeval.benchmarks.local.offline_sites import OfflineSites
from webeval.benchmarks.local.site_server import SiteServer
from webeval.benchmarks.miniwob.server import PageServer
from webeval.cli import main
from webeval.judges.config import JudgeConfig, Judging
from webeval.judges.decide import decide
from webeval.judges.protocols.rubric import RELEVANCE_PROMPT
from webeval.judges.verifier import verifier_judge
from webeval.outcomes.cost import Meter, Prices, read_usage
from webeval.outcomes.record import AttemptRecord, Outcome
from webeval.outcomes.rundir import RunDir
from webeval.outcomes.spending import run_cost, spent
from webeval.policy.openai import HttpTransport, OpenAIPolicy, Profile, make_adapter

EXAMPLE = ROOT / "docs" / "examples" / "tasks"
POLICY_PRICES = {"input": 2.0, "cached_input": 0.5, "output": 8.0}  # US dollars per million tokens
JUDGE_PRICES = {"input": 1.0, "cached_input": 0.25, "output": 4.0}
# Each policy call: 1000 prompt tokens (600 of them cached), 200 completion tokens (150 of them reasoning).
POLICY_CALL_USD = ((1000 - 600) * 2.0 + 600 * 0.5 + 200 * 8.0) / 1e6  # 0.0027
# Each judge call: 3000 prompt tokens (1000 cached), 100 completion tokens (40 reasoning).
JUDGE_CALL_USD = ((3000 - 1000) * 1.0 + 1000 * 0.25 + 100 * 4.0) / 1e6  # 0.00265


def test_usage_is_read_off_either_apis_reply():
    chat = {"prompt_tokens": 1000, "completion_tokens": 200, "total_tokens": 1200,
            "prompt_tokens_details": {"cached_tokens": 600, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 150}}
    responses = {"input_tokens": 1000, "output_tokens": 200, "input_tokens_details": {"cached_tokens": 600},
                 "output_tokens_details": {"reasoning_tokens": 150}}
    expected = {"prompt_tokens": 1000, "completion_tokens": 200, "cached_tokens": 600, "reasoning_tokens": 150}
    assert read_usage(chat) == read_usage(responses) == expected
    assert read_usage({"prompt_tokens": 5, "completion_tokens": 1, "prompt_tokens_details": None}) == {
        "prompt_tokens": 5, "completion_tokens": 1}
    assert read_usage(None) == {} and read_usage({"prompt_tokens": True}) == {}


def test_a_price_table_prices_cached_input_apart_and_reasoning_as_output():
    usage = read_usage({"prompt_tokens": 1000, "completion_tokens": 200,
                        "prompt_tokens_details": {"cached_tokens": 600},
                        "completion_tokens_details": {"reasoning_tokens": 150}})
    assert Prices(**POLICY_PRICES).usd(usage) == pytest.approx(POLICY_CALL_USD)
    assert Prices(input=2.0, output=8.0).usd(usage) == pytest.approx((1000 * 2.0 + 200 * 8.0) / 1e6)
    with pytest.raises(ValueError):
        Prices(input=-1, output=1)


def test_a_meter_with_an_unpriced_call_has_no_dollar_figure():
    meter = Meter()
    meter.add({"prompt_tokens": 10}, Prices(input=1, output=1))
    assert meter.usd == pytest.approx(1e-5)
    meter.add({"prompt_tokens": 10}, None)
    assert meter.usd is None and meter.usage() == {"prompt_tokens": 20}


def test_a_rejudged_record_repeats_no_policy_tokens_and_adds_its_judgement():
    first = AttemptRecord(run_id="r", task_id="T--1", outcome=Outcome.failed, path="tasks/T--1/attempt-1",
                          usage={"prompt_tokens": 100}, judge_usage={"prompt_tokens": 10},
                          cost_usd={"policy": 0.5, "judge": 0.1})
    again = first.model_copy(update={"judge_usage": {"prompt_tokens": 20}, "cost_usd": {"policy": 0.5, "judge": 0.2},
                                     "outcome": Outcome.passed, "extra": {"rejudge": True}})
    retried = AttemptRecord(run_id="r", task_id="T--2", outcome=Outcome.infra_error, path="tasks/T--2/attempt-1",
                            usage={"prompt_tokens": 50}, cost_usd={"policy": 0.25})
    spending = spent([first, again, retried])
    assert spending.policy.tokens["prompt_tokens"] == 150 and spending.policy.usd == pytest.approx(0.75)
    assert spending.judge.tokens["prompt_tokens"] == 30 and spending.judge.usd == pytest.approx(0.3)
    cost = run_cost(["T--1", "T--2", "T--3"], [first, again, retried], passed=1)
    assert cost["usd"] == pytest.approx(1.05) and cost["usd_per_success"] == pytest.approx(1.05)
    assert cost["tasks"] == {"T--1": {"usd": pytest.approx(0.8), "policy_tokens": 100, "judge_tokens": 30},
                             "T--2": {"usd": pytest.approx(0.25), "policy_tokens": 50, "judge_tokens": 0}}
    assert cost["usd_per_task"] == pytest.approx(0.525)


# --- every judge protocol, through the one chat call ---------------------------------------------------------------

JUDGE_CALL = {"prompt_tokens": 3000, "cached_tokens": 1000, "completion_tokens": 100, "reasoning_tokens": 40}
DECIDING = {"webeval": '{"reasoning": "shown", "verdict": "SUCCESS"}', "webvoyager": "The list is shown.\n\nSUCCESS",
            "webjudge": 'Thoughts: both hold.\nStatus: "success"',
            "rubric": '{"facts": {"1.1": {"holds": true, "why": "shown"}}, "blocked": false}'}
UNREAD = "I cannot tell from these screenshots."
# Six screenshots: webjudge asks for its key points, scores each screenshot, then decides; rubric scores the five
# before the last (more than it keeps), then rules. Every protocol's first deciding reply is unread and asked again.
CALLS = {"webeval": 2, "webvoyager": 2, "webjudge": 1 + 6 + 2, "rubric": 5 + 2}


def judge_script(protocol: str, unread: int = 1):
    """The judge's replies, each with a judge call's usage; its first `unread` deciding replies have nothing
    readable."""
    left = [unread]

    def reply(request: dict) -> Reply:
        system = request["messages"][0]["content"]
        if system.startswith("KP-SYSTEM"):
            content = "Key Points: 1. vegan cookies"
        elif system.startswith("IMAGE-SYSTEM") or system == RELEVANCE_PROMPT:
            content = "**Reasoning**: the list.\n\n**Score**: 5"
        elif left[0]:
            left[0] -= 1
            content = UNREAD
        else:
            content = DECIDING[protocol]
        return Reply(content=content, usage=(3000, 100), cached_tokens=1000, reasoning_tokens=40)

    return reply


def priced_judging(stub: OpenAIStub, protocol: str) -> Judging:
    return Judging(JudgeConfig(base_url=stub.base_url, model="judge-model", protocol=protocol, prompts=str(UPSTREAM),
                               retries=0, cache=True, prices=Prices(**JUDGE_PRICES)))


@pytest.mark.parametrize("protocol", ["webeval", pytest.param("webvoyager", marks=need_data), "webjudge", "rubric"])
async def test_every_protocols_judge_calls_are_counted_re_asks_included_and_a_cached_verdict_costs_nothing(
        tmp_path, protocol):
    task = TASK.model_copy(update={"rubric": [["The list shows vegan cookies"]]}) if protocol == "rubric" else TASK
    evidence = attempt(tmp_path / "a", count=6)
    with OpenAIStub(judge_script(protocol), models=("judge-model",)) as stub:
        if protocol == "webjudge":  # its prompt file is pinned by the test (see test_judge_protocols)
            model = webjudge_judge(stub, tmp_path / "prompts", Prices(**JUDGE_PRICES))
        else:
            model = priced_judging(stub, protocol)
        decision = await decide(task, evidence, model.judge)
        calls = len(stub.requests)
        again = await decide(task, evidence, model.judge)
        await model.close()
    assert decision.outcome is Outcome.passed and calls == CALLS[protocol]
    assert decision.judge_usage == {key: calls * value for key, value in JUDGE_CALL.items()}
    assert decision.judge_usd == pytest.approx(calls * JUDGE_CALL_USD)
    assert decision.verdict.usage == decision.judge_usage
    assert decision.verdict.cost_usd == pytest.approx(calls * JUDGE_CALL_USD)
    if protocol == "webjudge":  # no cache in front of it here: judged again (read the first time), paid again
        more = len(stub.requests) - calls
        assert more == calls - 1 and again.judge_usage == {key: more * value for key, value in JUDGE_CALL.items()}
        return
    assert len(stub.requests) == calls and again.outcome is Outcome.passed  # the verdict came from the cache
    assert (again.judge_usage, again.judge_usd, again.verdict.usage, again.verdict.cost_usd) == ({}, None, {}, None)


async def test_a_judgement_that_fails_still_counts_the_replies_it_read(tmp_path):
    with OpenAIStub(judge_script("webeval", unread=3), models=("judge-model",)) as stub:
        judging = priced_judging(stub, "webeval")
        decision = await decide(TASK, attempt(tmp_path / "a", count=2), judging.judge)
        await judging.close()
    assert (decision.outcome, decision.kind, decision.verdict) == (Outcome.judge_failed, "unparseable", None)
    assert len(stub.requests) == 3 and decision.judge_usage == {key: 3 * v for key, v in JUDGE_CALL.items()}
    assert decision.judge_usd == pytest.approx(3 * JUDGE_CALL_USD)


@need_data
def test_reverify_charges_each_judgement_and_the_cache_charges_nothing(tmp_path):
    run = tmp_path / "run"
    assert import_examples(run) == 0
    with OpenAIStub(judge_script("webvoyager", unread=0), models=("judge-model",)) as stub:
        (tmp_path / "judge.toml").write_text(f'base_url = "{stub.base_url}"\nmodel = "judge-model"\nretries = 0\n'
                                             "[prices]\n" + "".join(f"{k} = {v}\n" for k, v in JUDGE_PRICES.items()))
        reverify = ["reverify", str(run), "--judge-profile", str(tmp_path / "judge.toml"), "--judge-protocol",
                    "webvoyager", "--judge-prompts", str(UPSTREAM)]
        assert main(reverify) == 0
        calls = len(stub.requests)
        first = json.loads((run / "summary.json").read_text())["cost"]
        assert main(reverify) == 0
        assert len(stub.requests) == calls  # every verdict from the cache
    second = json.loads((run / "summary.json").read_text())["cost"]
    rejudged = [r for r in lines_of(run / "results.jsonl") if r["extra"].get("rejudge")]
    assert calls == 15 and len(rejudged) == 30  # each of the 15 trajectories has an answer: one call each
    assert [r["judge_usage"] for r in rejudged] == [JUDGE_CALL] * 15 + [{}] * 15
    assert [r["cost_usd"].get("judge") for r in rejudged] == [pytest.approx(JUDGE_CALL_USD)] * 15 + [None] * 15
    assert first["judge"] == {**{key: 15 * value for key, value in JUDGE_CALL.items()},
                              "usd": pytest.approx(15 * JUDGE_CALL_USD)}
    assert second["judge"] == first["judge"] and second["usd"] == pytest.approx(15 * JUDGE_CALL_USD)


class DiesBeforeItsThirdCall(KillsItsBrowser):
    """A model policy whose slot's Chromium is SIGKILLed at the third step, before the model is asked: the slot's
    watch cancels the episode while it waits. A call cut off mid-reply would have tokens no one could read; killed
    here, the attempt made exactly two calls, both answered and read."""

    async def act(self, observation):
        if observation.step == 3 and self.killed is None:
            self.killed = self.slot.browser.browser_pid
            os.kill(self.killed, signal.SIGKILL)
            await asyncio.sleep(30)  # the watch looks every half second; past this, the next call fails the test
        return await self.policy.act(observation)


async def test_an_attempt_retried_after_infrastructure_counts_in_what_its_task_spent(tmp_path):
    """--infra-retries: the first attempt's Chromium is killed after two model calls; the retried attempt makes two
    more. Both attempts' policy tokens are priced, and the task's spending (what --cost-limit adds up) holds both."""
    def priced(reply: Reply) -> Reply:
        reply.usage, reply.cached_tokens, reply.reasoning_tokens = (1000, 200), 600, 150
        return reply

    wait = call("computer", {"action": "wait", "seconds": 0})
    script = [priced(wait), priced(wait), priced(wait), priced(call("terminate", {"status": "failure", "answer": ""}))]
    run_dir = RunDir(tmp_path / "run")
    with OpenAIStub(script) as stub, SiteServer() as server:
        profile = Profile(base_url=stub.base_url, model="stub-model", retries=0, timeout_s=10)
        async with Slot(1280, 720) as slot:
            made: list = []

            def policy(session, prepared):
                model = OpenAIPolicy(profile, make_adapter(profile, (1280, 720), None),
                                     lambda: HttpTransport(profile, "EMPTY"))
                made.append(DiesBeforeItsThirdCall(model, slot) if not made else model)
                return made[-1]

            how = Evaluation(slot=slot, run_dir=run_dir, judge=verifier_judge, policy=policy,
                             environment=OfflineSites(server), infra_retries=1, policy_prices=Prices(**POLICY_PRICES))
            done = await evaluate(twelve_tasks()[0], how)
    [first] = run_dir.records()  # the retried attempt is appended as it is retried; the final one by the caller
    assert (first.outcome, first.kind, done.record.attempt) == (Outcome.infra_error, "browser", 2), done.record
    assert done.retried == [first.model_copy(update={"finished_at": ""})] and len(stub.requests) == 4
    assert first.cost_usd == {"policy": pytest.approx(2 * POLICY_CALL_USD)} == done.record.cost_usd
    assert done.spent_usd == pytest.approx(4 * POLICY_CALL_USD)


# --- a real session ------------------------------------------------------------------------------------------------

def policy_reply(request: dict) -> Reply:
    goal = json.dumps(request.get("messages", []))
    answer = "4.50" if "Sencha" in goal else "done"
    return Reply(tool_calls=[("terminate", json.dumps({"status": "success", "answer": answer}))],
                 usage=(1000, 200), cached_tokens=600, reasoning_tokens=150)


def judge_reply(request: dict) -> Reply:
    return Reply(content='{"reasoning": "the basket shows Assam", "verdict": "SUCCESS"}', usage=(3000, 100),
                 cached_tokens=1000, reasoning_tokens=40)


def write_profiles(folder: Path, policy: OpenAIStub, judge: OpenAIStub | None) -> list[str]:
    prices = lambda table: "[prices]\n" + "".join(f"{k} = {v}\n" for k, v in table.items())  # noqa: E731
    (folder / "policy.toml").write_text(f'base_url = "{policy.base_url}"\nmodel = "stub-model"\n'
                                        + prices(POLICY_PRICES))
    options = ["--policy", "openai", "--policy-profile", str(folder / "policy.toml")]
    if judge is not None:
        (folder / "judge.toml").write_text(f'base_url = "{judge.base_url}"\nmodel = "stub-model"\n'
                                           + prices(JUDGE_PRICES))
        options += ["--judge-profile", str(folder / "judge.toml")]
    return options


def task_file(path: Path, origin: str, answers: int, rubric: bool) -> Path:
    rows = {row["id"]: row for row in (json.loads(line) for line in (EXAMPLE / "tasks.jsonl").read_text().replace(
        "http://127.0.0.1:8000", origin).splitlines() if line.strip())}
    sencha = {k: v for k, v in rows["sencha-price"].items() if k != "solution"}
    chosen = [{**sencha, "id": f"sencha-{i}"} for i in range(answers)]
    if rubric:
        assam = {k: v for k, v in rows["two-assam"].items() if k not in ("page", "solution")}
        chosen.append({**assam, "id": "assam-rubric", "rubric": ["The basket holds Assam"]})
    path.write_text("".join(json.dumps(row) + "\n" for row in chosen), encoding="utf-8")
    return path


def session(args: list[str], run_dir: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "suites/tasks", *args,
                           "--run-dir", str(run_dir)], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=600)


def lines_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_a_runs_tokens_and_cost_are_the_hand_computed_totals(tmp_path):
    run_dir = tmp_path / "run"
    with PageServer(EXAMPLE) as site, OpenAIStub(policy_reply) as policy, OpenAIStub(judge_reply) as judge:
        options = write_profiles(tmp_path, policy, judge)
        done = session(["-p", "no:xdist", "--tasks-file", str(task_file(tmp_path / "t.jsonl", site.origin, 2, True)),
                        *options], run_dir)
        policy_calls = sum(1 for path in policy.paths if path.endswith("/chat/completions"))
        judge_calls = sum(1 for path in judge.paths if path.endswith("/chat/completions"))
    assert done.returncode == 0, done.stdout[-3000:]
    assert (policy_calls, judge_calls) == (3, 1)  # one terminate per task; the rubric task's one judgement
    records = {r["task_id"]: r for r in lines_of(run_dir / "results.jsonl")}
    for record in records.values():
        assert record["usage"]["prompt_tokens"] == 1000 and record["usage"]["cached_tokens"] == 600
        assert record["usage"]["reasoning_tokens"] == 150 and record["usage"]["completion_tokens"] == 200
        assert record["cost_usd"]["policy"] == pytest.approx(POLICY_CALL_USD)
    rubric = records["assam-rubric"]
    assert rubric["judge_usage"] == {"prompt_tokens": 3000, "cached_tokens": 1000, "completion_tokens": 100,
                                     "reasoning_tokens": 40}
    assert rubric["cost_usd"]["judge"] == pytest.approx(JUDGE_CALL_USD)
    assert rubric["verdict"]["usage"] == rubric["judge_usage"]  # the verdict carries its calls' usage
    assert rubric["verdict"]["cost_usd"] == pytest.approx(JUDGE_CALL_USD)
    assert "judge" not in records["sencha-0"]["cost_usd"]  # judged by its own verifier: no tokens, no judge cost
    cost = json.loads((run_dir / "summary.json").read_text())["cost"]
    total = 3 * POLICY_CALL_USD + JUDGE_CALL_USD
    assert cost["policy"] == {"prompt_tokens": 3000, "cached_tokens": 1800, "completion_tokens": 600,
                              "reasoning_tokens": 450, "usd": pytest.approx(3 * POLICY_CALL_USD)}
    assert cost["judge"] == {"prompt_tokens": 3000, "cached_tokens": 1000, "completion_tokens": 100,
                             "reasoning_tokens": 40, "usd": pytest.approx(JUDGE_CALL_USD)}
    assert cost["usd"] == pytest.approx(total) and cost["usd_per_success"] == pytest.approx(total / 3)
    assert cost["usd_per_task"] == pytest.approx(total / 3)
    assert cost["tasks"]["assam-rubric"] == {"usd": pytest.approx(POLICY_CALL_USD + JUDGE_CALL_USD),
                                             "policy_tokens": 1200, "judge_tokens": 3100}
    assert f"  cost: ${total:.4f} (policy ${3 * POLICY_CALL_USD:.4f}, judge ${JUDGE_CALL_USD:.4f})" in done.stdout
    allure = [json.loads(p.read_text()) for p in (run_dir / "allure-results").glob("*-result.json")]
    shown = {r["name"]: {p["name"]: p["value"] for p in r.get("parameters", [])} for r in allure}
    assert shown["assam-rubric"]["cost"] == (f"${POLICY_CALL_USD + JUDGE_CALL_USD:.4f} "
                                             f"(policy ${POLICY_CALL_USD:.4f}, judge ${JUDGE_CALL_USD:.4f})")
    assert shown["assam-rubric"]["tokens"] == ("policy prompt=1000, cached=600, completion=200, reasoning=150; "
                                               "judge prompt=3000, cached=1000, completion=100, reasoning=40")
    assert f"cost=${total:.4f}" in (run_dir / "allure-results" / "environment.properties").read_text()


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_the_cost_limit_stops_starting_tasks_and_leaves_the_rest_missing(tmp_path, workers):
    run_dir = tmp_path / "run"
    tasks = 8
    with PageServer(EXAMPLE) as site, OpenAIStub(policy_reply) as policy:
        options = write_profiles(tmp_path, policy, None)
        done = session([*(workers or ["-p", "no:xdist"]), "--tasks-file",
                        str(task_file(tmp_path / "t.jsonl", site.origin, tasks, False)), *options,
                        "--cost-limit", "0.005"], run_dir)  # reached by the second task ($0.0054)
    output = done.stdout
    assert done.returncode == 12, output[-3000:]  # incomplete, never failed
    records = lines_of(run_dir / "results.jsonl")
    assert {r["outcome"] for r in records} == {"passed"}
    started = len(records)
    # One process: exactly the two tasks it took to reach the limit. Two workers: each may have started one more
    # while the controller was adding up the results that reached it.
    assert started == 2 if not workers else 2 <= started <= 4, output[-3000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (summary["passed"], summary["failed"], len(summary["missing"])) == (started, 0, tasks - started)
    assert summary["complete"] is False and summary["cost"]["usd"] == pytest.approx(started * POLICY_CALL_USD)
    assert f"cost limit $0.0050 reached (${started * POLICY_CALL_USD:.4f} spent)" in output
    assert f"did not complete (never started={tasks - started})" in output
    assert not list(run_dir.glob(".cost-limit-reached.*"))  # the mark does not outlive its session
    allure = [json.loads(p.read_text()) for p in (run_dir / "allure-results").glob("*-result.json")]
    assert len(allure) == tasks and sum(r["status"] == "skipped" for r in allure) == tasks - started


def test_a_cost_limit_without_a_price_table_is_refused_in_one_line(tmp_path):
    with OpenAIStub(policy_reply) as policy:
        (tmp_path / "policy.toml").write_text(f'base_url = "{policy.base_url}"\nmodel = "stub-model"\n')
        done = session(["-p", "no:xdist", "--tasks-file", str(task_file(tmp_path / "t.jsonl", "http://127.0.0.1:9",
                                                                          1, False)),
                        "--policy", "openai", "--policy-profile", str(tmp_path / "policy.toml"),
                        "--cost-limit", "1"], tmp_path / "run")
    assert done.returncode == 4, done.stdout
    assert "ERROR: --cost-limit needs the policy's price table: add [prices]" in done.stdout
    assert not (tmp_path / "run" / "results.jsonl").exists()


@pytest.mark.parametrize("given, message", [
    (["--cost-limit", "0"], "--cost-limit 0: give a positive number of US dollars"),
    (["--cost-limit", "-2.5"], "--cost-limit -2.5: give a positive number of US dollars"),
    # counted as results are reported, a limit cannot hold tasks that slots start ahead of their reports
    (["--cost-limit", "1", "--slots", "2"], "--cost-limit with --slots 2: the limit is counted as results are "
                                            "reported, and slots start tasks ahead of them; use -n N"),
])
def test_a_cost_limit_it_cannot_keep_is_refused_in_one_line(tmp_path, given, message):
    done = session(["-p", "no:xdist", "--tasks-file", str(task_file(tmp_path / "t.jsonl", "http://127.0.0.1:9", 1,
                                                                    False)),
                    "--policy", "oracle", *given], tmp_path / "run")
    assert done.returncode == 4, done.stdout
    assert f"ERROR: {message}" in done.stdout
    assert not (tmp_path / "run" / "results.jsonl").exists()
