"""The Allure side of the plugin, through a real pytest session (two xdist workers) of a small suite whose tests end
the way task tests end (pass, fail by class, xfail infra / judge, skip precondition, harness error) without a
browser; then `webeval report` over its run directory with the real Allure 3."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from filelock import FileLock
from PIL import Image

from webeval.report.identity import history_id, placeholder_file
from webeval.report.pictures import CLICKED, add_pictures

ROOT = Path(__file__).resolve().parents[1]
SECRET = "sk-webeval-never-in-a-report-7f3a"
NAMES = ["passes", "wrong", "budget", "invalid", "infra", "judge", "precondition", "harness", "unrun", "later"]
EXPECTED = {  # task -> (Allure status, message prefix)
    "passes": ("passed", None),
    "wrong": ("failed", "wrong_answer: "),
    "budget": ("failed", "step_budget: "),
    "invalid": ("failed", "invalid_output: "),
    "infra": ("skipped", "infra[browser]: "),
    "judge": ("skipped", "judge_failed: "),
    "precondition": ("skipped", "precondition[site_down]: "),
    "harness": ("broken", "harness_error: "),
    "unrun": ("skipped", "missing: "),
    "later": ("failed", "wrong_answer: "),  # run by a second session into the same run directory
}

CONFTEST = f"""
from webeval.plugin import suite
from webeval.tasks import Population, Task

IDS = [f"Lab--{{name}}" for name in {NAMES!r}]
TASKS = [Task(id=i, site="Lab", goal=f"goal of {{i}}", start_url="http://127.0.0.1:9/", tags=["synthetic"])
         for i in IDS]
POPULATION = Population(name="synthetic", ids=tuple(IDS), sha256="0" * 64)


def pytest_generate_tests(metafunc):
    suite.parametrize(metafunc, POPULATION, TASKS)
"""

TEST = """
import shutil
from pathlib import Path

import pytest

import os

from webeval.agent.episode import Episode, StepRecord
from webeval.agent.evaluate import Attempt
from webeval.outcomes.record import AttemptRecord, FailureClass, InfraError, NotRun, Outcome
from webeval.outcomes.verdict import Verdict
from webeval.plugin.episode_fixtures import Unscored
from webeval.plugin.keys import ATTEMPT

SHOTS = Path(__file__).parent / "shots"
URL = "http://agent:hunter2-password@127.0.0.1:9/"  # a site's credentials in a URL the agent visited
ACTIONS = [{"tool": "computer", "action": "click", "x": 40, "y": 30},
           {"tool": "terminate", "status": "success", "answer": "42"}]


def episode(request, run_dir, task):
    attempt, folder = run_dir.attempt_dir(task.id)
    steps = []
    for n, action in enumerate(ACTIONS, start=1):
        shutil.copy(SHOTS / f"{n}.png", folder / f"step-{n:03d}.png")
        steps.append(StepRecord(step=n, screenshot=f"step-{n:03d}.png", url=URL, title="Lab", actions=[action],
                                results=["click done"] if n == 1 else [], raw=f"model reply {n}: I opened {URL}",
                                timings={"step": 0.5}, usage={"prompt_tokens": 10}))
    (folder / "evidence.json").write_text('{"urls": ["%s"]}' % URL)
    return Episode(task_id=task.id, folder=folder, attempt=attempt, answer="42", status="success", steps=steps)


def attempt(request, run_dir, task, made, outcome, verdict=None, **fields):
    record = AttemptRecord(run_id=run_dir.run_id, task_id=task.id, site=task.site, attempt=made.attempt,
                           worker=os.environ.get("PYTEST_XDIST_WORKER", "main"),
                           outcome=outcome, path=str(made.folder.relative_to(run_dir.path)),
                           verdict=verdict.model_dump(mode="json") if verdict else None, **fields)
    request.node.stash[ATTEMPT] = Attempt(record, made, verdict)
    if not outcome.valid:
        raise Unscored(record)


def test_task(task, request, webeval_run_dir):
    name = task.id.split("--")[1]
    if name == "precondition":
        raise NotRun("site_down", "the lab is down")
    if name == "harness":
        raise RuntimeError("a bug of the harness")
    made = episode(request, webeval_run_dir, task)
    if name == "infra":
        made.infra = InfraError("browser", "the browser died")
        attempt(request, webeval_run_dir, task, made, Outcome.infra_error, kind="browser",
                reason="infra[browser]: the browser died")
    if name == "judge":
        attempt(request, webeval_run_dir, task, made, Outcome.judge_failed, kind="timeout",
                reason="judge_failed: the judge timed out")
    if name == "budget":
        made.answer, made.failure_class, made.reason = None, FailureClass.step_budget, "no answer within 2 steps"
    if name == "invalid":
        made.steps[0].actions, made.steps[0].error = [], "computer: point (9999, 1) is outside the screenshot"
        made.failure_class, made.reason = FailureClass.invalid_output, "3 invalid replies in a row"
    if made.failure_class is not None:
        verdict = Verdict(success=False, reason=made.reason, judge="agent")
    else:
        verdict = Verdict(success=name == "passes", reason="matches" if name == "passes" else "answer 42 is wrong",
                          judge="lab-judge", model="judge-1", raw="judge raw reply")
    attempt(request, webeval_run_dir, task, made, Outcome.passed if verdict.success else Outcome.failed, verdict,
            failure_class=None if verdict.success else (made.failure_class or FailureClass.wrong_answer),
            reason="" if verdict.success else verdict.reason)
    assert verdict.success, verdict.reason
"""


def write_suite(folder: Path) -> Path:
    suite = folder / "suite"
    (suite / "shots").mkdir(parents=True)
    (suite / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (suite / "test_synthetic.py").write_text(textwrap.dedent(TEST))
    for n, color in ((1, (250, 250, 250)), (2, (30, 30, 30))):
        Image.new("RGB", (160, 90), color).save(suite / "shots" / f"{n}.png")
    return suite


def pytest_run(suite: Path, run_dir: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "OPENAI_API_KEY": SECRET}
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_CURRENT_TEST", "PYTEST_ADDOPTS"):
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", str(suite), "--rootdir", str(suite), "-p", "no:cacheprovider",
         "-p", "no:randomly", "--policy", "oracle", "--run-dir", str(run_dir), "-q", *args],
        cwd=suite, env=env, capture_output=True, text=True, timeout=300)


AS_WRITTEN = "allure-results-as-written"  # beside the run: its results before `webeval report` draws on them


def results_by_task(folder: Path) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for path in folder.glob("*-result.json"):
        data = json.loads(path.read_text())
        story = [label["value"] for label in data["labels"] if label["name"] == "story"]
        found.setdefault(story[0] if story else data["name"], []).append(data)
    return found


@pytest.fixture(scope="module")
def synthetic_run(tmp_path_factory) -> tuple[Path, str, dict]:
    """Two sessions into one run directory: all but two tasks on two workers, then one of the two left. A copy of
    its results as the sessions left them is kept beside it (AS_WRITTEN), since `webeval report` adds pictures.

    Made once per test session: under xdist the workers share it (the tests using it may land on either worker).
    """
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent
    base, made = shared / "allure-plugin", shared / "allure-plugin.json"
    with FileLock(str(shared / "allure-plugin.lock")):
        if not made.exists():
            suite, run_dir = write_suite(base), base / "run"
            done = pytest_run(suite, run_dir, "-n", "2", "-k", "not unrun and not later")
            placeholder = run_dir / "allure-results" / placeholder_file("synthetic", "Lab--later")
            assert placeholder.is_file(), done.stdout + done.stderr
            first = json.loads(placeholder.read_text())
            pytest_run(suite, run_dir, "-p", "no:xdist", "-k", "later")
            assert not placeholder.exists()
            shutil.copytree(run_dir / "allure-results", base / AS_WRITTEN)
            made.write_text(json.dumps({"stdout": done.stdout, "placeholder": first}))
    facts = json.loads(made.read_text())
    return base / "run", facts["stdout"], facts["placeholder"]


def test_every_task_of_the_population_has_one_result_with_its_status_and_prefix(synthetic_run):
    run_dir, stdout, _ = synthetic_run
    results = results_by_task(run_dir / "allure-results")
    assert sorted(results) == sorted(f"Lab--{n}" for n in NAMES), stdout
    for name, (status, prefix) in EXPECTED.items():
        [result] = results[f"Lab--{name}"]
        assert result["status"] == status, (name, result.get("statusDetails"))
        assert result["historyId"] == history_id("synthetic", f"Lab--{name}")
        message = (result.get("statusDetails") or {}).get("message", "")
        assert message.startswith(prefix) if prefix else not message, (name, message)
    assert "allure results:" in stdout and "(10 tasks, 2 without a test result)" in stdout  # the first session


def test_a_result_has_labels_volatile_parameters_steps_and_attachments(synthetic_run, tmp_path):
    run_dir, _, _ = synthetic_run
    folder = tmp_path / "allure-results"
    shutil.copytree(run_dir.parent / AS_WRITTEN, folder)
    [result] = results_by_task(folder)["Lab--passes"]
    labels = {(label["name"], label["value"]) for label in result["labels"]}
    assert {("suite", "synthetic"), ("feature", "Lab"), ("story", "Lab--passes"), ("tag", "synthetic"),
            ("outcome", "passed")} <= labels
    assert not {label for label in labels if label[0] == "parentSuite"}
    params = {p["name"]: p for p in result["parameters"]}
    assert params["task"]["value"] == "Lab--passes" and not params["task"].get("excluded")
    assert all(params[name]["excluded"] for name in ("worker", "attempt", "run id"))
    assert params["worker"]["value"].startswith("gw")
    assert [s["name"] for s in result["steps"]] == ["1. click (40, 30)", "2. terminate success: '42'"]
    first = {a["name"]: a for a in result["steps"][0]["attachments"]}
    assert set(first) == {"screenshot", "model reply", "actions"}
    [trajectory] = (run_dir / "tasks" / "Lab--passes").glob("attempt-*/step-001.png")
    original = trajectory.read_bytes()
    assert (folder / first["screenshot"]["source"]).read_bytes() == original  # the workers draw nothing
    # In the run's own results folder the screenshot is the trajectory's file itself: a hard link, no copy.
    assert (run_dir / "allure-results" / first["screenshot"]["source"]).stat().st_ino == trajectory.stat().st_ino
    assert (folder / first["model reply"]["source"]).read_text() == "model reply 1: I opened http://***@127.0.0.1:9/"
    top = {a["name"]: a for a in result["attachments"]}
    assert {"final answer", "verdict: success", "judge reply", "evidence"} <= set(top) and "replay" not in top
    verdict = json.loads((folder / top["verdict: success"]["source"]).read_text())
    assert verdict["reason"] == "matches" and verdict["judge"] == "lab-judge"

    # What `webeval report` adds: the marks on a picture of their own (the screenshot stays as it is), a replay.
    assert add_pictures(folder) == 7  # every result with steps: passes, wrong, budget, invalid, infra, judge, later

    [result] = results_by_task(folder)["Lab--passes"]
    first = {a["name"]: a for a in result["steps"][0]["attachments"]}
    assert set(first) == {"screenshot", CLICKED, "model reply", "actions"}
    assert (folder / first["screenshot"]["source"]).read_bytes() == original
    marked = Image.open(folder / first[CLICKED]["source"]).convert("RGB")
    red, green, blue = marked.getpixel((40, 30))  # the click point's dot (the whole small screen is in the picture)
    assert red > 150 and green < 100 and blue < 120
    assert marked.getpixel((150, 80)) == (250, 250, 250)  # far from the mark: the page as it was
    assert {a["name"] for a in result["steps"][1]["attachments"]} == {"screenshot", "model reply", "actions"}
    assert trajectory.read_bytes() == original
    top = {a["name"]: a for a in result["attachments"]}
    replay = Image.open(folder / top["replay"]["source"])
    assert replay.format == "WEBP" and replay.n_frames == 2
    assert (folder / top["replay"]["source"]).stat().st_size < 20_000

    before = {path.name: path.read_bytes() for path in folder.iterdir()}
    assert add_pictures(folder) == 0
    assert {path.name: path.read_bytes() for path in folder.iterdir()} == before


def test_an_invalid_reply_is_a_failed_step_and_the_fixtures_are_not_shown(synthetic_run):
    run_dir, _, _ = synthetic_run
    folder = run_dir / "allure-results"
    [result] = results_by_task(folder)["Lab--invalid"]
    step = result["steps"][0]
    assert step["name"] == "1. invalid reply" and step["status"] == "failed"
    assert "outside the screenshot" in step["statusDetails"]["message"]
    tasks = {r["uuid"] for rs in results_by_task(folder).values() for r in rs if r["status"] != "broken"}
    for container in folder.glob("*-container.json"):
        assert not tasks & set(json.loads(container.read_text()).get("children", []))


def test_environment_and_executor_name_what_ran_and_no_secret_reaches_the_results(synthetic_run):
    run_dir, _, _ = synthetic_run
    folder = run_dir / "allure-results"
    env = (folder / "environment.properties").read_text()
    for key in ("score=1/10", "complete=no\\: 1 missing, 4 masked", "population=synthetic", "policy=oracle",
                "judge=agent, lab-judge (judge-1)", "playwright=", "chromium=", "git.commit="):
        assert key in env, key
    executor = json.loads((folder / "executor.json").read_text())
    assert executor["buildName"] == f"synthetic {run_dir.name}"
    categories = {c["name"] for c in json.loads((folder / "categories.json").read_text())}
    assert {"Infrastructure", "Judge failed", "Precondition", "Invalid model output", "Wrong answer",
            "Step budget"} <= categories
    for path in folder.iterdir():
        assert SECRET.encode() not in path.read_bytes(), path.name
        assert b"hunter2-password" not in path.read_bytes(), path.name


def test_a_later_session_replaces_the_placeholder_with_a_real_result_of_the_same_history_id(synthetic_run):
    run_dir, _, placeholder = synthetic_run
    assert placeholder["status"] == "skipped" and placeholder["name"] == "Lab--later"
    assert {"name": "story", "value": "Lab--later"} in placeholder["labels"]
    [result] = results_by_task(run_dir / "allure-results")["Lab--later"]
    assert result["historyId"] == placeholder["historyId"] == history_id("synthetic", "Lab--later")
    assert result["fullName"] == placeholder["fullName"] and result["testCaseId"] == placeholder["testCaseId"]
    assert result["uuid"] != placeholder["uuid"] and result["steps"]


def test_without_the_allure_plugin_nothing_is_written(tmp_path):
    suite, run_dir = write_suite(tmp_path), tmp_path / "run"
    done = pytest_run(suite, run_dir, "-p", "no:xdist", "-p", "no:allure_pytest", "-k", "passes")
    assert (run_dir / "results.jsonl").is_file(), done.stdout + done.stderr
    assert not (run_dir / "allure-results").exists()


def test_a_session_without_tasks_leaves_no_run_directory(tmp_path):
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    assert True\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_XDIST_WORKER", "PYTEST_CURRENT_TEST")}
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q",
                           "--rootdir", str(tmp_path), str(tmp_path)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout
    assert not (tmp_path / "reports").exists()


def test_the_report_sorts_results_into_our_categories(synthetic_run, tmp_path):
    run_dir, _, _ = synthetic_run
    done = subprocess.run([str(Path(sys.executable).with_name("webeval")), "report", str(run_dir),
                           "--history", str(tmp_path / "history.jsonl"), "--single-file"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"report: {run_dir / 'report' / 'index.html'}" in done.stdout
    widget = json.loads((run_dir / "report" / "widgets" / "categories.json").read_text())
    counts = {node["name"]: node["statistic"]["total"] for node in widget["nodes"].values()
              if node.get("type") == "category"}
    assert counts == {"Infrastructure": 1, "Judge failed": 1, "Precondition": 1, "Missing": 1,
                      "Invalid model output": 1, "Wrong answer": 2, "Step budget": 1, "Harness error": 1}
    single = (run_dir / "report.html").read_text()
    assert "googletagmanager" not in single and SECRET not in single
