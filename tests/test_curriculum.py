"""The curriculum sampler: batches by difficulty band, no site above its share, the test split left out, the same
batches again from the same seed, and the impossible asks as one line."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from fixtures.task_sets import task_line, write_tasks
from webeval.cli import main
from webeval.rollouts.requests import parse_request
from webeval.tasks.curriculum import Band, Choice, Curriculum, CurriculumError, Exclusion
from webeval.tasks.taskset import TaskSet


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("WEBEVAL_CACHE", str(tmp_path / "cache"))


@pytest.fixture
def tasks(tmp_path):
    """20,000 tasks on 500 sites, difficulties 1-5 (task k has 1 + k % 5 fact groups)."""
    return TaskSet.open(write_tasks(tmp_path / "train.jsonl", 20_000, sites=500))


@pytest.fixture
def skewed(tmp_path):
    """Half of the tasks on one site, the rest on 99 others."""
    lines = [task_line(k, sites=100) if k % 2 else task_line(k, sites=100).replace(f"site{k % 100}", "big")
             for k in range(10_000)]
    (tmp_path / "skewed.jsonl").write_text("\n".join(lines) + "\n")
    return TaskSet.open(tmp_path / "skewed.jsonl")


BANDS = [Band(1, 2), Band(3, 4), Band(5)]


def test_the_same_seed_gives_the_same_batches_and_any_batch_again(tasks):
    first = Curriculum(tasks, BANDS, 0.1, seed=3)
    batches = [first.batch(64) for _ in range(3)]
    again = Curriculum(tasks, BANDS, 0.1, seed=3)
    assert [again.batch(64) for _ in range(3)] == batches
    assert Curriculum(tasks, BANDS, 0.1, seed=3).batch(64, number=2) == batches[2]
    assert Curriculum(tasks, BANDS, 0.1, seed=4).batch(64) != batches[0] and batches[0] != batches[1]
    choice = batches[1][5]
    assert isinstance(choice, Choice) and (choice.seed, choice.batch, choice.position) == (3, 1, 5)
    assert Choice.model_validate_json(choice.model_dump_json()) == choice  # what a rollout record keeps
    request = parse_request({"task_id": choice.task_id, "group_id": f"b{choice.batch}", "sample_index": 0,
                             "seed": choice.seed, "curriculum": choice.model_dump()})
    assert Choice.model_validate(request.curriculum) == choice  # the engine copies it into the record as it is


def test_bands_take_their_weights_share_and_hold_only_their_difficulties(tasks):
    curriculum = Curriculum(tasks, [Band(1, 2, weight=2), Band(3, 4), Band(5)], 0.1, seed=0)
    batch = curriculum.batch(100)
    assert Counter(c.band for c in batch) == {"1-2": 50, "3-4": 25, "5+": 25}
    assert all(Band.parse(c.band).holds(c.difficulty) for c in batch)
    assert all(tasks.get(c.task_id).difficulty == c.difficulty for c in batch)
    assert len({c.task_id for c in batch}) == 100  # no task twice in a batch
    assert curriculum.quotas(8) == [4, 2, 2] and curriculum.quotas(7) == [3, 2, 2]  # ties: the remainders, then order
    assert Curriculum(tasks, BANDS).quotas(7) == [3, 2, 2] and Curriculum(tasks, BANDS).quotas(2) == [1, 1, 0]


def test_no_site_is_more_than_its_share_of_a_batch(skewed):
    assert skewed.sites["big"] == 5000
    for seed in range(5):
        batch = Curriculum(skewed, [Band(1, 5)], max_site_share=0.1, seed=seed).batch(50)
        counts = Counter(c.site for c in batch)
        assert counts["big"] == 5 and max(counts.values()) <= 5  # drawn uniformly, it would be about 25
        assert all(c.site_share == counts[c.site] / 50 for c in batch)


def test_the_test_split_is_left_out(tasks, tmp_path, capsys):
    assert main(["split", str(tasks.source), "--test-sites", "100", "--seed", "1", "--out", str(tmp_path / "s")]) == 0
    split = json.loads((tmp_path / "s" / "split.json").read_text())
    curriculum = Curriculum(tasks, BANDS, 0.1, exclude=Exclusion.from_split(tmp_path / "s"), seed=0)
    assert curriculum.excluded == 4000  # 100 of 500 sites
    chosen = [c for number in range(20) for c in curriculum.batch(64, number)]
    assert not {c.site for c in chosen} & set(split["test_sites"])
    test_set = TaskSet.open(tmp_path / "s" / "test.jsonl")
    by_tasks = Curriculum(tasks, BANDS, 0.1, exclude=Exclusion.from_tasks(test_set), seed=0)
    assert by_tasks.excluded == 4000 and by_tasks.batch(64, 3) == curriculum.batch(64, 3)
    capsys.readouterr()
    assert main(["tasks", "sample", str(tasks.source), "--n", "16", "--batches", "2", "--exclude",
                 str(tmp_path / "s"), "--seed", "9"]) == 0
    lines = [Choice.model_validate_json(line) for line in capsys.readouterr().out.splitlines()]
    assert len(lines) == 32 and [c.batch for c in lines] == [0] * 16 + [1] * 16
    assert not {c.site for c in lines} & set(split["test_sites"])


@pytest.mark.parametrize("args, error", [
    (["--bands", "1-2,6+"], "band 6+: no task has a difficulty in it: widen or drop the band"),
    (["--bands", "1-2,3-4", "--n", "4", "--max-site-share", "0.1"],
     "--max-site-share 0.1 of a batch of 4 lets no site have a task: use at least 0.25, or a larger batch"),
    (["--bands", "2-1"], "band 2-1: a band is LOW-HIGH or LOW+"),
    (["--bands", "1-3,3-4"], "bands 1-3 and 3-4 overlap or are out of order"),
    (["--bands", "easy"], "band 'easy': write a band as 3, 1-2 or 5+"),
    (["--max-site-share", "0"], "--max-site-share 0: give a share above 0 and at most 1"),
])
def test_impossible_asks_are_one_line(tmp_path, capsys, args, error):
    path = write_tasks(tmp_path / "t.jsonl", 1000, sites=50)
    argv = ["tasks", "sample", str(path), "--n", "20", *args]
    if argv.count("--n") > 1:
        argv = ["tasks", "sample", str(path), *args]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert error in err and len(err.splitlines()) == 1


def test_a_share_that_cannot_be_met_says_what_to_change(tmp_path, capsys):
    path = write_tasks(tmp_path / "few.jsonl", 100, sites=4)  # band 5+: 20 tasks on 4 sites
    with pytest.raises(CurriculumError, match=r"band 5\+: its 20 tasks on 4 sites give at most 4 of the 10 it needs "
                                              r"with no site above 0.1 of a batch of 10 \(1 a site\): raise "
                                              r"--max-site-share"):
        Curriculum(TaskSet.open(path), [Band(5)], 0.1).batch(10)
    with pytest.raises(CurriculumError, match=r"band 5\+: 20 tasks, fewer than the 25 a batch of 50 takes from it"):
        Curriculum(TaskSet.open(path), [Band(1, 4), Band(5)], 0.5).batch(50)
    split = tmp_path / "split.json"
    split.write_text(json.dumps({"test_sites": ["site0", "site1", "site2", "site3"], "test_domains": []}))
    with pytest.raises(CurriculumError, match="band 1-4: no task has a difficulty in it once the test split's 80 "
                                              "tasks are left out"):
        Curriculum(TaskSet.open(path), [Band(1, 4)], exclude=Exclusion.from_split(split))
