"""A task file too large to collect whole (`pytest suites/tasks --tasks-file` of 300,000 tasks): `--co` says in one
line how to select, and a selection (by site, split or sample) is the session's population. Outside pytest the same
file is the tasks benchmark read through its index, and the selection options are the benchmark's, at every door."""

from __future__ import annotations

import json
import re

import pytest

from fixtures.task_sets import write_tasks
from tests.runs import run
import argparse

from webeval.benchmarks import benchmark_flags, benchmark_setup, open_benchmark
from webeval.benchmarks.tasks.task_subsets import Selection, collectable, select
from webeval.cli import main
from webeval.flags import add_arguments, values_of
from webeval.outcomes.evidence import Evidence
from webeval.outcomes.record import JudgeError
from webeval.tasks import TaskFileError
from webeval.tasks.taskset import TaskSet, TaskSubset

SUITE = "suites/tasks"


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    return write_tasks(tmp_path_factory.mktemp("big") / "webgym.jsonl", 300_000)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return {"WEBEVAL_CACHE": str(tmp_path_factory.mktemp("cache"))}


def collected(output: str) -> list[str]:
    return re.findall(r"test_tasks\.py::test_task\[([^\]]+)\]", output)


def test_collecting_a_300k_file_says_how_to_select(big, cache, tmp_path):
    job = run([SUITE, "--tasks-file", str(big), "--co"], tmp_path, env=cache)
    assert job.proc.returncode == 4, job.output
    errors = [line for line in job.output.splitlines() if line.startswith("ERROR")]
    assert errors == [f"ERROR: {big} holds 300,000 tasks, more than a session collects (5,000): select some with "
                      "--tasks-site NAME, --tasks-split DIR (the test side of `webeval split`) or --tasks-sample N "
                      "[--tasks-seed S] (docs/tasksets.md)"], job.output
    sampled = run([SUITE, "--tasks-file", str(big), "--tasks-sample", "20", "--tasks-seed", "3", "--co"], tmp_path,
                  env=cache)
    assert sampled.proc.returncode == 0 and len(collected(sampled.output)) == 20, sampled.output
    again = run([SUITE, "--tasks-file", str(big), "--tasks-sample", "20", "--tasks-seed", "3", "--co"], tmp_path,
                env=cache)
    assert collected(again.output) == collected(sampled.output)  # the seed's sample, again
    site = run([SUITE, "--tasks-file", str(big), "--tasks-site", "site7", "--co"], tmp_path, env=cache)
    assert collected(site.output) == [f"site7--{k}" for k in range(7, 300_000, 5000)], site.output
    header = run([SUITE, "--tasks-file", str(big), "--tasks-site", "site7", "--co", "-v"], tmp_path, env=cache)
    assert f"task file: {big}, 60 tasks of 300,000 (webgym[site=site7]) (60 rubric)" in header.output, header.output


def test_a_split_selects_its_test_side_and_bad_selections_are_one_line(cache, tmp_path, monkeypatch, capsys):
    path = write_tasks(tmp_path / "set.jsonl", 6000, sites=600)
    monkeypatch.setenv("WEBEVAL_CACHE", cache["WEBEVAL_CACHE"])
    assert main(["split", str(path), "--test-sites", "3", "--seed", "2", "--out", str(tmp_path / "split")]) == 0
    test_sites = json.loads((tmp_path / "split" / "split.json").read_text())["test_sites"]
    job = run([SUITE, "--tasks-file", str(path), "--tasks-split", str(tmp_path / "split"), "--co"], tmp_path, env=cache)
    ids = collected(job.output)
    assert len(ids) == 30 and {i.split("--")[0] for i in ids} == set(test_sites), job.output
    for selection, error in ((Selection(sites=("nowhere",)), "--tasks-site 'nowhere': no task of"),
                             (Selection(sample=7000), "--tasks-sample 7000: choose between 1 and 6000 tasks"),
                             (Selection(split=tmp_path), "--tasks-split: ")):
        with pytest.raises(TaskFileError) as raised:
            select(path, selection)
        assert error in str(raised.value) and "\n" not in str(raised.value)
    whole = select(path, Selection())  # more than a session collects: read through the index, refused by pytest
    assert isinstance(whole.tasks, TaskSet) and whole.population.size == 6000
    with pytest.raises(TaskFileError, match=r"holds 6,000 tasks, more than a session collects \(5,000\): select"):
        collectable(path, Selection(), whole.population.size)
    assert len(select(path, Selection(sample=50, seed=1)).tasks) == 50


def test_a_generated_file_is_a_task_file_for_the_suite(cache, tmp_path):
    rows = [{"id": f"gen--{k}", "site": "Allrecipes", "domain": "food", "goal": f"Find recipe {k}.",
             "start_url": "https://www.allrecipes.com/", "rubric": [["The recipe is named", "It is vegetarian"],
                                                                   ["Its prep time is given"]],
             "difficulty": 2, "tags": ["generated"]} for k in range(3)]
    path = tmp_path / "generated.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    job = run([SUITE, "--tasks-file", str(path), "--co"], tmp_path, env=cache)
    assert collected(job.output) == ["gen--0", "gen--1", "gen--2"], job.output


def test_the_selection_options_are_the_benchmarks_at_every_door(big, cache, monkeypatch):
    monkeypatch.setenv("WEBEVAL_CACHE", cache["WEBEVAL_CACHE"])
    parser = argparse.ArgumentParser()
    flags = benchmark_flags(f"tasks:{big}")
    add_arguments(parser, flags)  # as `webeval serve --suite tasks:FILE` or `webeval rollouts collect` render them
    values = values_of(parser.parse_args(["--tasks-site", "site7,site8", "--tasks-sample", "5", "--tasks-seed", "1"]),
                       flags)
    setup = benchmark_setup(f"tasks:{big}", values)
    assert setup.population.size == 5 and {task.site for task in setup.tasks} <= {"site7", "site8"}
    assert setup.population.name == "webgym[site=site7,site8;sample=5,seed=1]"
    assert [t.id for t in benchmark_setup(f"tasks:{big}", values).tasks] == [t.id for t in setup.tasks]


def test_rollouts_collect_takes_the_selection_options(big, cache, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("WEBEVAL_CACHE", cache["WEBEVAL_CACHE"])
    assert main(["rollouts", "collect", "--suite", f"tasks:{big}", "--help"]) == 0
    helped = capsys.readouterr().out
    assert all(f"--tasks-{name}" in helped for name in ("site", "split", "sample", "seed")), helped
    assert main(["rollouts", "collect", "--suite", f"tasks:{big}", "--tasks-site", "site7", "--tasks-sample", "61",
                 "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.strip() == ("webeval rollouts collect: error: --tasks-sample 61: choose between 1 "
                                               "and 60 tasks")
    assert not (tmp_path / "out" / "rollouts.jsonl").exists()


async def test_a_300k_file_is_the_tasks_benchmark_read_through_its_index(big, cache, monkeypatch):
    monkeypatch.setenv("WEBEVAL_CACHE", cache["WEBEVAL_CACHE"])
    setup = benchmark_setup(f"tasks:{big}")
    assert isinstance(setup.tasks, TaskSet) and setup.population.size == 300_000
    assert setup.header[0].startswith(f"task file: {big}, 300,000 tasks (read through its index ")
    async with open_benchmark(f"tasks:{big}") as benchmark:
        task = benchmark.task("site77--150077")
        assert task.start_url == "https://www.site77.com/p/150077" and task.difficulty == 150077 % 5 + 1
        assert benchmark.environment.prepare(task).task == task
        with pytest.raises(JudgeError, match="has a rubric and no judge is configured"):
            await benchmark.judge(task, Evidence(task_id=task.id, goal=task.goal))
        with pytest.raises(KeyError, match="'site77--1' is not in benchmark tasks"):
            benchmark.task("site77--1")
    async with open_benchmark(f"tasks:{big}", {"tasks_sample": 6000, "tasks_seed": 2}) as benchmark:
        assert isinstance(benchmark.tasks, TaskSubset) and len(benchmark.tasks) == 6000
        inside, outside = benchmark.population.ids[10], next(i for i in TaskSet.open(big).ids
                                                              if i not in benchmark.tasks)
        assert benchmark.task(inside).id == inside
        with pytest.raises(KeyError, match=f"{outside!r} is not in benchmark tasks"):
            benchmark.task(outside)


def test_a_selection_larger_than_a_session_says_to_narrow_it(big, cache, tmp_path):
    job = run([SUITE, "--tasks-file", str(big), "--tasks-sample", "6000", "--co"], tmp_path, env=cache)
    assert job.proc.returncode == 4, job.output
    assert (f"ERROR: {big}: the selection sample=6000,seed=0 holds 6,000 tasks, more than a session collects "
            "(5,000): narrow it, or --tasks-sample N") in job.output.splitlines(), job.output
