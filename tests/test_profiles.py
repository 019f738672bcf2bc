"""Profiles of the policy and of the judge: by name or by path, in TOML or JSON, checked by the same loader; every bad
input is one line naming the file and the key, and stops a session before anything runs. The README's example (a
JSON policy profile and a JSON judge profile) runs a WebVoyager-format task end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fixtures.openai_stub import OpenAIStub, Reply, call, text
from tests.conftest import ROOT
from tests.webvoyager_data import parsed, pytest_run, records
from webeval.benchmarks.local.site_server import SiteServer
from webeval.benchmarks.webvoyager.settings import build
from webeval.judges.config import JudgeConfig, JudgeConfigError, with_profile
from webeval.policy.openai import ProfileError, load_profile

POLICY = {"base_url": "http://127.0.0.1:9/v1", "model": "agent-model", "screenshots": 2}
JUDGE = {"base_url": "http://127.0.0.1:9/v1", "model": "judge-model", "api_key_env": "WB_JUDGE_KEY", "timeout": 30}


def toml_of(fields: dict[str, Any], table: str | None = None) -> str:
    head = [f"[{table}]"] if table else []
    return "\n".join(head + [f"{key} = {json.dumps(value)}" for key, value in fields.items()]) + "\n"


def write(path: Path, fields: dict[str, Any]) -> Path:
    path.write_text(json.dumps(fields) if path.suffix == ".json" else toml_of(fields), encoding="utf-8")
    return path


def catalogue(path: Path, tables: dict[str, dict[str, Any]]) -> Path:
    text = json.dumps(tables) if path.suffix == ".json" else "".join(toml_of(f, name) for name, f in tables.items())
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def no_profiles_files(monkeypatch):
    monkeypatch.delenv("WEBEVAL_POLICY_PROFILES", raising=False)
    monkeypatch.delenv("WEBEVAL_JUDGE_PROFILES", raising=False)


# -- both forms, both formats, both users ---------------------------------------------------------------------------
@pytest.mark.parametrize("form", ["toml", "json"])
def test_a_policy_profile_by_path(tmp_path, form):
    path = write(tmp_path / f"my-model.{form}", POLICY)
    profile = load_profile(str(path), {"screenshots": 1}, tmp_path)
    assert (profile.base_url, profile.model, profile.screenshots) == ("http://127.0.0.1:9/v1", "agent-model", 1)


@pytest.mark.parametrize("form", ["toml", "json"])
def test_a_policy_profile_by_name(tmp_path, monkeypatch, form):
    named = catalogue(tmp_path / f"policy-profiles.{form}", {"local": POLICY, "other": {**POLICY, "model": "x"}})
    if form == "json":  # the variable names any file; without it, policy-profiles.toml in the root is read
        monkeypatch.setenv("WEBEVAL_POLICY_PROFILES", str(named))
    profile = load_profile("local", {}, tmp_path)
    assert (profile.model, profile.screenshots) == ("agent-model", 2)


@pytest.mark.parametrize("form", ["toml", "json"])
def test_a_judge_profile_by_path_is_kept_absolute_for_rejudging(tmp_path, monkeypatch, form):
    write(tmp_path / f"my-judge.{form}", JUDGE)
    monkeypatch.chdir(tmp_path)
    config = with_profile(JudgeConfig(profile=f"./my-judge.{form}"), tmp_path)
    assert (config.base_url, config.model, config.api_key_env, config.timeout_s) == (
        "http://127.0.0.1:9/v1", "judge-model", "WB_JUDGE_KEY", 30)
    assert config.profile == str(tmp_path / f"my-judge.{form}")


@pytest.mark.parametrize("form", ["toml", "json"])
def test_a_judge_profile_by_name(tmp_path, monkeypatch, form):
    named = catalogue(tmp_path / f"judge-profiles.{form}", {"local": JUDGE})
    if form == "json":
        monkeypatch.setenv("WEBEVAL_JUDGE_PROFILES", str(named))
    config = with_profile(JudgeConfig(profile="local", model="chosen-on-the-command-line"), tmp_path)
    assert (config.model, config.api_key_env, config.profile) == ("chosen-on-the-command-line", "WB_JUDGE_KEY", "local")
    assert with_profile(JudgeConfig(profile="openai-gpt-4o"), tmp_path).model == "gpt-4o"  # built in


def test_the_suite_options_take_both_forms(tmp_path, monkeypatch):
    monkeypatch.setenv("WB_JUDGE_KEY", "sk-unused")
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"web_name": "Allrecipes", "id": "Allrecipes--0", "ques": "Find pie.",
                                 "web": "https://www.allrecipes.com/"}))
    monkeypatch.setenv("WEBEVAL_JUDGE_PROFILES", str(catalogue(tmp_path / "j.toml", {"local": JUDGE})))
    by_name = build(parsed(["--tasks-file", str(tasks), "--judge-profile", "local"])).judge
    by_path = build(parsed(["--tasks-file", str(tasks), "--judge-profile", str(write(tmp_path / "j.json", JUDGE))]))
    assert by_name.model == by_path.judge.model == "judge-model"


# -- bad inputs: one line naming the file and the key ---------------------------------------------------------------
BAD = [
    ("policy", "unknown.toml", toml_of({**POLICY, "modle": "x"}), "profile {path} has unknown key 'modle'"),
    ("policy", "type.toml", toml_of({**POLICY, "screenshots": "three"}),
     "profile {path}: screenshots: Input should be a valid integer, unable to parse string as an integer"),
    ("policy", "key.json", json.dumps({**POLICY, "api_key": "sk-in-a-file"}),
     "profile {path} holds an API key: name its variable with api_key_env"),
    ("policy", "broken.toml", "model = \n", "{path}: invalid TOML: Invalid value (at line 1, column 9)"),
    ("policy", "list.json", "[1]", "profile {path} must be a table of fields"),
    ("judge", "unknown.json", json.dumps({**JUDGE, "temprature": 0}), "profile {path} has unknown key 'temprature'"),
    ("judge", "type.json", json.dumps({**JUDGE, "timeout": "soon"}),
     "profile {path}: timeout: Input should be a valid number, unable to parse string as a number"),
    ("judge", "key.toml", toml_of({**JUDGE, "api_key": "sk-in-a-file"}),
     "profile {path} holds an API key: name its variable with api_key_env"),
    ("judge", "broken.json", "{",
     "{path}: invalid JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
]


@pytest.mark.parametrize("user, name, content, message", BAD, ids=[f"{b[0]}-{b[1]}" for b in BAD])
def test_a_bad_profile_file_is_one_line_naming_file_and_key(tmp_path, user, name, content, message):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    before = path.read_bytes()
    with pytest.raises((ProfileError, JudgeConfigError)) as caught:
        load_profile(str(path), {}, tmp_path) if user == "policy" else with_profile(JudgeConfig(profile=str(path)))
    assert str(caught.value) == message.format(path=path)
    assert path.read_bytes() == before  # read, never rewritten


@pytest.mark.parametrize("user", ["policy", "judge"])
def test_a_missing_file_and_an_unknown_name(tmp_path, user):
    load = (lambda ref: load_profile(ref, {}, tmp_path)) if user == "policy" else (
        lambda ref: with_profile(JudgeConfig(profile=ref), tmp_path))
    option = "--policy-profile" if user == "policy" else "--judge-profile"
    with pytest.raises((ProfileError, JudgeConfigError)) as missing:
        load(str(tmp_path / "gone.toml"))
    assert str(missing.value) == f"cannot read profile {tmp_path / 'gone.toml'}: No such file or directory"
    with pytest.raises((ProfileError, JudgeConfigError)) as unknown:
        load("nope")
    assert str(unknown.value).startswith(f"{option} 'nope' is unknown: ")
    assert str(unknown.value).endswith("or give the path of a .toml or .json file")


def test_a_bad_table_of_a_profiles_file_is_named(tmp_path, monkeypatch):
    named = catalogue(tmp_path / "profiles.toml", {"good": JUDGE, "bad": {**JUDGE, "retries": -1}})
    monkeypatch.setenv("WEBEVAL_JUDGE_PROFILES", str(named))
    with pytest.raises(JudgeConfigError) as caught:
        with_profile(JudgeConfig(profile="good"))
    assert str(caught.value) == f"{named}: profile 'bad': retries: Input should be greater than or equal to 0"


def test_a_bad_profile_stops_pytest_before_anything_runs(tmp_path):
    path = write(tmp_path / "bad.json", {**POLICY, "screenshots": 0})
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    proc = subprocess.run([sys.executable, "-m", "pytest", "suites/local", "-p", "no:xdist", "-q", "--run-dir",
                           str(tmp_path / "run"), "--policy", "openai", "--policy-profile", str(path)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert proc.stderr.strip() == f"ERROR: profile {path}: screenshots: Input should be greater than or equal to 1"
    assert not (tmp_path / "run").exists()


# -- the README's example -------------------------------------------------------------------------------------------
def acts(origin: str):
    def reply(request: dict[str, Any]) -> Reply:
        if not any(m["role"] == "assistant" for m in request["messages"]):
            return call("navigate", {"url": f"{origin}/recipes/search?q=creme+brulee"})
        return call("terminate", {"status": "success", "answer": "The Crème Brûlée recipe has 1,284 reviews."})

    return reply


def test_the_readme_example_runs_with_json_profiles(tmp_path):
    """`pytest suites/webvoyager --policy-profile my-model.json --judge-profile my-judge.json`, as the README says."""
    tasks = tmp_path / "webvoyager.jsonl"
    tasks.write_text(json.dumps({"web_name": "Allrecipes", "id": "Allrecipes--0", "web": "https://www.allrecipes.com/",
                                 "ques": "How many reviews does the Crème Brûlée recipe have?"}), encoding="utf-8")
    verdict = text(json.dumps({"reasoning": "The page shows 1,284 reviews.", "verdict": "SUCCESS"}))
    with SiteServer() as sites, OpenAIStub(acts(sites.origin), models=("agent-model",)) as agent, \
            OpenAIStub([verdict], models=("judge-model",), api_key="sk-judge-readme") as judge:
        write(tmp_path / "my-model.json", {**POLICY, "base_url": agent.base_url})
        write(tmp_path / "my-judge.json", {**JUDGE, "base_url": judge.base_url})
        run_dir = tmp_path / "run"
        result = pytest_run(["suites/webvoyager", "--policy-profile", str(tmp_path / "my-model.json"),
                             "--judge-profile", str(tmp_path / "my-judge.json"), "--tasks-file", str(tasks),
                             "--site-map", f"Allrecipes={sites.origin}/recipes/", "--run-dir", str(run_dir),
                             "--max-steps", "4", "-p", "no:xdist", "-q"], env={"WB_JUDGE_KEY": "sk-judge-readme"})
    assert [(r["task_id"], r["outcome"]) for r in records(run_dir)] == [("Allrecipes--0", "passed")], \
        result.stdout[-3000:] + result.stderr[-2000:]
    assert len(judge.requests) == 1 and agent.requests[0]["model"] == "agent-model"
    stored = json.loads((run_dir / "webvoyager.json").read_text())["judge"]
    assert stored["profile"] == str(tmp_path / "my-judge.json") and stored["model"] == "judge-model"
