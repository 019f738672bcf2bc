"""The run directory: an append-only results.jsonl shared by every worker, attempt folders, population.json."""

from __future__ import annotations

import errno
import json
import multiprocessing
import re
import warnings
from pathlib import Path

import pytest

from tests.small_fs import fill, small_filesystem
from webeval.outcomes.record import AttemptRecord, FailureClass, Outcome
from webeval.outcomes.rundir import POPULATION, RESULTS, RunDir, read_records
from webeval.tasks import Population

POP = Population(name="local", ids=("Shop--0", "Shop--1", "Flights--0"), sha256="ab" * 32, sources=("a.jsonl",))


def record(task_id: str = "Shop--0", **changes) -> AttemptRecord:
    fields = {"run_id": "run-1", "task_id": task_id, "site": task_id.split("--")[0], "outcome": Outcome.passed}
    fields.update(changes)
    return AttemptRecord(**fields)


@pytest.fixture
def run_dir(tmp_path) -> RunDir:
    return RunDir(tmp_path / "run-1").create(POP)


def read_quietly(path: Path) -> list[AttemptRecord]:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return read_records(path)


# --- round trip --------------------------------------------------------------------------------------------------

def test_append_and_read_round_trip(run_dir):
    written = [
        record("Shop--0", outcome=Outcome.passed, answer="Vantage 14 Slim", steps=7, duration_s=12.5,
               verdict={"success": True, "reason": "ok"}, worker="gw1", path="tasks/Shop--0/attempt-1",
               finished_at="2025-01-01T00:00:00+00:00", extra={"tokens": 1234}),
        record("Shop--1", outcome=Outcome.failed, failure_class=FailureClass.wrong_answer, reason="answer 'x' …",
               answer="naïve – 你好"),
        record("Flights--0", outcome=Outcome.infra_error, kind="browser", reason="browser died", attempt=2),
    ]
    for r in written:
        run_dir.append(r)
    read = read_quietly(run_dir.path / RESULTS)
    assert run_dir.records() == read
    assert len(read) == 3
    assert read[0] == written[0]  # finished_at given: kept as is
    for got, want in zip(read[1:], written[1:]):
        assert got.finished_at  # stamped on append
        assert got.model_copy(update={"finished_at": ""}) == want
    assert read[1].failure_class is FailureClass.wrong_answer and read[1].answer == "naïve – 你好"
    assert read[2].outcome is Outcome.infra_error and read[2].kind == "browser" and read[2].attempt == 2


def test_one_line_per_record(run_dir):
    for n in range(5):
        run_dir.append(record(f"Shop--{n}", reason="multi\nline\nreason"))
    lines = (run_dir.path / RESULTS).read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) == 6
    assert [json.loads(line)["task_id"] for line in lines[:-1]] == [f"Shop--{n}" for n in range(5)]


def test_no_results_file_reads_as_no_records(tmp_path):
    assert read_records(tmp_path / "nothing.jsonl") == []
    assert RunDir(tmp_path / "fresh").records() == []


def test_run_id_is_the_directory_name(tmp_path):
    assert RunDir(tmp_path / "20250101-120000").run_id == "20250101-120000"


def test_unknown_fields_in_a_record_are_ignored(run_dir):
    line = json.dumps({**record().model_dump(mode="json"), "from_the_future": 1})
    (run_dir.path / RESULTS).write_text(line + "\n")
    assert read_quietly(run_dir.path / RESULTS) == [record()]


# --- torn lines --------------------------------------------------------------------------------------------------

def test_torn_last_line_is_skipped_and_the_next_append_cuts_it_off(run_dir):
    results = run_dir.path / RESULTS
    run_dir.append(record("Shop--0"))
    run_dir.append(record("Shop--1"))
    whole = record("Flights--0").model_dump_json()
    with open(results, "a", encoding="utf-8") as f:
        f.write(whole[: len(whole) // 2])  # a writer killed mid-line

    with pytest.warns(UserWarning, match=rf"^{re.escape(str(results))}:3: ignoring a torn or corrupt record$"):
        records = read_records(results)
    assert [r.task_id for r in records] == ["Shop--0", "Shop--1"]

    run_dir.append(record("Flights--0", outcome=Outcome.failed))
    lines = results.read_text(encoding="utf-8").split("\n")
    # Half a record is no record: ours takes its place, and every line parses again.
    assert len(lines) == 4 and lines[3] == "" and json.loads(lines[2])["task_id"] == "Flights--0"
    records = read_quietly(results)
    assert [(r.task_id, r.outcome) for r in records] == [
        ("Shop--0", Outcome.passed), ("Shop--1", Outcome.passed), ("Flights--0", Outcome.failed)]


def test_torn_multibyte_character_is_skipped(run_dir):
    results = run_dir.path / RESULTS
    run_dir.append(record("Shop--0"))
    whole = record("Shop--1", answer="你好你好").model_dump_json(round_trip=True).encode("utf-8")
    cut = whole.index("你".encode()) + 1  # in the middle of a three-byte character
    with open(results, "ab") as f:
        f.write(whole[:cut])
    with pytest.warns(UserWarning, match=rf"{re.escape(str(results))}:2:"):
        assert [r.task_id for r in read_records(results)] == ["Shop--0"]
    run_dir.append(record("Shop--1"))  # cuts the torn bytes off: the file is valid UTF-8 again
    assert [r.task_id for r in read_quietly(results)] == ["Shop--0", "Shop--1"]


@pytest.mark.parametrize("bad", ["{not json}", "[1, 2]", '{"task_id": "x"}', "42", '{"run_id": "r", "task_id": "t", '
                                 '"outcome": "exploded"}'])
def test_corrupt_line_in_the_middle_is_skipped_and_named(run_dir, bad):
    results = run_dir.path / RESULTS
    run_dir.append(record("Shop--0"))
    with open(results, "a", encoding="utf-8") as f:
        f.write(bad + "\n")
    run_dir.append(record("Shop--1"))
    warning = rf"^{re.escape(str(results))}:2: ignoring a torn or corrupt record$"
    with pytest.warns(UserWarning, match=warning) as caught:
        records = read_records(results)
    assert len(caught) == 1
    assert [r.task_id for r in records] == ["Shop--0", "Shop--1"]


def test_blank_lines_are_not_warned_about(run_dir):
    results = run_dir.path / RESULTS
    results.write_text("\n" + record().model_dump_json() + "\n\n   \n")
    assert read_quietly(results) == [record()]


# --- many writers at once ----------------------------------------------------------------------------------------

PER_WORKER = 200
WORKERS = 8


def _append_many(path: str, worker: int, start) -> None:
    run_dir = RunDir(Path(path))
    padding = f"w{worker}-" * 500  # a few KB per line: a torn write would show
    start.wait()
    for n in range(PER_WORKER):
        run_dir.append(AttemptRecord(run_id="run-1", task_id=f"W{worker}--{n}", outcome=Outcome.failed,
                                     worker=f"gw{worker}", reason=padding, steps=n))


def _take_attempts(path: str, task_id: str, count: int, start) -> None:
    run_dir = RunDir(Path(path))
    start.wait()
    for _ in range(count):
        attempt, folder = run_dir.attempt_dir(task_id)
        assert folder.name == f"attempt-{attempt}"
        # "x": fails if another process was handed the same folder
        with open(folder / "owner", "x") as f:
            f.write(str(multiprocessing.current_process().pid))


def _create_and_read(path: str, start) -> None:
    start.wait()
    for _ in range(20):
        run_dir = RunDir(Path(path)).create(POP)
        assert run_dir.population() == POP


def _run_all(target, args_of, n: int) -> list[int]:
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(n)
    processes = [context.Process(target=target, args=(*args_of(i), start)) for i in range(n)]
    for p in processes:
        p.start()
    for p in processes:
        p.join(timeout=120)
    for p in processes:
        if p.is_alive():
            p.kill()
    return [p.exitcode for p in processes]


def test_concurrent_appends_from_eight_processes_are_all_intact(run_dir):
    exit_codes = _run_all(_append_many, lambda i: (str(run_dir.path), i), WORKERS)
    assert exit_codes == [0] * WORKERS

    raw = (run_dir.path / RESULTS).read_text(encoding="utf-8")
    lines = raw.split("\n")
    assert lines[-1] == "" and len(lines) - 1 == WORKERS * PER_WORKER
    for line in lines[:-1]:
        json.loads(line)  # every line is a whole record, none torn or interleaved
    records = read_quietly(run_dir.path / RESULTS)
    assert len(records) == WORKERS * PER_WORKER
    assert {r.task_id for r in records} == {f"W{w}--{n}" for w in range(WORKERS) for n in range(PER_WORKER)}
    for w in range(WORKERS):  # each writer's own records stay in its order
        assert [r.steps for r in records if r.worker == f"gw{w}"] == list(range(PER_WORKER))
        assert all(r.reason == f"w{w}-" * 500 for r in records if r.worker == f"gw{w}")


# --- attempt folders ---------------------------------------------------------------------------------------------

def test_attempt_dir_counts_up(run_dir):
    got = [run_dir.attempt_dir("Shop--0") for _ in range(3)]
    assert [a for a, _ in got] == [1, 2, 3]
    assert [f for _, f in got] == [run_dir.path / "tasks" / "Shop--0" / f"attempt-{k}" for k in (1, 2, 3)]
    assert all(f.is_dir() for _, f in got)
    assert run_dir.attempt_dir("Shop--1") == (1, run_dir.path / "tasks" / "Shop--1" / "attempt-1")


def test_attempt_dir_after_a_resume_continues_the_count(run_dir):
    run_dir.attempt_dir("Shop--0")
    run_dir.attempt_dir("Shop--0")
    resumed = RunDir(run_dir.path)
    assert resumed.attempt_dir("Shop--0")[0] == 3


def test_attempt_dir_is_safe_across_processes(run_dir):
    workers, each = 6, 10
    exit_codes = _run_all(_take_attempts, lambda i: (str(run_dir.path), "Shop--0", each), workers)
    assert exit_codes == [0] * workers
    folders = sorted((run_dir.path / "tasks" / "Shop--0").iterdir(), key=lambda p: int(p.name.split("-")[1]))
    assert [f.name for f in folders] == [f"attempt-{k}" for k in range(1, workers * each + 1)]
    assert all((f / "owner").read_text() for f in folders)


# --- population.json ---------------------------------------------------------------------------------------------

def test_population_round_trip(run_dir):
    assert run_dir.population() == POP
    assert json.loads((run_dir.path / POPULATION).read_text())["ids"] == list(POP.ids)
    assert [p.name for p in run_dir.path.iterdir() if p.name.startswith(f".{POPULATION}")] == []


def test_create_makes_the_directory(tmp_path):
    run_dir = RunDir(tmp_path / "a" / "b" / "run").create(POP)
    assert (run_dir.path / POPULATION).is_file()


def test_create_again_keeps_the_existing_population(run_dir):
    before = (run_dir.path / POPULATION).read_bytes()
    RunDir(run_dir.path).create(POP)
    assert (run_dir.path / POPULATION).read_bytes() == before


def test_population_is_never_half_written(tmp_path):
    """A disk that fills up mid-write leaves no population.json at all, never a torn one."""
    with small_filesystem(tmp_path / "small", 1 << 20) as small:
        run_dir = RunDir(small / "run")
        run_dir.path.mkdir()
        ballast = fill(small, leave_bytes=len(POP.model_dump_json(indent=2)) // 2)
        with pytest.raises(OSError) as full:
            run_dir.create(POP)
        assert full.value.errno == errno.ENOSPC
        assert sorted(path.name for path in run_dir.path.iterdir()) == [], "no half-written file, no temporary one"
        ballast.unlink()
        run_dir.create(POP)
        assert run_dir.population() == POP


def test_a_record_is_written_whole_or_not_at_all(tmp_path):
    """A full disk fails the append of a whole line; the file keeps its last whole line and takes the next one whole."""
    with small_filesystem(tmp_path / "small", 1 << 20) as small:
        run_dir = RunDir(small / "run")
        run_dir.create(POP)
        run_dir.append(record("Shop--0"))
        before = (run_dir.path / RESULTS).read_bytes()
        big = record("Shop--1", reason="x" * 20_000)
        ballast = fill(small, leave_bytes=10_000)  # room for half of the record
        with pytest.raises(OSError) as full:
            run_dir.append(big)
        assert full.value.errno == errno.ENOSPC
        assert (run_dir.path / RESULTS).read_bytes() == before
        ballast.unlink()
        run_dir.append(big)
        assert [r.task_id for r in read_quietly(run_dir.path / RESULTS)] == ["Shop--0", "Shop--1"]


def test_population_written_by_many_processes_at_once_is_whole(tmp_path):
    path = tmp_path / "run"
    exit_codes = _run_all(_create_and_read, lambda i: (str(path),), 4)
    assert exit_codes == [0] * 4
    assert RunDir(path).population() == POP
