"""What a run ran with: exact versions and git commits, as each session records them into its run directory and
summary.json, `webeval merge` and the Allure environment state them."""

from __future__ import annotations

import json
import subprocess
from importlib import metadata
from pathlib import Path

import pytest

from tests.conftest import ROOT
from webeval.cli import main
from webeval.outcomes.reconcile import write_summary
from webeval.outcomes.record import AttemptRecord, Outcome
from webeval.outcomes.rundir import RunDir
from webeval.outcomes.sessions import SESSIONS, append_session, read_sessions, summary_versions
from webeval.report.run_environment import environment
from webeval.report.versions import PACKAGES, versions
from webeval.runtime.browser import find_chromium
from webeval.tasks import Population

POPULATION = Population(name="lab", ids=("Lab--0", "Lab--1"), sha256="ab" * 32,
                        sites={"Lab--0": "Lab", "Lab--1": "Lab"})


def git(*args: str, cwd: Path) -> str:
    command = ["git", "-c", "user.name=webeval", "-c", "user.email=webeval@localhost", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=True, timeout=30).stdout.strip()


def test_versions_are_exact_and_name_the_harnesss_commit_and_a_projects_own(tmp_path):
    chromium = find_chromium(None)
    found = versions(chromium, ROOT)
    for name in PACKAGES:
        assert found[name] == metadata.version(name)
    assert found["chromium"] == subprocess.run([chromium, "--version"], capture_output=True, text=True).stdout.strip()
    assert found["chromium"].startswith("Chromium ")
    assert found["git.commit"] == git("rev-parse", "HEAD", cwd=ROOT)
    assert found["git.dirty"] == str(bool(git("status", "--porcelain", cwd=ROOT))).lower()
    assert "project.git.commit" not in found  # pytest runs in the harness's own tree

    project = tmp_path / "my-suites"
    project.mkdir()
    git("init", "-q", cwd=project)
    (project / "conftest.py").write_text("")
    git("add", "conftest.py", cwd=project)
    git("commit", "-q", "-m", "suites", cwd=project)
    (project / "tasks.jsonl").write_text("{}\n")  # not committed yet
    own = versions(chromium, project)
    assert own["project.git.commit"] == git("rev-parse", "HEAD", cwd=project) and own["project.git.dirty"] == "true"
    assert own["git.commit"] == found["git.commit"]
    assert versions(None)["chromium"] == "Playwright's bundled Chromium"


def test_summary_json_states_the_latest_sessions_versions_and_what_differed(tmp_path):
    run = RunDir(tmp_path / "run").create(POPULATION)
    run.append(AttemptRecord(run_id="run", task_id="Lab--0", site="Lab", outcome=Outcome.passed))
    write_summary(run)  # a run made before sessions were recorded: no versions to state
    assert summary_versions(run.path) == {} and "versions" not in json.loads((run.path / "summary.json").read_text())
    before = {"playwright": "1.64.0", "pytest": "9.2.0", "git.commit": "a" * 40}
    after = {"playwright": "1.65.2", "pytest": "9.2.0", "git.commit": "b" * 40}
    append_session(run.path, "s-1", before)
    append_session(run.path, "s-2", after)
    write_summary(run)
    summary = json.loads((run.path / "summary.json").read_text())
    assert summary["versions"] == after and summary["passed"] == 1
    assert summary["versions_differ"] == {"playwright": ["1.64.0", "1.65.2"], "git.commit": ["a" * 40, "b" * 40]}
    assert [s["session"] for s in read_sessions(run.path)] == ["s-1", "s-2"]


def test_a_torn_session_line_is_named_and_the_others_are_kept(tmp_path):
    run = RunDir(tmp_path / "run").create(POPULATION)
    append_session(run.path, "s-1", {"pytest": "9.2.0"})
    with open(run.path / SESSIONS, "a") as out:
        out.write('{"session": "s-2", "versi\n')
    append_session(run.path, "s-3", {"pytest": "9.3.0"})
    with pytest.warns(UserWarning, match=rf"{SESSIONS}:2: ignoring a torn or corrupt session line"):
        sessions = read_sessions(run.path)
    assert [s["session"] for s in sessions] == ["s-1", "s-3"]


def test_merge_keeps_every_sources_sessions(tmp_path, capsys):
    shards = []
    for k, task_id in enumerate(POPULATION.ids, start=1):
        shard = RunDir(tmp_path / f"shard-{k}").create(POPULATION)
        shard.append(AttemptRecord(run_id=f"shard-{k}", session=f"s-{k}", task_id=task_id, site="Lab",
                                   outcome=Outcome.passed))
        append_session(shard.path, f"s-{k}", {"pytest": f"9.{k}.0"})
        shards.append(str(shard.path))
    assert main(["merge", *shards, "--out", str(tmp_path / "merged")]) == 0
    summary = json.loads((tmp_path / "merged" / "summary.json").read_text())
    assert summary["complete"] and summary["versions"] == {"pytest": "9.2.0"}
    assert summary["versions_differ"] == {"pytest": ["9.1.0", "9.2.0"]}


def test_the_allure_environment_carries_the_versions(tmp_path):
    env = environment(POPULATION, [], policy="oracle", model=None, chromium=find_chromium(None), root=ROOT)
    expected = versions(find_chromium(None), ROOT)
    assert {key: env[key] for key in expected} == expected
    assert {"playwright", "chromium", "pytest", "pytest-xdist", "openai", "allure-pytest", "git.commit",
            "git.dirty"} <= set(env)
