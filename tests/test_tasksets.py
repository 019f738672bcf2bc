"""Task sets at training scale: a 300,000-task file indexed once and read lazily, gzip and folders, and the bad
inputs (a malformed line in the middle, a duplicate id, a file that changes while it is indexed or after)."""

from __future__ import annotations

import gzip
import hashlib
import itertools
import json
import os
from collections.abc import Sequence

import pytest

from fixtures.task_sets import read_task_line, task_line, word, write_tasks
from webeval.cli import main
from webeval.tasks import Task, TaskFileError, population_of, read_jsonl
from webeval.tasks.taskset import TaskSet
from tests.conftest import ROOT

BIG = 300_000


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    return write_tasks(tmp_path_factory.mktemp("big") / "tasks.jsonl", BIG)


@pytest.fixture(scope="module")
def big_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("WEBEVAL_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def shared_cache(big_cache, monkeypatch):
    """The 300K file's index, built by the first test that opens it and reused by the others."""
    monkeypatch.setenv("WEBEVAL_CACHE", str(big_cache))
    return big_cache


def test_a_300k_file_is_indexed_once_and_read_without_loading_it(big, shared_cache, capsys):
    assert main(["tasks", "index", str(big)]) == 0
    out, err = capsys.readouterr()
    sha = hashlib.sha256(big.read_bytes()).hexdigest()
    assert f"{big}: 300,000 tasks on 5,000 sites in 1 file(s)" in out and f"sha256: {sha}" in out
    assert "(built now)" in out and "indexing" in err and f"index: {shared_cache}/" in out
    tasks = TaskSet.open(big)
    assert not tasks.built and tasks.sha256 == sha and len(tasks) == BIG and isinstance(tasks, Sequence)
    assert tasks.ids[:2] == ("site0--0", "site1--1") and tasks.ids[-1] == f"site{(BIG - 1) % 5000}--{BIG - 1}"
    assert len(tasks.sites) == 5000 and tasks.sites["site7"] == BIG // 5000
    middle = tasks.get("site77--150077")
    assert middle == Task.model_validate(read_task_line(150077)) and middle.difficulty == 150077 % 5 + 1
    wanted = [f"site{k % 5000}--{k}" for k in (299_999, 3, 150_000, 3)]
    assert [t.id for t in tasks.get_many(wanted)] == wanted  # in the order asked, repeats kept
    assert tasks[-1].id == wanted[0] and [t.id for t in tasks[1:3]] == ["site1--1", "site2--2"]
    assert "site5--5" in tasks and "site5--6" not in tasks and tasks.index("site5--5") == 5
    assert tasks.where("site9--9") == (big, 10) and tasks.difficulty(9) == 5 and tasks.site(9) == "site9"
    assert tasks.population("big").sha256 == sha and tasks.population().size == BIG
    with pytest.raises(KeyError, match="'nope--1' is not in"):
        tasks.get("nope--1")


def test_iteration_is_in_file_order(big, shared_cache, tmp_path):
    assert [t.id for t in itertools.islice(TaskSet.open(big), 3)] == ["site0--0", "site1--1", "site2--2"]
    path = write_tasks(tmp_path / "t.jsonl.gz", 20_000, compress=True)
    assert [t.id for t in TaskSet.open(path)] == [read_task_line(k)["id"] for k in range(20_000)]


def test_a_malformed_line_in_the_middle_names_its_line_and_nothing_is_indexed(big, cache, tmp_path, capsys):
    lines = big.read_bytes().split(b"\n")
    lines[150_000] = b'{"id": "site0--150000", "site": "site0", "goal": "x"'  # line 150,001, cut short
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"\n".join(lines))
    assert main(["tasks", "index", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (f"webeval tasks index: error: {bad}:150001: invalid JSON: Expecting ',' delimiter (column 53)")
    assert not list(cache.glob("*.idx"))  # nothing kept: the next command reads it again
    lines[150_000] = b'{"id": "site0--150000", "site": "site0", "goal": "x", "start_url": "file:///etc/passwd"}'
    bad.write_bytes(b"\n".join(lines))
    with pytest.raises(TaskFileError, match=r"bad.jsonl:150001: start_url: start_url 'file:///etc/passwd' is not"):
        TaskSet.open(bad)


def test_a_duplicate_id_names_both_lines_even_across_files(cache, tmp_path):
    write_tasks(tmp_path / "one.jsonl", 2000, bad={1500: task_line(7)})
    with pytest.raises(TaskFileError) as raised:
        TaskSet.open(tmp_path / "one.jsonl")
    assert str(raised.value) == f"{tmp_path / 'one.jsonl'}:1500: duplicate task id 'site7--7' (first on line 8)"
    folder = tmp_path / "folder"
    folder.mkdir()
    write_tasks(folder / "a.jsonl", 100)
    write_tasks(folder / "b.jsonl.gz", 100, start=99, compress=True)  # its first task is a.jsonl's last
    with pytest.raises(TaskFileError) as raised:
        TaskSet.open(folder)
    assert str(raised.value) == (f"{folder / 'b.jsonl.gz'}:1: duplicate task id 'site99--99' "
                                 f"(first on {folder / 'a.jsonl'}:100)")


def test_a_file_that_changes_while_it_is_indexed_leaves_no_index(cache, tmp_path):
    path = write_tasks(tmp_path / "growing.jsonl", 120_000)

    def append_once(where, count):
        if count == 50_000:
            with open(where, "a", encoding="utf-8") as out:
                out.write(task_line(120_000) + "\n")

    with pytest.raises(TaskFileError, match=r"growing.jsonl: the file changed while it was indexed "
                                            r"\(size \d+ -> \d+ bytes\): no index written"):
        TaskSet.open(path, progress=append_once)
    assert not list(cache.glob("*.idx"))
    assert len(TaskSet.open(path)) == 120_001  # complete now: indexed as it is


def test_the_index_is_reused_while_the_file_is_unchanged_and_rebuilt_when_it_changed(cache, tmp_path):
    path = write_tasks(tmp_path / "t.jsonl", 1000)
    first = TaskSet.open(path)
    assert first.built and not TaskSet.open(path).built
    with open(path, "a", encoding="utf-8") as out:
        out.write(task_line(1000) + "\n")
    grown = TaskSet.open(path)
    assert grown.built and len(grown) == 1001 and grown.index_path == first.index_path
    text = path.read_text()
    path.write_text(text.replace("site3--3", "site3--X"))  # same size; mtime and the start's hash differ
    assert TaskSet.open(path).get("site3--X").id == "site3--X"


def test_a_line_that_moved_under_an_open_task_set_is_refused_not_taken_for_another_task(cache, tmp_path):
    path = write_tasks(tmp_path / "t.jsonl", 1000)
    tasks = TaskSet.open(path)
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[1], lines[0], *lines[2:]]) + "\n")  # site1--1 now where site0--0 was indexed
    with pytest.raises(TaskFileError, match=r"t.jsonl:1: no longer holds task 'site0--0': the file changed since "
                                            r"it was indexed; open it again"):
        tasks.get("site0--0")


def test_a_folder_of_plain_and_gzip_files_reads_any_task_and_hashes_the_files_in_order(cache, tmp_path):
    folder = tmp_path / "set"
    folder.mkdir()
    write_tasks(folder / "a.jsonl", 30_000)
    part_one = gzip.compress((("\n".join(task_line(k) for k in range(30_000, 60_000))) + "\n").encode())
    part_two = gzip.compress((("\n".join(task_line(k) for k in range(60_000, 90_000))) + "\n").encode())
    (folder / "b.jsonl.gz").write_bytes(part_one + part_two)  # two gzip members, as `cat a.gz b.gz` makes
    (folder / "notes.txt").write_text("not a task file")
    tasks = TaskSet.open(folder)
    assert len(tasks) == 90_000 and tasks.files == [folder / "a.jsonl", folder / "b.jsonl.gz"]
    assert tasks.sha256 == hashlib.sha256((folder / "a.jsonl").read_bytes()
                                          + (folder / "b.jsonl.gz").read_bytes()).hexdigest()
    wanted = [f"site{k % 5000}--{k}" for k in (89_999, 12, 30_000, 59_999, 60_000, 45_123)]
    assert [t.id for t in tasks.get_many(wanted)] == wanted
    fresh = TaskSet.open(folder)  # another process: no checkpoints yet, the first read inflates from the start
    assert not fresh.built and fresh.get("site1234--71234").goal == f"Find fact {word(71234)} on site1234."
    assert fresh.where("site0--60000") == (folder / "b.jsonl.gz", 30_001)


def test_the_sha256_is_the_populations_and_the_fixtures_read_alike(cache):
    folder = ROOT / "webeval/benchmarks/rubric/task_files"
    files = sorted(folder.glob("*.jsonl"))
    expected = [task for path in files for task in read_jsonl(path)]
    tasks = TaskSet.open(folder)
    assert list(tasks) == expected and tasks.sha256 == population_of("rubric", expected, files).sha256


@pytest.mark.parametrize("content, error", [
    (None, "no such task file or folder"),
    ("", "no tasks in it"),
    ("\n\n", "no tasks in it"),
    ('["a list"]\n', ":1: a task must be a JSON object"),
    (b"\xff\xfe\n", ":1: not UTF-8 text (byte 0xff)"),
])
def test_bad_files_are_one_line(cache, tmp_path, capsys, content, error):
    path = tmp_path / "t.jsonl"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    assert main(["tasks", "index", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert error in err and len(err.splitlines()) == 1


def test_a_truncated_gzip_file_is_named(cache, tmp_path):
    path = write_tasks(tmp_path / "t.jsonl.gz", 5000, compress=True)
    path.write_bytes(path.read_bytes()[:-2000])
    with pytest.raises(TaskFileError, match=r"t.jsonl.gz: (the gzip stream ends early|.*:\d+: invalid JSON)"):
        TaskSet.open(path)


def test_the_cache_root_honours_xdg_cache_home(tmp_path, monkeypatch):
    monkeypatch.delenv("WEBEVAL_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    path = write_tasks(tmp_path / "t.jsonl", 10)
    assert TaskSet.open(path).index_path.parent == tmp_path / "xdg" / "webeval" / "task-index"
    assert os.path.exists(TaskSet.open(path).index_path)


def test_a_row_reads_back_as_written(cache, tmp_path):
    path = write_tasks(tmp_path / "t.jsonl", 10)
    assert TaskSet.open(path).row("site4--4") == json.loads(task_line(4))


def test_a_cache_that_cannot_be_written_is_one_line(tmp_path, monkeypatch, capsys):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder would be")
    monkeypatch.setenv("WEBEVAL_CACHE", str(blocked))
    path = write_tasks(tmp_path / "t.jsonl", 10)
    assert main(["tasks", "index", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"webeval tasks index: error: {path}: cannot keep its index in {blocked} (")
    assert err.endswith("set $WEBEVAL_CACHE to a folder you can write") and len(err.splitlines()) == 1
