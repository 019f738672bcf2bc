"""Task files of one's own (`pytest suites/tasks --tasks-file F`): the worked example of docs/suites.md run by the
oracle on its local page, each verifier passing and failing for real, a rubric judged by a model, the same verdicts
again from the evidence, and every malformed file refused in one line naming the file and line."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from fixtures.openai_stub import OpenAIStub, Reply, text
from tests.conftest import ROOT
from tests.runs import records, run
from webeval.benchmarks import benchmark_flags, benchmark_setup
from webeval.benchmarks.miniwob.server import PageServer
from webeval.benchmarks.tasks.spec import read_task_file
from webeval.flags import OptionError, add_arguments
from webeval.tasks import TaskFileError

SUITE = "suites/tasks"
EXAMPLE = ROOT / "docs" / "examples" / "tasks"
EXAMPLE_ORIGIN = "http://127.0.0.1:8000"
# The example's solutions, held to expectations they do not meet; and a selector that is not CSS (the task's bug).
FAILING = [
    {"id": "sencha-wrong", "answer": {"exact": "3.80"}, "like": "sencha-price"},
    {"id": "search-wrong", "url": {"contains": "q=assam"}, "like": "search-oolong"},
    {"id": "assam-wrong", "page": {"selector": "#basket", "exact": "Assam x 3"}, "like": "two-assam"},
    {"id": "assam-missing", "page": {"selector": "#cart", "contains": "Assam"}, "like": "two-assam"},
    {"id": "assam-bad-css", "page": {"selector": "#basket[", "contains": "Assam"}, "like": "two-assam"},
]
RUBRIC = {"id": "assam-rubric", "rubric": ["The basket holds Assam", "Nothing else is in the basket"],
          "like": "two-assam"}


def example_rows(origin: str) -> list[dict]:
    lines = (EXAMPLE / "tasks.jsonl").read_text().replace(EXAMPLE_ORIGIN, origin).splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def task_file(path: Path, origin: str, extra: list[dict]) -> Path:
    rows = example_rows(origin)
    by_id = {row["id"]: row for row in rows}
    verifiers = ("answer", "url", "page", "rubric")
    for change in extra:
        base = {k: v for k, v in by_id[change["like"]].items() if k not in verifiers}
        rows.append({**base, **{k: v for k, v in change.items() if k != "like"}})
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def judge(request: dict) -> Reply:
    return text('{"reasoning": "the basket shows two pots of Assam", "verdict": "SUCCESS"}')


def test_the_worked_example_and_every_verifier_pass_and_fail_for_real_and_again_from_the_evidence(tmp_path):
    run_dir = tmp_path / "run"
    with PageServer(EXAMPLE) as site, OpenAIStub(judge) as stub:
        path = task_file(tmp_path / "mine.jsonl", site.origin, [*FAILING, RUBRIC])
        judging = ["--judge-base-url", stub.base_url, "--judge-model", "stub-model"]
        job = run(["-p", "no:xdist", SUITE, "--tasks-file", str(path), "--policy", "oracle", "--run-dir",
                   str(run_dir), *judging, "-v"], run_dir)
        asked = [json.dumps(request) for request in stub.requests if "messages" in request]
    found = {r["task_id"]: r for r in records(run_dir)}
    assert job.proc.returncode == 12, job.output  # failures, and a task that did not complete (judge_failed)
    assert f"task file: {path}, 9 tasks (2 answer, 4 page, 1 rubric, 2 url)" in job.output
    passed = {task for task, r in found.items() if r["outcome"] == "passed"}
    assert passed == {"sencha-price", "search-oolong", "two-assam", "assam-rubric"}, job.output
    failed = {task: r["reason"] for task, r in found.items() if r["outcome"] == "failed"}
    assert failed == {
        "sencha-wrong": "the answer '4.50' is not equal to '3.80'",
        "search-wrong": f"the final URL '{site.origin}/index.html?q=oolong' is not containing 'q=assam'",
        "assam-wrong": "the text of '#basket' 'Assam x 2' is not equal to 'Assam x 3'",
        "assam-missing": f"no element matches '#cart' on {site.origin}/index.html",
    }
    assert found["assam-wrong"]["failure_class"] == "wrong_state"
    assert found["sencha-wrong"]["failure_class"] == "wrong_answer"
    bad_css = found["assam-bad-css"]
    assert (bad_css["outcome"], bad_css["kind"]) == ("judge_failed", "config")
    assert "the selector '#basket[' is not CSS" in bad_css["reason"]
    evidence = json.loads((run_dir / found["two-assam"]["path"] / "evidence.json").read_text())
    assert evidence["state"]["probe"]["text"] == "Assam x 2"
    assert len(asked) == 1 and "Nothing else is in the basket" in asked[0]  # the rubric went to the judge
    assert found["assam-rubric"]["verdict"]["details"]["rubric"] == RUBRIC["rubric"]
    unjudged = run(["-p", "no:xdist", SUITE, "--tasks-file", str(path), "--rejudge", str(run_dir), "-v"], run_dir)
    assert "rubric judge: NOT CONFIGURED" in unjudged.output
    (rubric,) = [r for r in records(run_dir)[len(found):] if r["task_id"] == "assam-rubric"]
    assert (rubric["outcome"], rubric["kind"]) == ("judge_failed", "config"), unjudged.output
    assert "has a rubric and no judge is configured" in rubric["reason"]
    before = len(records(run_dir))
    with OpenAIStub(judge) as stub:
        judging = ["--judge-base-url", stub.base_url, "--judge-model", "stub-model"]
        again = run(["-p", "no:xdist", SUITE, "--tasks-file", str(path), "--rejudge", str(run_dir), *judging], run_dir)
    after = {r["task_id"]: r for r in records(run_dir)[before:]}
    assert {t for t, r in after.items() if r["outcome"] == "passed"} == passed, again.output
    assert {t: r["reason"] for t, r in after.items() if r["outcome"] == "failed"} == failed


GOOD = {"id": "t1", "site": "shop", "goal": "Find tea.", "start_url": "http://127.0.0.1:8000/",
        "answer": {"exact": "tea"}}


@pytest.mark.parametrize("row, message", [
    ('{"id": "t2", "site": "shop"', "invalid JSON: Expecting ',' delimiter (column 28)"),
    ('["t2"]', "a task must be a JSON object"),
    ({**GOOD, "id": "t2", "url": {"regex": "x"}}, "a task needs exactly one verifier of answer, url, page, rubric "
                                                   "(answer and url given)"),
    ({k: v for k, v in GOOD.items() if k != "answer"} | {"id": "t2"},
     "a task needs exactly one verifier of answer, url, page, rubric (none given)"),
    ({**GOOD, "id": "t2", "answer": {"regex": "(unclosed"}},
     "answer: regex '(unclosed' does not compile: missing ), unterminated subpattern at position 0"),
    ({**GOOD, "id": "t2", "answer": {"exact": "a", "contains": "b"}},
     "answer: give exactly one of 'exact', 'contains' or 'regex'"),
    ({**GOOD, "id": "t2", "answer": None, "page": {"exact": "Saved"}}, "page.selector: Field required"),
    ({**GOOD, "id": "t2", "answer": None, "rubric": []}, "rubric: Value should have at least 1 item after validation"),
    ({**GOOD, "id": "t2", "answer": None, "rubric": ["fine", " "]}, "a rubric criterion is empty"),
    ({**GOOD, "id": "t2", "answer": None, "rubric": [["fine"], []]}, "a rubric criterion is empty"),
    ({**GOOD, "id": "t2", "answer": None, "rubric": [["a"], ["b"]], "difficulty": 3},
     "difficulty 3 is not the number of fact groups (2)"),
    ({**GOOD, "id": "t2", "verifier": "x"}, "verifier: Extra inputs are not permitted"),
    ({**GOOD, "id": "t2", "goal": ""}, "goal: String should have at least 1 character"),
    ({**GOOD, "id": "t2", "start_url": "file:///etc/passwd"}, "start_url 'file:///etc/passwd' is not an http(s) URL"),
    ({**GOOD, "id": "../t2"}, "task id '../t2' is not a safe path segment"),
    (GOOD, "duplicate task id 't1' (first on line 1)"),
    ({**GOOD, "id": "t2", "solution": [{"do": "click"}]}, "oracle step 'click' needs selector"),
    ({**GOOD, "id": "t2", "solution": [{"do": "drag", "selector": "#a"}]}, "oracle step 'drag' needs to"),
])
def test_a_malformed_task_file_is_refused_naming_file_and_line(tmp_path, row, message):
    path = tmp_path / "mine.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + (row if isinstance(row, str) else json.dumps(row)) + "\n")
    with pytest.raises(TaskFileError) as info:
        read_task_file(path)
    assert str(info.value).startswith(f"{path}:2: ") and message in str(info.value)
    assert "\n" not in str(info.value)


GOOD_YAML = "- id: t1\n  site: shop\n  goal: Find tea.\n  start_url: http://127.0.0.1:8000/\n  answer: {exact: tea}\n"


def test_the_yaml_example_is_the_same_tasks_as_the_jsonl_one():
    assert read_task_file(EXAMPLE / "tasks.yaml") == read_task_file(EXAMPLE / "tasks.jsonl")


@pytest.mark.parametrize("text, message", [
    ("- id: t1\n  goal: [unclosed\n", "mine.yaml:3: invalid YAML: expected ',' or ']', but got '<stream end>'"),
    ("id: t1\n", "mine.yaml:1: a YAML task file is a list of tasks ('- id: ...')"),
    (GOOD_YAML + "- just text\n", "mine.yaml:6: a task must be a mapping (id: ..., goal: ...)"),
    (GOOD_YAML + "\n- id: t2\n  site: shop\n  goal: Find tea.\n  start_url: http://127.0.0.1:8000/\n",
     "mine.yaml:7: a task needs exactly one verifier of answer, url, page, rubric (none given)"),
    ("", "mine.yaml: no tasks in file"),
])
def test_a_malformed_yaml_task_file_is_refused_naming_file_and_line(tmp_path, text, message):
    path = tmp_path / "mine.yaml"
    path.write_text(text)
    with pytest.raises(TaskFileError) as info:
        read_task_file(path)
    assert str(info.value) == f"{tmp_path}/{message}"


def test_a_malformed_task_file_stops_the_session_before_anything_runs(tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + json.dumps({**GOOD, "id": "t2", "answer": None}) + "\n")
    job = run([SUITE, "--tasks-file", str(path), "--policy", "oracle", "--run-dir", str(tmp_path / "run")], tmp_path)
    assert job.proc.returncode == 4, job.output
    assert f"ERROR: {path}:2: a task needs exactly one verifier of answer, url, page, rubric (none given)" in job.output
    assert not (tmp_path / "run").exists()
    missing = run([SUITE, "--policy", "oracle", "--run-dir", str(tmp_path / "run")], tmp_path)
    assert missing.proc.returncode == 4
    assert "ERROR: this suite runs a task file: pass --tasks-file PATH" in missing.output


@pytest.mark.parametrize("args, message", [
    (["--judge-base-url", "http://127.0.0.1:9/v1", "--judge-model", "m", "--judge-api-key-env", "NO_SUCH_JUDGE_KEY"],
     "the judge's API key variable $NO_SUCH_JUDGE_KEY is not set"),
    (["--judge-profile", "nope"], "--judge-profile 'nope' is unknown"),
    (["--judge-base-url", "http://127.0.0.1:9/v1"], "the model judge needs --judge-base-url and --judge-model"),
    (["--judge-model", "m", "--judge-timeout", "0"], "--judge-timeout must be positive"),
])
def test_bad_judge_options_are_refused_in_one_line(monkeypatch, args, message):
    monkeypatch.delenv("NO_SUCH_JUDGE_KEY", raising=False)
    parser = argparse.ArgumentParser(exit_on_error=False)
    add_arguments(parser, benchmark_flags("tasks"))
    values = vars(parser.parse_args(["--tasks-file", str(EXAMPLE / "tasks.jsonl"), *args]))
    with pytest.raises(OptionError) as info:
        benchmark_setup("tasks", values)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_an_unreachable_rubric_judge_stops_the_session_before_any_task(tmp_path):
    path = task_file(tmp_path / "mine.jsonl", EXAMPLE_ORIGIN, [RUBRIC])
    job = run([SUITE, "--tasks-file", str(path), "--policy", "oracle", "--run-dir", str(tmp_path / "run"),
               "--judge-base-url", "http://127.0.0.1:9/v1", "--judge-model", "m"], tmp_path)
    assert job.proc.returncode == 3, job.output
    assert "webeval: the judge endpoint http://127.0.0.1:9/v1 is unreachable" in job.output
    assert records(tmp_path / "run") == []


def test_benchmark_options_exist_only_in_sessions_that_load_their_package(tmp_path):
    bare = run(["tests", "--help"], tmp_path).output
    assert "--tasks-file" not in bare and "--miniwob-seeds" not in bare and "--judge-base-url" not in bare
    assert "--tasks-file" in run([SUITE, "--help"], tmp_path).output
    assert "--miniwob-seeds" in run(["suites/miniwob", "--help"], tmp_path).output
