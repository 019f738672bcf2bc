"""`webeval tasks generate`: a model (the scripted endpoint, over real HTTP through the openai client) writes seed
tasks' rubrics as fact groups; unreadable replies and invalid rubrics are asked again, then reported, never written;
what is written is a task file for the index and for `pytest suites/tasks`."""

from __future__ import annotations

import json
import re

import pytest

from fixtures.openai_stub import OpenAIStub, Reply, text
from tests.runs import run
from webeval.cli import main
from webeval.tasks import read_jsonl
from webeval.tasks.rubric_writing import PROMPT_VERSION
from webeval.tasks.taskset import TaskSet

GOOD = {"site": "Allrecipes", "domain": "food", "fact_groups": [
    ["The recipe is a vegetarian lasagna", "It has more than 100 reviews"], ["The answer gives its prep time"]]}


def reply_to(request: dict) -> Reply:
    """What the model says, by the goal it was asked about and how often it was asked."""
    goal = request["messages"][1]["content"]
    asked = sum(1 for m in request["messages"] if m["role"] == "assistant") + 1
    if "lasagna" in goal:
        return text("Here is the rubric:\n```json\n" + json.dumps(GOOD) + "\n```")
    if "weather" in goal:
        return text("I would rather not write rubrics today.")  # never readable
    if "flight" in goal:
        return text(json.dumps({"site": "Kayak", "domain": "travel", "fact_groups": [["The price is shown"], ["  "]]}))
    if "paper" in goal:  # unreadable once, then fine
        return text("{not json") if asked == 1 else text(json.dumps(
            {"site": "ArXiv", "domain": "science", "fact_groups": [["The newest paper is named"]]}))
    return text(json.dumps({"site": "Ignored", "domain": "news", "fact_groups": [["The top story is named"]]}))


SEEDS = [
    {"goal": "Find a vegetarian lasagna with more than 100 reviews and give its prep time.",
     "start_url": "https://www.allrecipes.com/"},
    {"goal": "What is the weather in Paris?", "start_url": "https://weather.com/"},
    {"goal": "Find the cheapest flight from Paris to Rome.", "start_url": "https://www.kayak.com/"},
    {"goal": "Name the newest paper on diffusion models.", "start_url": "https://arxiv.org/"},
    {"id": "bbc-1", "site": "BBC News", "goal": "Name today's top story.", "start_url": "https://www.bbc.co.uk/news"},
]


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("WEBEVAL_CACHE", str(tmp_path / "cache"))


def seeds_file(tmp_path, seeds=SEEDS):
    path = tmp_path / "seeds.jsonl"
    path.write_text("".join(json.dumps(seed) + "\n" for seed in seeds))
    return path


def profile(tmp_path, stub):
    path = tmp_path / "writer.json"
    path.write_text(json.dumps({"base_url": stub.base_url, "model": "writer-model"}))
    return path


def test_rubrics_are_written_as_fact_groups_and_failures_are_reported(tmp_path, capsys):
    seeds, out = seeds_file(tmp_path), tmp_path / "tasks.jsonl"
    with OpenAIStub(reply_to, models=("writer-model",)) as stub:
        code = main(["tasks", "generate", str(seeds), "--judge-profile", str(profile(tmp_path, stub)),
                     "--out", str(out), "--concurrency", "2"])
    captured = capsys.readouterr()
    assert code == 1  # two seeds could not be written
    tasks = read_jsonl(out)
    assert [t.id for t in tasks] == ["Allrecipes--1", "ArXiv--4", "bbc-1"]  # seed order; ids from site and line
    lasagna = tasks[0]
    assert lasagna.rubric == GOOD["fact_groups"] and lasagna.difficulty == 2 and lasagna.domain == "food"
    assert lasagna.site == "Allrecipes" and lasagna.goal == SEEDS[0]["goal"] and "generated" in lasagna.tags
    assert tasks[2].site == "BBC News" and tasks[2].domain == "news"  # the seed's own site wins
    err = captured.err.strip().splitlines()
    assert err == [
        f"webeval tasks generate: {seeds}:2: not written: unreadable reply: no JSON object with fact_groups in it "
        "(after 3 replies)",
        f"webeval tasks generate: {seeds}:3: not written: invalid rubric: criterion 1 of fact group 2 is empty "
        "(after 3 replies)"]
    report = json.loads((tmp_path / "tasks.jsonl.report.json").read_text())
    assert (report["written"], report["failed"], report["model"]) == (3, 2, "writer-model")
    assert report["prompt_version"] == PROMPT_VERSION and [f["line"] for f in report["failures"]] == [2, 3]
    assert report["asked"] == 1 + 3 + 3 + 2 + 1  # the paper was asked twice: unreadable, then fine
    asked_again = [r for r in stub.requests if "paper" in r["messages"][1]["content"]][-1]
    assert "Your reply could not be used (unreadable reply" in asked_again["messages"][-1]["content"]
    assert len(TaskSet.open(out)) == 3  # a task file the index reads, and the task file suite collects
    job = run(["suites/tasks", "--tasks-file", str(out), "--co"], tmp_path)
    assert re.findall(r"test_task\[([^\]]+)\]", job.output) == ["Allrecipes--1", "ArXiv--4", "bbc-1"], job.output


def test_an_endpoint_that_fails_writes_nothing(tmp_path, capsys):
    seeds, out = seeds_file(tmp_path), tmp_path / "tasks.jsonl"
    stub = OpenAIStub(reply_to, models=("writer-model",)).start()
    writer = profile(tmp_path, stub)
    stub.stop()
    assert main(["tasks", "generate", str(seeds), "--judge-profile", str(writer), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"webeval tasks generate: error: the judge endpoint {stub.base_url} is unreachable")
    assert len(err.splitlines()) == 1
    with OpenAIStub([Reply(status=500, error="overloaded")], models=("writer-model",)) as failing:
        assert main(["tasks", "generate", str(seeds), "--judge-profile", str(profile(tmp_path, failing)),
                     "--judge-retries", "0", "--out", str(out)]) == 2
    ours = [line for line in capsys.readouterr().err.splitlines() if line.startswith("webeval")]
    # (the stub may print its own traceback for a request whose client went away when the command stopped)
    assert len(ours) == 1 and "HTTP 500: " in ours[0] and ours[0].endswith("; nothing written")
    assert not out.exists() and not list(tmp_path.glob("tasks.jsonl*"))


@pytest.mark.parametrize("rows, error", [
    ([{"goal": "g", "start_url": "ftp://x/"}], "seeds.jsonl:1: start_url: start_url 'ftp://x/' is not an http(s) URL"),
    ([{"goal": "", "start_url": "https://a.com/"}], "seeds.jsonl:1: goal: String should have at least 1 character"),
    ([{"id": "a", "goal": "g", "start_url": "https://a.com/"}, {"id": "a", "goal": "h", "start_url": "https://b.com/"}],
     "seeds.jsonl:2: duplicate task id 'a' (first on line 1)"),
    ([{"id": "../up", "goal": "g", "start_url": "https://a.com/"}], "seeds.jsonl:1: id: task id '../up' is not a safe"),
    ([{"goal": "g", "url": "https://a.com/"}], "seeds.jsonl:1: start_url: Field required"),
])
def test_bad_seeds_are_one_line_before_any_call(tmp_path, capsys, rows, error):
    seeds = seeds_file(tmp_path, rows)
    with OpenAIStub(reply_to, models=("writer-model",)) as stub:
        assert main(["tasks", "generate", str(seeds), "--judge-profile", str(profile(tmp_path, stub)),
                     "--out", str(tmp_path / "tasks.jsonl")]) == 2
    err = capsys.readouterr().err.strip()
    assert error in err and len(err.splitlines()) == 1 and not stub.requests


def test_two_seeds_the_model_names_alike_do_not_share_an_id(tmp_path, capsys):
    seeds = seeds_file(tmp_path, [{"goal": "Find a lasagna.", "start_url": "https://www.allrecipes.com/", "id": "x"},
                                  {"goal": "Find a lasagna.", "start_url": "https://www.allrecipes.com/"},
                                  {"goal": "Find a vegan lasagna.", "start_url": "https://www.allrecipes.com/"}])
    with OpenAIStub(reply_to, models=("writer-model",)) as stub:
        assert main(["tasks", "generate", str(seeds), "--judge-profile", str(profile(tmp_path, stub)),
                     "--out", str(tmp_path / "tasks.jsonl")]) == 0
    assert [t.id for t in read_jsonl(tmp_path / "tasks.jsonl")] == ["x", "Allrecipes--2", "Allrecipes--3"]
