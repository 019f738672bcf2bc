"""MiniWoB++ as a benchmark package (`suites/miniwob`), run as a user runs it: every task the `miniwob` package ships
collected (its option only where the package is loaded: tests/test_task_files.py), a handful of tasks solved by the
oracle and judged by the page's own reward, the same verdicts again from the evidence alone, and a model judged by
the page, not its words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fixtures.openai_stub import OpenAIStub, Reply
from tests.runs import records, run
from tests.scripted import finish, navigate, seen
from webeval.benchmarks.miniwob import catalogue
from webeval.benchmarks.miniwob.judge import reward_judge
from webeval.benchmarks.miniwob.page import STATE_KEY
from webeval.outcomes.evidence import Evidence
from webeval.outcomes.record import JudgeError
from webeval.tasks import Task

SUITE = "suites/miniwob"
# One of each kind of action: a click, keys in a date field, a drag, a select's popup, a tree marked by the solver.
ORACLE_TASKS = ["click-button", "enter-date", "drag-box", "choose-list", "navigate-tree"]


def test_collection_is_every_task_the_package_ships_times_each_seed(tmp_path):
    shipped = catalogue.shipped(catalogue.package_dir())
    html = catalogue.package_dir() / "html"
    assert {"click-button", "book-flight", "flight.AA", "use-autocomplete"} <= set(shipped)
    assert all((html / catalogue.page_path(name)).is_file() for name in shipped)
    job = run(["-n", "2", SUITE, "--co", "--miniwob-seeds", "0,5", "--run-dir", str(tmp_path / "run")], tmp_path)
    collected = [line.split("[", 1)[1].rstrip("]") for line in job.output.splitlines() if "::test_task[" in line]
    assert collected == [f"{name}--{seed}" for name in shipped for seed in (0, 5)], job.output
    assert not (tmp_path / "run").exists()  # collecting scores nothing: no run directory
    population, _ = catalogue.population([0, 5])
    assert population.name == f"miniwob-{catalogue.version()}" and list(population.ids) == collected
    assert population.sites["flight.AA--5"] == "flight.AA"


@pytest.mark.parametrize("seeds, message", [
    ("x", "--miniwob-seeds 'x': expected seeds such as 0, 0,3,7 or 0-9"),
    ("5-2", "--miniwob-seeds '5-2': the range 5-2 runs backwards"),
    ("0,", "--miniwob-seeds '0,': expected seeds such as 0, 0,3,7 or 0-9"),
    ("0-20000", "--miniwob-seeds '0-20000': more than 10000 seeds per task"),
])
def test_bad_seeds_are_refused_in_one_line(seeds, message):
    with pytest.raises(catalogue.CatalogueError) as info:
        catalogue.parse_seeds(seeds)
    assert str(info.value) == message


def test_bad_seeds_stop_the_session_before_anything_is_written(tmp_path):
    job = run([SUITE, "--miniwob-seeds", "1-x", "--run-dir", str(tmp_path / "run")], tmp_path)
    assert job.proc.returncode == 4, job.output
    assert "ERROR: --miniwob-seeds '1-x': expected seeds such as 0, 0,3,7 or 0-9" in job.output
    assert not (tmp_path / "run").exists()
    assert catalogue.parse_seeds("3, 0-2,3") == [3, 0, 1, 2]


def test_the_oracle_solves_tasks_by_the_pages_reward_and_a_rejudge_agrees(tmp_path):
    run_dir = tmp_path / "run"
    chosen = " or ".join(f"{name}--0" for name in ORACLE_TASKS)
    job = run(["-p", "no:xdist", SUITE, "-m", "oracle", "-k", chosen, "--run-dir", str(run_dir)], run_dir)
    assert job.proc.returncode == 0, job.output
    found = {r["task_id"]: r for r in records(run_dir)}
    assert sorted(found) == sorted(f"{name}--0" for name in ORACLE_TASKS), job.output
    for record in found.values():
        assert record["outcome"] == "passed" and record["verdict"]["judge"] == "miniwob-reward"
        evidence = json.loads((run_dir / record["path"] / "evidence.json").read_text())
        page = evidence["state"][STATE_KEY]
        assert page["done"] is True and page["raw_reward"] > 0 and page["on_task_page"] is True
        assert "MiniWoB++ page" not in evidence["goal"]  # the page's utterance, not the stand-in
    goal = json.loads((run_dir / found["enter-date--0"]["path"] / "evidence.json").read_text())["goal"]
    assert goal.startswith("Enter ") and goal.endswith(" as the date and hit submit.")
    actions = {r["task_id"]: json.loads((run_dir / r["path"] / "evidence.json").read_text())["actions"]
               for r in found.values()}
    assert [a["action"] for a in actions["drag-box--0"]] == ["drag", "click"]
    again = run(["-p", "no:xdist", SUITE, "--rejudge", str(run_dir)], run_dir)
    assert again.proc.returncode == 0 and f"{len(ORACLE_TASKS)} passed" in again.output, again.output
    assert len(records(run_dir)) == 2 * len(ORACLE_TASKS)
    assert all(r["verdict"]["success"] for r in records(run_dir)[len(ORACLE_TASKS):])


def test_a_task_the_oracle_cannot_solve_is_not_run_not_failed(tmp_path):
    run_dir = tmp_path / "run"
    job = run(["-p", "no:xdist", SUITE, "-k", "bisect-angle--0", "--run-dir", str(run_dir)], run_dir)
    (record,) = records(run_dir)
    assert record["outcome"] == "not_run" and record["kind"] == "no_solution", job.output
    assert record["reason"].startswith("precondition[no_solution]: the oracle has no solution for bisect-angle")


def model(request: dict) -> Reply:
    """Says it is done at once on click-button; leaves the page for another task's on enter-text."""
    now = seen(request)
    if "into the text field" in now.goal and now.step == 1:
        return navigate(now.url.replace("enter-text.html", "click-test.html"))
    return finish("I clicked it")


def test_a_model_is_judged_by_the_page_not_by_what_it_says(tmp_path):
    run_dir = tmp_path / "run"
    with OpenAIStub(model) as stub:
        job = run(["-p", "no:xdist", SUITE, "-k", "click-button--0 or enter-text--0", "--run-dir", str(run_dir),
                   "--policy", "openai", "--policy-base-url", stub.base_url, "--policy-model", "stub-model"],
                  run_dir, env={"OPENAI_API_KEY": ""})
        goals = {seen(request).goal for request in stub.requests}
    assert job.proc.returncode == 1, job.output
    assert any(goal.startswith('Click on the "') and goal.endswith('" button.') for goal in goals), goals
    found = {r["task_id"]: r for r in records(run_dir)}
    said = found["click-button--0"]
    assert (said["outcome"], said["failure_class"]) == ("failed", "wrong_state")
    assert said["reason"] == "the episode had not ended: the page gave no reward" and said["answer"] == "I clicked it"
    left = found["enter-text--0"]
    assert left["outcome"] == "failed" and left["reason"].startswith("the agent left the task's page")


def evidence(tmp_path: Path, state: dict | None) -> Evidence:
    return Evidence(task_id="click-button--0", goal="Click on the button.", state=state, folder=tmp_path)


TASK = Task(id="click-button--0", site="click-button", goal="stand-in", start_url="http://127.0.0.1/")


async def test_the_judge_reads_a_timeout_and_refuses_evidence_without_a_reward(tmp_path):
    page = {"on_task_page": True, "done": True, "raw_reward": -1, "reward": -1, "reason": "timed out",
            "time_limit_ms": 10000}
    verdict = await reward_judge(TASK, evidence(tmp_path, {STATE_KEY: page}))
    assert not verdict.success and verdict.details["failure_class"] == "time_budget"
    assert verdict.reason == "the page's time limit (10 s) ran out"
    verdict = await reward_judge(TASK, evidence(tmp_path, {STATE_KEY: {**page, "raw_reward": 0.5, "reason": None}}))
    assert verdict.success and verdict.reason == "the page's reward is 0.5"
    with pytest.raises(JudgeError) as info:
        await reward_judge(TASK, evidence(tmp_path, {"shop": {}}))
    assert info.value.kind == "config" and "holds no MiniWoB++ reward" in str(info.value)
