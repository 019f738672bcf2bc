"""The bad-input table of docs/reliability.md, the rows checked before any task: task files, options and profiles.

Each row feeds its input to `pytest` as a user would, next to a run directory that already holds results. It must
stop the session with exactly one `ERROR:` line that names the file and line (or the option, or the key), print no
traceback, and leave every byte already recorded as it was.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import pytest

from tests.runs import run
from webeval.outcomes.record import AttemptRecord, Outcome
from webeval.outcomes.rundir import RunDir
from webeval.outcomes.writer import claim
from webeval.tasks import population_of, read_jsonl

HOSTILE_TASKS = Path(__file__).parents[1] / "fixtures" / "tasks" / "hostile.jsonl"
ROW = {"web_name": "Lab", "id": "Lab--0", "ques": "Say hi.", "web": "http://127.0.0.1:9/"}


def row(**changed) -> str:
    return json.dumps({key: value for key, value in {**ROW, **changed}.items() if value is not None})


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """A run directory that already holds a record and an attempt's files, as a session leaves it (its writer lease
    given back): what no bad input may touch."""
    tasks = read_jsonl(HOSTILE_TASKS)
    run_dir = RunDir(tmp_path_factory.mktemp("recorded") / "run").create(
        population_of("hostile", tasks, [HOSTILE_TASKS]))
    _, folder = run_dir.attempt_dir(tasks[0].id)
    (folder / "trajectory.jsonl").write_text(json.dumps({"step": 1, "actions": []}) + "\n")
    run_dir.append(AttemptRecord(run_id=run_dir.run_id, task_id=tasks[0].id, site=tasks[0].site,
                                 outcome=Outcome.passed, steps=1, path=str(folder.relative_to(run_dir.path))))
    claim(run_dir.path, "recorded").release()
    return run_dir.path


def files(root: Path) -> dict[str, bytes]:
    return {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


def tasks_file(tmp: Path, lines: list[str]) -> Path:
    path = tmp / "tasks.jsonl"
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def big_tasks_file(tmp: Path) -> Path:
    path = tasks_file(tmp, [row()])
    with open(path, "r+b") as f:
        f.truncate(100 << 20)  # 100 MB on disk (sparse: cheap to make), never read
    return path


def profile(tmp: Path, text: str | None, name: str = "profile.toml") -> str:
    path = tmp / name
    if text is not None:
        path.write_text(text, encoding="utf-8")
    return str(path)


POLICY = 'base_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
JUDGE = 'base_url = "http://127.0.0.1:9/v1"\nmodel = "j"\n'
WEBVOYAGER = ["suites/webvoyager"]
LOCAL = ["suites/local", "-k", "Shop--0"]

Args = Callable[[Path, Path], list[str]]  # (tmp_path, the recorded run directory) -> arguments of the bad run
ROWS: list[tuple[str, Args, str]] = [
    ("task file: invalid JSON on line N",
     lambda t, r: [*WEBVOYAGER, "--tasks-file", str(tasks_file(t, [row(), '{"id": "Lab--1",'])), "--run-dir", str(r)],
     "tasks.jsonl:2: invalid JSON"),
    ("task file: a missing field",
     lambda t, r: [*WEBVOYAGER, "--tasks-file", str(tasks_file(t, [row(), row(id="Lab--1", ques=None)])),
                   "--run-dir", str(r)],
     "tasks.jsonl:2: missing field 'ques'"),
    ("task file: a duplicate id",
     lambda t, r: [*WEBVOYAGER, "--tasks-file", str(tasks_file(t, [row(), row(ques="Again.")])), "--run-dir", str(r)],
     "tasks.jsonl:2: duplicate task id 'Lab--0' (first on line 1)"),
    ("task file: an id that is not a safe path segment",
     lambda t, r: [*WEBVOYAGER, "--tasks-file", str(tasks_file(t, [row(id="../../etc")])), "--run-dir", str(r)],
     "tasks.jsonl:1: id: task id '../../etc' is not a safe path segment"),
    ("task file: a start URL that is not http(s)",
     lambda t, r: [*WEBVOYAGER, "--tasks-file", str(tasks_file(t, [row(web="file:///etc/passwd")])),
                   "--run-dir", str(r)],
     "tasks.jsonl:1: start_url: start_url 'file:///etc/passwd' is not an http(s) URL"),
    ("task file: an empty file",
     lambda t, r: [*WEBVOYAGER, "--tasks-file", str(tasks_file(t, [])), "--run-dir", str(r)],
     "tasks.jsonl: no tasks in file"),
    ("task file: a 100 MB file",
     lambda t, r: [*WEBVOYAGER, "--tasks-file", str(big_tasks_file(t)), "--run-dir", str(r)],
     "tasks.jsonl: 100 MB is more than a task file may be (32 MB)"),
    ("option: --screen 0x0", lambda t, r: [*LOCAL, "--screen", "0x0", "--run-dir", str(r)],
     "--screen '0x0': width and height must be 100 to 16384 pixels"),
    ("option: --max-steps -1", lambda t, r: [*LOCAL, "--max-steps", "-1", "--run-dir", str(r)],
     "--max-steps must be at least 1"),
    ("option: --shard 3/2", lambda t, r: [*LOCAL, "--shard", "3/2", "--run-dir", str(r)],
     "--shard '3/2': expected K/N with 1 <= K <= N"),
    ("option: an unwritable --run-dir",
     lambda t, r: [*LOCAL, "--run-dir", profile(t, "a file, not a directory", "taken") + "/run"],
     "/run: cannot write the run there ("),
    ("option: --resume of a directory with another population", lambda t, r: [*LOCAL, "--resume", str(r)],
     "use a new run directory"),
    ("command line: two suites", lambda t, r: ["suites/local", "suites/rubric", "--run-dir", str(r)],
     "this session collects 2 suites: suites/local (local, 45 tasks), suites/rubric (rubric, 15 tasks); a run "
     "scores one suite's population: run one suite per session"),
    ("command line: the folder of every suite", lambda t, r: ["suites", "--run-dir", str(r)],
     "this session collects 5 suites: "),
    ("policy profile: an unknown key",
     lambda t, r: [*LOCAL, "--policy", "openai", "--policy-profile", profile(t, POLICY + "bogus = 1\n"),
                   "--run-dir", str(r)],
     "profile.toml has unknown key 'bogus'"),
    ("policy profile: a wrong type",
     lambda t, r: [*LOCAL, "--policy", "openai", "--policy-profile", profile(t, POLICY + 'max_tokens = "many"\n'),
                   "--run-dir", str(r)],
     "profile.toml: max_tokens: Input should be a valid integer"),
    ("policy profile: a missing file",
     lambda t, r: [*LOCAL, "--policy", "openai", "--policy-profile", profile(t, None), "--run-dir", str(r)],
     "cannot read profile"),
    ("judge profile: an unknown key",
     lambda t, r: [*WEBVOYAGER, "--tasks-file", str(tasks_file(t, [row()])), "--run-dir", str(r),
                   "--judge-profile", profile(t, JUDGE + "bogus = 1\n")],
     "profile.toml has unknown key 'bogus'"),
    ("judge profile: a wrong type",
     lambda t, r: [*WEBVOYAGER, "--tasks-file", str(tasks_file(t, [row()])), "--run-dir", str(r),
                   "--judge-profile", profile(t, JUDGE + 'timeout = "slow"\n')],
     "profile.toml: timeout: Input should be a valid number"),
    ("judge profile: a missing file",
     lambda t, r: [*WEBVOYAGER, "--tasks-file", str(tasks_file(t, [row()])), "--run-dir", str(r),
                   "--judge-profile", profile(t, None)],
     "cannot read profile"),
]


@pytest.mark.parametrize("args, expected", [pytest.param(a, e, id=name) for name, a, e in ROWS])
def test_bad_input_stops_with_one_line_and_loses_nothing(tmp_path, recorded, args, expected):
    before = files(recorded)
    job = run(["-p", "no:xdist", *args(tmp_path, recorded)], tmp_path)
    errors = [line for line in job.output.splitlines() if line.startswith("ERROR:")]
    assert job.proc.returncode == 4, job.output
    assert len(errors) == 1 and expected in errors[0], job.output
    assert "Traceback" not in job.output and '  File "' not in job.output, job.output
    assert files(recorded) == before


@pytest.mark.parametrize("args", [["suites", "-n", "2"], ["suites/local", "suites/rubric", "-p", "no:xdist"],
                                  ["suites/local", "--collect-only", "-p", "no:xdist"],
                                  ["suites/local", "--setup-plan", "-k", "Shop--1", "-p", "no:xdist"],
                                  ["suites/local", "--setup-only", "-k", "Shop--1", "-p", "no:xdist"]],
                         ids=["every suite, two workers", "two suites", "collect only", "setup plan", "setup only"])
def test_a_session_that_scores_nothing_leaves_no_run_directory(tmp_path, args):
    job = run([*args, "--run-dir", str(tmp_path / "run")], tmp_path)
    if any(arg.startswith(("--collect", "--setup")) for arg in args):
        assert job.proc.returncode == 0 and "webeval summary" not in job.output, job.output  # a dry run: nothing scored
        assert "45 tests collected" in job.output or "test_task[Shop--1]" in job.output, job.output
    else:
        assert job.proc.returncode not in (0, 5) and "a run scores one suite's population" in job.output, job.output
        assert "Defining 'pytest_plugins'" not in job.output, job.output
    assert not (tmp_path / "run").exists()
