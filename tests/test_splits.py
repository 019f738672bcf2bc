"""`webeval split` (website-level train/test with a leakage check) and `webeval decompose` (easier tasks from
subsets of a rubric task's fact groups)."""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import ROOT
from webeval.cli import main
from webeval.tasks import Task, read_jsonl
from webeval.tasks.decomposition import decompose
from webeval.tasks.splits import goal_key, leaks

LOCAL = ROOT / "webeval/benchmarks/local/task_files"
RUBRIC = ROOT / "webeval/benchmarks/rubric/task_files"


def rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("WEBEVAL_CACHE", str(tmp_path / "cache"))


def write(path, tasks):
    path.write_text("".join(json.dumps(task) + "\n" for task in tasks))
    return path


def task(task_id, site, url, goal=None):
    return {"id": task_id, "site": site, "goal": goal or f"Task {task_id} on {site}.", "start_url": url}


# Two sites on one registered domain (bbc.co.uk), one site on two hosts of one domain (google.com), and others.
WEB = [task("bbc-news--1", "BBC News", "https://www.bbc.co.uk/news"),
       task("bbc-sport--1", "BBC Sport", "https://www.bbc.co.uk/sport"),
       task("maps--1", "Google Maps", "https://maps.google.com/"),
       task("search--1", "Google Search", "https://www.google.com/"),
       task("gh-alice--1", "Alice's pages", "https://alice.github.io/"),
       task("gh-bob--1", "Bob's pages", "https://bob.github.io/"),
       task("apple--1", "Apple", "https://www.apple.com/"),
       task("arxiv--1", "ArXiv", "https://arxiv.org/")]


def test_a_split_by_site_puts_every_task_of_a_site_on_one_side(tmp_path, capsys):
    assert main(["split", str(LOCAL), "--by", "site", "--test-sites", "2", "--seed", "7", "--out",
                 str(tmp_path / "a")]) == 0
    train, test = rows(tmp_path / "a" / "train.jsonl"), rows(tmp_path / "a" / "test.jsonl")
    described = json.loads((tmp_path / "a" / "split.json").read_text())
    assert len(train) + len(test) == 45 and {r["site"] for r in test} == set(described["test_sites"])
    assert not {r["site"] for r in train} & {r["site"] for r in test} and len(described["test_sites"]) == 2
    assert described["test_domains"] == sorted(f"offline.webeval.test/{s.lower()}" for s in described["test_sites"])
    assert rows(LOCAL / "shop.jsonl")[0] in train + test  # rows kept as written
    assert main(["split", str(LOCAL), "--test-sites", "2", "--seed", "7", "--out", str(tmp_path / "b")]) == 0
    assert (tmp_path / "b" / "test.jsonl").read_text() == (tmp_path / "a" / "test.jsonl").read_text()  # the seed
    seeds = set()
    for seed in range(6):
        main(["split", str(LOCAL), "--test-sites", "2", "--seed", str(seed), "--out", str(tmp_path / f"s{seed}")])
        seeds.add(tuple(json.loads((tmp_path / f"s{seed}" / "split.json").read_text())["test_sites"]))
    assert len(seeds) > 1  # another seed, another draw


def test_a_split_by_domain_keeps_a_registered_domain_on_one_side(tmp_path, capsys):
    tasks = write(tmp_path / "web.jsonl", WEB)
    for seed in range(8):
        out = tmp_path / f"d{seed}"
        assert main(["split", str(tasks), "--by", "domain", "--test-sites", "2", "--seed", str(seed),
                     "--out", str(out)]) == 0
        test_sites = {r["site"] for r in rows(out / "test.jsonl")}
        described = json.loads((out / "split.json").read_text())
        assert len(described["test_units"]) == 2 and described["test_domains"] == described["test_units"]
        assert {"BBC News", "BBC Sport"} <= test_sites or not {"BBC News", "BBC Sport"} & test_sites
        assert {"Google Maps", "Google Search"} <= test_sites or not {"Google Maps", "Google Search"} & test_sites
    # github.io is a public suffix: two users' pages are two registered domains
    assert set(json.loads((tmp_path / "d0" / "split.json").read_text())["test_units"]) <= {
        "bbc.co.uk", "google.com", "alice.github.io", "bob.github.io", "apple.com", "arxiv.org"}
    assert "registered domains" in capsys.readouterr().out


def test_a_site_split_that_shares_a_registered_domain_is_leakage(tmp_path, capsys):
    tasks = write(tmp_path / "web.jsonl", WEB)
    caught = 0
    for seed in range(12):
        out = tmp_path / f"o{seed}"
        code = main(["split", str(tasks), "--by", "site", "--test-sites", "1", "--seed", str(seed), "--out", str(out)])
        err = capsys.readouterr().err
        test_site = None if code == 0 else err
        if code == 1:
            caught += 1
            assert "webeval split: leakage, nothing written: 1 registered domain shared by train and test" in err
            assert re.search(r"registered domain '(bbc\.co\.uk|google\.com)' is in both train \(\S+\) and test "
                             r"\(\S+\)", err) and not out.exists()
        else:
            assert code == 0 and test_site is None
            assert {r["site"] for r in rows(out / "test.jsonl")} & {"BBC News", "BBC Sport", "Google Maps",
                                                                   "Google Search"} == set()
    assert caught  # some seeds draw one of the four sites that share a domain


def test_near_duplicate_goals_across_the_split_are_leakage(tmp_path, capsys):
    tasks = write(tmp_path / "web.jsonl", [
        task("apple--1", "Apple", "https://www.apple.com/", "Find 2 hotels in Paris for March 3!"),
        task("arxiv--1", "ArXiv", "https://arxiv.org/", "find 14 HOTELS in paris, for march 21"),
        task("arxiv--2", "ArXiv", "https://arxiv.org/", "Find the newest paper on diffusion."),
        task("bbc--1", "BBC", "https://www.bbc.co.uk/", "What is today's top story?")])
    codes = {}
    for seed in range(10):
        codes[seed] = main(["split", str(tasks), "--test-sites", "1", "--seed", str(seed),
                            "--out", str(tmp_path / f"o{seed}")])
        err = capsys.readouterr().err
        if codes[seed] == 1:
            assert "1 goal shared by train and test" in err
            assert "goal 'find 0 hotels in paris for march 0' is in both train" in err
    assert set(codes.values()) == {0, 1}  # a draw that puts BBC alone in test is clean; Apple or ArXiv leaks


def test_leaks_checks_a_given_split_too():
    train = [Task.model_validate(t) for t in WEB[:4]]
    test = [Task.model_validate(t) for t in [task("bbc-news--1", "BBC Weather", "https://weather.bbc.co.uk/"),
                                            task("x--1", "Google Maps", "https://maps.example.org/")]]
    found = {(leak.kind, leak.value) for leak in leaks(train, test)}
    assert found == {("task id", "bbc-news--1"), ("registered domain", "bbc.co.uk"), ("site", "Google Maps")}
    assert goal_key("  Ｆind\tTHE 2nd   café—now!! ") == "find the 0nd café now"


def test_the_same_id_in_two_inputs_is_refused(tmp_path, capsys):
    one = write(tmp_path / "one.jsonl", WEB[:3])
    two = write(tmp_path / "two.jsonl", [task("maps--1", "Apple", "https://www.apple.com/"), *WEB[6:]])
    assert main(["split", str(one), str(two), "--test-sites", "1", "--out", str(tmp_path / "o")]) == 2
    assert f"{two}:1: duplicate task id 'maps--1' (first on {one}:3)" in capsys.readouterr().err


@pytest.mark.parametrize("args, error", [
    (["--test-sites", "5"], "--test-sites 5: choose between 1 and 4 of the 5 sites"),
    (["--test-sites", "0"], "--test-sites 0: choose between 1 and 4"),
    (["--test-sites", "5", "--by", "domain"], "--test-sites 5: choose between 1 and 4 of the 5 registered domains"),
])
def test_a_bad_split_is_one_line(tmp_path, capsys, args, error):
    assert main(["split", str(LOCAL), *args, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert error in err and len(err.splitlines()) == 1 and not (tmp_path / "o").exists()


def test_a_task_file_with_a_bad_row_is_named(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "site": "A", "goal": "g", "start_url": "http://a.example.org/"}\n{"id": "b"}\n')
    assert main(["split", str(bad), "--test-sites", "1", "--out", str(tmp_path / "o")]) == 2
    assert "bad.jsonl:2: site: Field required" in capsys.readouterr().err


def test_decompose_splits_only_tasks_with_enough_fact_groups(tmp_path, capsys):
    assert main(["decompose", str(RUBRIC / "shop.jsonl"), "--out", str(tmp_path / "easy.jsonl")]) == 0
    made = read_jsonl(tmp_path / "easy.jsonl")
    # the tasks of 3 and 4 groups (default --min-facts 3): 6 + 14 proper non-empty subsets; the 2-group task stays
    assert len(made) == 20 and {t.parent for t in made} == {"Shop-rubric--1", "Shop-rubric--2"}
    assert "20 easier tasks from 2 of 3 tasks (those with 3 or more fact groups)" in capsys.readouterr().out
    four = [t for t in made if t.parent == "Shop-rubric--2"]
    assert {t.id for t in four if t.difficulty == 1} == {f"Shop-rubric--2.parts-{k}" for k in range(1, 5)}
    one = next(t for t in four if t.id == "Shop-rubric--2.parts-2-4")
    original = next(t for t in read_jsonl(RUBRIC / "shop.jsonl") if t.id == "Shop-rubric--2")
    assert one.rubric == [original.rubric[1], original.rubric[3]] and one.difficulty == 2 and original.difficulty == 4
    assert not any(tag.startswith("facts-") for tag in one.tags) and one.site == original.site
    assert "Only parts (2), (4) of this task are asked" in one.goal and one.solution is None
    answered = original.model_copy(update={"reference_answers": ["x"], "verifier": {"answer": ["x"]}})
    assert all(t.verifier is None and t.reference_answers is None for t in decompose(answered))
    assert all(t.difficulty == len(t.rubric) < (4 if t.parent.endswith("2") else 3) for t in made)
    assert main(["decompose", str(RUBRIC / "shop.jsonl"), "--min-facts", "2", "--out", str(tmp_path / "all.jsonl")]) == 0
    assert len(read_jsonl(tmp_path / "all.jsonl")) == 22
    assert main(["decompose", str(RUBRIC), "--sizes", "1", "--min-facts", "4", "--out", str(tmp_path / "one.jsonl")]) == 0
    assert [len(t.rubric) for t in read_jsonl(tmp_path / "one.jsonl")] == [1] * 20  # five sites, one 4-group task each


def test_decompose_with_nothing_to_decompose_writes_nothing(tmp_path, capsys):
    assert main(["decompose", str(LOCAL / "shop.jsonl"), "--out", str(tmp_path / "easy.jsonl")]) == 2
    assert "no task with 3 or more fact groups to decompose; nothing written" in capsys.readouterr().err
    assert main(["decompose", str(RUBRIC / "shop.jsonl"), "--min-facts", "5", "--out", str(tmp_path / "easy.jsonl")]) == 2
    assert not list(tmp_path.glob("easy.jsonl*"))
    assert main(["decompose", str(RUBRIC), "--sizes", "one", "--out", str(tmp_path / "easy.jsonl")]) == 2
    assert "--sizes 'one': expected numbers" in capsys.readouterr().err
    assert main(["decompose", str(RUBRIC), "--min-facts", "1", "--out", str(tmp_path / "easy.jsonl")]) == 2
    assert "--min-facts 1: a task needs at least 2 fact groups" in capsys.readouterr().err
