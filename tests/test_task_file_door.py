"""`pytest my.tasks.jsonl`: a task file collected as a test file, from a folder of its own that holds no conftest and
no configuration. Its tasks end as they do under `pytest suites/tasks --tasks-file` (the same records, reasons and
summary, with the judge's options), under xdist too; a malformed file is a collection error naming file and line and
writes nothing; several task files are refused in one line; a folder walk collects only files named as task files
whose first task looks like one; and the suite folders are what `webeval new-suite` writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fixtures.openai_stub import OpenAIStub
from fixtures.task_sets import write_tasks
from tests.conftest import ROOT
from tests.runs import records, run, summary
from tests.test_task_files import EXAMPLE, FAILING, GOOD, RUBRIC, judge, task_file
from webeval.benchmarks import PACKAGES
from webeval.benchmarks.miniwob.server import PageServer
from webeval.benchmarks.suite_folder import suite_files
from webeval.cli import main

SUITE = str(ROOT / "suites" / "tasks")


def folder_of_its_own(tmp_path: Path) -> Path:
    """An empty folder outside the repository: no conftest, no pytest configuration above it."""
    folder = tmp_path / "mine"
    folder.mkdir(parents=True)
    return folder


def outcomes(run_dir: Path) -> dict[str, tuple]:
    return {r["task_id"]: (r["outcome"], r.get("kind"), r.get("failure_class"), r["reason"])
            for r in records(run_dir)}


def counts(run_dir: Path) -> dict:
    found = summary(run_dir)
    return {key: found[key] for key in ("n", "passed", "failed", "masked", "missing", "complete")}


def test_a_task_file_runs_as_a_test_file_with_the_suites_outcomes(tmp_path):
    folder = folder_of_its_own(tmp_path)
    with PageServer(EXAMPLE) as site, OpenAIStub(judge) as stub:
        path = task_file(folder / "shop.tasks.jsonl", site.origin, [*FAILING, RUBRIC])
        judging = ["--judge-base-url", stub.base_url, "--judge-model", "stub-model"]
        door = run([path.name, "--policy", "oracle", "-n", "2", *judging, "-v"], tmp_path, cwd=folder)
        suite = run(["-p", "no:xdist", SUITE, "--tasks-file", str(path), "--policy", "oracle", "--run-dir",
                     str(tmp_path / "suite"), *judging], tmp_path)
    (run_dir,) = (folder / "reports" / "runs").iterdir()  # the run directory, where pytest was run
    assert door.proc.returncode == suite.proc.returncode == 12, door.output  # failures, and a judge_failed task
    assert "task file: shop.tasks.jsonl, 9 tasks (2 answer, 4 page, 1 rubric, 2 url)" in door.output
    assert "FAILED shop.tasks.jsonl::test_task[sencha-wrong]" in door.output
    assert outcomes(run_dir) == outcomes(tmp_path / "suite") and len(outcomes(run_dir)) == 9
    assert outcomes(run_dir)["sencha-wrong"] == ("failed", None, "wrong_answer", "the answer '4.50' is not equal to "
                                                                                "'3.80'")
    assert counts(run_dir) == counts(tmp_path / "suite")
    assert (counts(run_dir)["n"], counts(run_dir)["passed"], counts(run_dir)["failed"]) == (9, 4, 4)
    population = json.loads((run_dir / "population.json").read_text())
    assert population["name"] == "shop.tasks" and len(population["ids"]) == 9
    assert (run_dir / "summary.md").is_file() and any((run_dir / "allure-results").iterdir())


def test_a_malformed_task_file_is_a_collection_error_naming_file_and_line(tmp_path):
    folder = folder_of_its_own(tmp_path)
    (folder / "bad.jsonl").write_text(json.dumps(GOOD) + "\n" + '{"id": "t2", "site": "shop"' + "\n")
    (folder / "bad.yaml").write_text("- id: t1\n  goal: [unclosed\n")
    for name, line in (("bad.jsonl", "bad.jsonl:2: invalid JSON: Expecting ',' delimiter (column 28)"),
                       ("bad.yaml", "bad.yaml:3: invalid YAML: expected ',' or ']', but got '<stream end>'")):
        job = run([name, "--policy", "oracle"], tmp_path, cwd=folder)
        assert job.proc.returncode == 2, job.output
        assert f"ERROR collecting {name}" in job.output and line in job.output.splitlines(), job.output
        assert "Traceback" not in job.output
    assert not (folder / "reports").exists()  # nothing written


def test_several_task_files_are_one_suite_too_many_said_in_one_line(tmp_path):
    folder = folder_of_its_own(tmp_path)
    for name, count in (("a.tasks.jsonl", 2), ("b.tasks.jsonl", 3)):
        (folder / name).write_text("".join(json.dumps({**GOOD, "id": f"t{k}"}) + "\n" for k in range(count)))
    job = run(["a.tasks.jsonl", "b.tasks.jsonl", "--policy", "oracle"], tmp_path, cwd=folder)
    assert job.proc.returncode == 4, job.output
    assert ("ERROR: this session collects 2 suites: a.tasks.jsonl (a.tasks, 2 tasks), b.tasks.jsonl (b.tasks, 3 "
            "tasks); a run scores one suite's population: run one suite per session, e.g. `pytest a.tasks.jsonl`"
            ) in job.output.splitlines(), job.output
    assert not (folder / "reports").exists()
    # beside a benchmark's suite, whose plugin declared the judge's options first: the same one line
    mixed = run(["suites/rubric", str(folder / "a.tasks.jsonl"), "--co"], tmp_path)
    assert mixed.proc.returncode == 4, mixed.output
    assert (f"ERROR: this session collects 2 suites: suites/rubric (rubric, 15 tasks), {folder / 'a.tasks.jsonl'} "
            "(a.tasks, 2 tasks); a run scores one suite's population") in mixed.output, mixed.output


def test_a_folder_walk_collects_only_files_named_and_shaped_as_task_files(tmp_path):
    folder = folder_of_its_own(tmp_path)
    (folder / "evals").mkdir()
    (folder / "evals" / "tasks.jsonl").write_text(json.dumps(GOOD) + "\n")
    (folder / "data.jsonl").write_text(json.dumps({**GOOD, "id": "not-collected"}) + "\n")  # a task, not named so
    (folder / "results.tasks.jsonl").write_text('{"task_id": "x", "outcome": "passed"}\n')  # named so, not a task
    (folder / "deploy.tasks.yaml").write_text("- name: restart\n  service: web\n")
    job = run(["--co"], tmp_path, cwd=folder)
    assert job.proc.returncode == 0, job.output
    assert [line for line in job.output.splitlines() if "::" in line] == ["evals/tasks.jsonl::test_task[t1]"]
    named = run(["data.jsonl", "--co"], tmp_path, cwd=folder)  # named on the command line: collected, any name
    assert [line for line in named.output.splitlines() if "::" in line] == ["data.jsonl::test_task[not-collected]"]
    patterns = run(["--co", "-o", "webeval_task_files=*.jsonl"], tmp_path, cwd=folder)
    assert sorted(line for line in patterns.output.splitlines() if "::" in line) == [
        "data.jsonl::test_task[not-collected]", "evals/tasks.jsonl::test_task[t1]"], patterns.output


def test_the_tasks_options_come_with_a_named_task_file(tmp_path, monkeypatch):
    monkeypatch.setenv("WEBEVAL_CACHE", str(tmp_path / "cache"))
    folder = folder_of_its_own(tmp_path)
    write_tasks(folder / "big.tasks.jsonl", 6000, sites=600)
    too_many = run(["big.tasks.jsonl", "--co"], tmp_path, cwd=folder)
    assert too_many.proc.returncode == 2, too_many.output
    assert ("big.tasks.jsonl holds 6,000 tasks, more than a session collects (5,000): select some with "
            "--tasks-site NAME") in too_many.output
    sampled = run(["big.tasks.jsonl", "--tasks-sample", "7", "--tasks-seed", "3", "--co"], tmp_path, cwd=folder)
    assert len([line for line in sampled.output.splitlines() if "::test_task[" in line]) == 7, sampled.output
    # what a newcomer tries first: the suite's option, in a folder with no suite
    (folder / "shop.jsonl").write_text(json.dumps(GOOD) + "\n")
    given = run(["--tasks-file", "shop.jsonl", "--co"], tmp_path, cwd=folder)
    assert [line for line in given.output.splitlines() if "::" in line] == ["shop.jsonl::test_task[t1]"], given.output
    bare = run(["--help"], tmp_path, cwd=folder_of_its_own(tmp_path / "empty")).output
    assert "--tasks-sample" not in bare and "--judge-model" not in bare


def test_the_suite_folders_are_what_new_suite_writes(tmp_path, capsys):
    for name in PACKAGES:
        written = suite_files(name, f"suites/{name}")
        assert {p.name for p in (ROOT / "suites" / name).glob("*.py")} == set(written), name
        for file, text in written.items():
            assert (ROOT / "suites" / name / file).read_text() == text, f"suites/{name}/{file}"
    assert main(["new-suite", "local", str(tmp_path / "local")]) == 0
    assert "run it: pytest" in capsys.readouterr().out
    conftest = tmp_path / "local" / "conftest.py"
    conftest.write_text("# mine")
    assert main(["new-suite", "local", str(tmp_path / "local")]) == 2
    assert capsys.readouterr().err.strip() == (f"webeval new-suite: error: {conftest} exists: remove it, or name "
                                               "another folder (webeval new-suite local FOLDER)")
    assert conftest.read_text() == "# mine"
    with pytest.raises(SystemExit):
        main(["new-suite", "webarena"])
