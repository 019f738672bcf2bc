"""Runs that cannot mix conditions: the first session of a run directory records what it ran under; `--resume`,
`--shard` into it and `webeval merge` refuse another model, another screen or other task texts with one line naming
the differences, unless `--allow-mixed` (and the summary then lists them). `--resume` renders date templates as the
first session did, whatever day it is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fixtures.openai_stub import OpenAIStub
from tests.webvoyager_data import closed_port, pytest_run, records
from webeval.cli import main

SUITE = "suites/webvoyager"


@pytest.fixture
def tasks(tmp_path) -> Path:
    """A dated task and a plain one, on a site that is not there: every session ends them not run, no browser."""
    web = f"http://127.0.0.1:{closed_port()}/"
    rows = [{"web_name": "Booking", "id": "Booking--0", "ques_template": "Find a hotel in Ohio for {dates}.",
             "date_policy": {"type": "hotel_stay", "min_days_from_today": 30, "duration_days": 2},
             "render": {"dates": "month_day_range_year"}, "web": web},
            {"web_name": "Booking", "id": "Booking--1", "ques": "Find a hotel in Rome.", "web": web}]
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in rows), encoding="utf-8")
    return path


@pytest.fixture
def model():
    with OpenAIStub(models=("model-a", "model-b")) as stub:
        yield stub


def session(tasks: Path, model: OpenAIStub, *extra: str, name: str = "model-a"):
    return pytest_run([SUITE, "--tasks-file", str(tasks), "--policy", "openai", "--policy-base-url", model.base_url,
                       "--policy-model", name, "--allow-incomplete", "-q", *extra], env={"OPENAI_API_KEY": "k"})


def first_run(tasks: Path, model: OpenAIStub, run_dir: Path, *extra: str) -> dict:
    result = session(tasks, model, "--run-dir", str(run_dir), "--today", "2031-03-15", *extra)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads((run_dir / "conditions.json").read_text())["first"]


def refused(result, run_dir: Path, differences: str) -> None:
    """Exit 4, and one line that names the differences (`differences` is how it begins)."""
    assert result.returncode == 4, result.stdout + result.stderr
    said = result.stderr.strip()
    assert "\n" not in said and said.startswith(f"ERROR: {run_dir}: this session's conditions differ from the run's "
                                                f"first session: {differences}")
    assert said.endswith("; use a new run directory, or pass --allow-mixed to mix them (the summary then lists the "
                         "differences)")


def test_the_first_session_records_its_conditions(tasks, model, tmp_path):
    conditions = first_run(tasks, model, tmp_path / "run")
    assert conditions["policy"] == "openai" and conditions["policy model"] == "model-a"
    assert conditions["screen"] == "1280x720" and conditions["browser"] == "local"
    assert conditions["judge"] == "model, protocol webeval, model -"
    assert conditions["judge convention"] == "an unreadable verdict is masked"
    assert conditions["population"].startswith("webvoyager-file-tasks sha256 ")
    assert conditions["task texts"].startswith("sha256 ") and conditions["policy profile"].startswith("fields ")
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["conditions"] == conditions and summary["mixed"] == {}


def test_resume_on_another_day_renders_the_dates_as_the_first_session_did(tasks, model, tmp_path):
    run_dir = tmp_path / "run"
    first = first_run(tasks, model, run_dir)  # as if on 2031-03-15; this resume runs on the machine's today
    again = session(tasks, model, "--resume", str(run_dir), "-rs")
    assert again.returncode == 0, again.stdout + again.stderr
    lines = (run_dir / "sessions.jsonl").read_text().splitlines()
    assert [json.loads(line)["conditions"]["task texts"] for line in lines] == [first["task texts"]] * 2
    assert len(records(run_dir)) == 4 and json.loads((run_dir / "summary.json").read_text())["mixed"] == {}
    other_day = session(tasks, model, "--resume", str(run_dir), "--today", "2031-04-01")
    refused(other_day, run_dir, f"task texts {first['task texts']} -> sha256 ")  # its dates are other dates
    assert len(records(run_dir)) == 4  # nothing was written


def test_resume_with_another_model_is_refused_and_allowed_to_mix_it_is_listed(tasks, model, tmp_path):
    run_dir = tmp_path / "run"
    first_run(tasks, model, run_dir)
    other = session(tasks, model, "--resume", str(run_dir), name="model-b")
    refused(other, run_dir, "policy model model-a -> model-b; use a new run directory")
    assert len(records(run_dir)) == 2
    mixed = session(tasks, model, "--resume", str(run_dir), "--allow-mixed", name="model-b")
    assert mixed.returncode == 0, mixed.stdout + mixed.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    (session_id, found), = summary["mixed"].items()
    assert found["policy model"] == ["model-a", "model-b"]
    assert f"MIXED conditions (--allow-mixed), against the first session's: session {session_id}: policy model " \
           "model-a -> model-b" in mixed.stdout
    assert "Mixed conditions (--allow-mixed): session" in (run_dir / "summary.md").read_text()


def test_a_shard_into_the_run_on_another_screen_is_refused(tasks, model, tmp_path):
    run_dir = tmp_path / "run"
    first_run(tasks, model, run_dir, "--shard", "1/2")
    other = session(tasks, model, "--run-dir", str(run_dir), "--today", "2031-03-15", "--shard", "2/2", "--screen",
                    "1920x1080")
    refused(other, run_dir, "screen 1280x720 -> 1920x1080; use")
    same = session(tasks, model, "--run-dir", str(run_dir), "--today", "2031-03-15", "--shard", "2/2")
    assert same.returncode == 0, same.stdout + same.stderr
    assert len(records(run_dir)) == 2 and json.loads((run_dir / "summary.json").read_text())["mixed"] == {}


def test_merge_refuses_runs_of_other_conditions_unless_allowed(tasks, model, tmp_path, capsys):
    first_run(tasks, model, tmp_path / "a", "--shard", "1/2")
    first_run(tasks, model, tmp_path / "b", "--shard", "2/2", "--judge-unparseable", "fail")
    assert main(["merge", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "m")]) == 2
    error = capsys.readouterr().err.strip()
    assert error == (f"webeval merge: error: the runs' conditions differ from {tmp_path / 'a'}'s: {tmp_path / 'b'}: "
                     "judge convention an unreadable verdict is masked -> an unreadable verdict is failed; "
                     "convention judge_unparseable mask -> fail; merge runs made under the same conditions, or pass "
                     "--allow-mixed (the summary then lists the differences)")
    assert not (tmp_path / "m").exists()
    main(["merge", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "m"), "--allow-mixed"])
    summary = json.loads((tmp_path / "m" / "summary.json").read_text())
    assert summary["mixed"] == {"b (merged)": {
        "judge convention": ["an unreadable verdict is masked", "an unreadable verdict is failed"],
        "convention judge_unparseable": ["mask", "fail"]}}
    assert summary["conventions"]["judge_unparseable"] == "mask"  # the first run's, and the difference is listed
    assert "MIXED conditions (--allow-mixed)" in capsys.readouterr().out
