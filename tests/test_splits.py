"""`webeval split` (website-level train/test with a leakage check) and `webeval decompose` (easier tasks from
subsets of a rubric task's fact groups)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import ROOT
from webeval.cli import main
from webeval.tasks import read_jsonl

LOCAL = ROOT / "webeval/benchmarks/local/task_files"
RUBRIC = ROOT / "webeval/benchmarks/rubric/task_files"


def rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_split_by_site_puts_every_task_of_a_site_on_one_side(tmp_path, capsys):
    assert main(["split", str(LOCAL), "--by", "site", "--test-sites", "2", "--seed", "7", "--out",
                 str(tmp_path / "a")]) == 0
    train, test = rows(tmp_path / "a" / "train.jsonl"), rows(tmp_path / "a" / "test.jsonl")
    described = json.loads((tmp_path / "a" / "split.json").read_text())
    assert len(train) + len(test) == 45 and {r["site"] for r in test} == set(described["test_sites"])
    assert not {r["site"] for r in train} & {r["site"] for r in test} and len(described["test_sites"]) == 2
    assert rows(LOCAL / "shop.jsonl")[0] in train + test  # rows kept as written
    assert main(["split", str(LOCAL), "--test-sites", "2", "--seed", "7", "--out", str(tmp_path / "b")]) == 0
    assert (tmp_path / "b" / "test.jsonl").read_text() == (tmp_path / "a" / "test.jsonl").read_text()  # the seed
    seeds = set()
    for seed in range(6):
        main(["split", str(LOCAL), "--test-sites", "2", "--seed", str(seed), "--out", str(tmp_path / f"s{seed}")])
        seeds.add(tuple(json.loads((tmp_path / f"s{seed}" / "split.json").read_text())["test_sites"]))
    assert len(seeds) > 1  # another seed, another draw


def test_a_leak_is_refused_and_nothing_is_written(tmp_path, capsys):
    shop = rows(LOCAL / "shop.jsonl")
    renamed = [{**row, "id": f"Store--{i}", "site": "Store"} for i, row in enumerate(shop)]  # one site, two names
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in shop + renamed + rows(LOCAL / "news.jsonl")))
    leaked = False
    for seed in range(10):
        code = main(["split", str(tasks), "--test-sites", "1", "--seed", str(seed), "--out", str(tmp_path / "o")])
        err = capsys.readouterr().err
        if code == 2:
            leaked = True
            assert "leakage, nothing written: start URL 'offline.webeval.test/shop' is in both train and test" in err
            assert not (tmp_path / "o").exists()
            break
    assert leaked


@pytest.mark.parametrize("args, error", [
    (["--test-sites", "5"], "--test-sites 5: choose between 1 and 4 of the 5 sites"),
    (["--test-sites", "0"], "--test-sites 0: choose between 1 and 4"),
])
def test_a_bad_split_is_one_line(tmp_path, capsys, args, error):
    assert main(["split", str(LOCAL), *args, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert error in err and len(err.splitlines()) == 1 and not (tmp_path / "o").exists()


def test_a_task_file_with_a_bad_row_is_named(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "site": "A"}\n{"id": "b"}\n')
    assert main(["split", str(bad), "--test-sites", "1", "--out", str(tmp_path / "o")]) == 2
    assert "bad.jsonl:2: a task needs an 'id' and a 'site'" in capsys.readouterr().err


def test_decompose_makes_easier_tasks_from_subsets_of_fact_groups(tmp_path):
    assert main(["decompose", str(RUBRIC / "shop.jsonl"), "--out", str(tmp_path / "easy.jsonl")]) == 0
    made = read_jsonl(tmp_path / "easy.jsonl")
    # groups 2, 3 and 4: 2 + 6 + 14 proper non-empty subsets
    assert len(made) == 22
    four = [t for t in made if t.id.startswith("Shop-rubric--2.")]
    assert {t.id for t in four if len(t.rubric) == 1} == {f"Shop-rubric--2.parts-{k}" for k in range(1, 5)}
    one = next(t for t in four if t.id == "Shop-rubric--2.parts-2-4")
    original = next(t for t in read_jsonl(RUBRIC / "shop.jsonl") if t.id == "Shop-rubric--2")
    assert one.rubric == [original.rubric[1], original.rubric[3]] and "facts-2" in one.tags
    assert "Only parts (2), (4) of this task are asked" in one.goal and one.solution is None
    assert main(["decompose", str(RUBRIC / "shop.jsonl"), "--sizes", "1", "--out", str(tmp_path / "one.jsonl")]) == 0
    assert all(len(t.rubric) == 1 for t in read_jsonl(tmp_path / "one.jsonl"))


def test_decompose_with_nothing_to_decompose_writes_nothing(tmp_path, capsys):
    assert main(["decompose", str(LOCAL / "shop.jsonl"), "--out", str(tmp_path / "easy.jsonl")]) == 2
    assert "no rubric task with two or more fact groups" in capsys.readouterr().err
    assert not (tmp_path / "easy.jsonl").exists()
    assert main(["decompose", str(RUBRIC), "--sizes", "one", "--out", str(tmp_path / "easy.jsonl")]) == 2
    assert "--sizes 'one': expected numbers" in capsys.readouterr().err
