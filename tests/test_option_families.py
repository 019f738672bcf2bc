"""One declaration per option family: the judge's options are the same at pytest's `--rejudge` and at
`webeval reverify` (the command adds only how many judge calls run at once), a family renders into argparse and
pytest alike, and its values build the configuration or fail in one line naming the option."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.test_policy_options import help_options
from webeval.cli import main
from webeval.flags import Flag, OptionError, add_arguments, option_strings, values_of, with_defaults
from webeval.judges.config import JudgeConfigError
from webeval.judges.judge_options import CONCURRENCY, JUDGE_FLAGS, REJUDGE_FLAGS, judge_config

JUDGE_PREFIXES = ("--judge", "--no-judge")


def pytest_help(*args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    done = subprocess.run([sys.executable, "-m", "pytest", *args, "--help"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def command_help(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as done:
        main([*argv, "--help"])
    assert done.value.code == 0
    return out.getvalue()


def test_rejudge_and_reverify_take_the_same_judge_options():
    rejudge = help_options(pytest_help("suites/webvoyager"), JUDGE_PREFIXES)
    reverify = help_options(command_help("reverify"), JUDGE_PREFIXES)
    assert reverify - rejudge == option_strings([CONCURRENCY])  # the command's own: judge calls at once
    assert rejudge == reverify - {CONCURRENCY.name}
    assert rejudge == option_strings((*JUDGE_FLAGS, *REJUDGE_FLAGS))
    assert {"--judge-ensemble", "--judge-unparseable", "--judge-protocol", "--no-judge-cache"} <= rejudge


def test_every_suite_with_a_model_judge_takes_the_whole_judge_family():
    family = option_strings((*JUDGE_FLAGS, *REJUDGE_FLAGS))
    for suite in ("suites/webvoyager", "suites/tasks", "suites/rubric"):
        assert help_options(pytest_help(suite), JUDGE_PREFIXES) == family, suite
    # a suite whose judge reads the sites' state takes only how a re-judge treats the run
    assert help_options(pytest_help("suites/local"), JUDGE_PREFIXES) == option_strings(REJUDGE_FLAGS)


def test_a_family_renders_into_argparse_with_its_defaults_and_fresh_lists():
    family = (Flag("--site-map", action="append", default=(), metavar="NAME=URL"),
              Flag("--judge-timeout", type=float, default=120.0), Flag("--no-judge-cache", action="store_true"),
              Flag("--judge-protocol", choices=("webeval", "rubric")))
    parser = argparse.ArgumentParser(exit_on_error=False)
    add_arguments(parser, family)
    first = values_of(parser.parse_args(["--site-map", "a=http://x/", "--judge-timeout", "5"]), family)
    assert first == {"site_map": ["a=http://x/"], "judge_timeout": 5.0, "no_judge_cache": False,
                     "judge_protocol": None}
    again = parser.parse_args([])
    assert again.site_map == [] and again.judge_timeout == 120.0  # an appended option's default is not shared
    with pytest.raises(argparse.ArgumentError):
        parser.parse_args(["--judge-protocol", "gpt"])
    assert with_defaults(family, {"judge_timeout": None, "other": 1}) == {
        "site_map": [], "judge_timeout": 120.0, "no_judge_cache": False, "judge_protocol": None, "other": 1}


@pytest.mark.parametrize("values, message", [
    ({"judge_timeout": 0}, "--judge-timeout must be positive"),
    ({"judge_retries": -1}, "--judge-retries must not be negative"),
    ({"judge_screenshots": -2}, "--judge-screenshots must not be negative"),
    ({"judge_temperature": "warm"}, "--judge-temperature 'warm': expected a number or 'none'"),
    ({"judge": "gpt"}, "--judge 'gpt': use model, reference, or both (model,reference)"),
    ({"judge_base_url": "http://127.0.0.1:9/v1"}, "the model judge needs --judge-base-url and --judge-model"),
    ({"judge_profile": "nope"}, "--judge-profile 'nope' is unknown"),
    ({"judge_ensemble": "one"}, "--judge-ensemble 'one': name two or more judge profiles (A,B,C)"),
    ({"judge_model": "m", "judge_base_url": "http://127.0.0.1:9/v1", "judge_api_key_env": "NO_SUCH_JUDGE_KEY"},
     "the judge's API key variable $NO_SUCH_JUDGE_KEY is not set"),
])
def test_a_bad_judge_value_is_one_line_naming_the_option(monkeypatch, tmp_path, values, message):
    monkeypatch.delenv("NO_SUCH_JUDGE_KEY", raising=False)
    monkeypatch.delenv("WEBEVAL_JUDGE_PROFILES", raising=False)
    with pytest.raises(JudgeConfigError) as caught:
        judge_config(values, root=tmp_path)
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


def test_the_judge_config_takes_the_options_over_the_runs_own_judge(tmp_path):
    stored = {"kinds": ["model"], "base_url": "http://127.0.0.1:9/v1", "model": "before", "protocol": "rubric"}
    again = judge_config({}, stored, tmp_path, protocol="webeval")
    assert (again.model, again.base_url, again.protocol, again.cache) == ("before", stored["base_url"], "rubric",
                                                                          True)
    changed = judge_config({"judge_model": "after", "judge_protocol": "webeval", "no_judge_cache": True,
                            "judge_temperature": "none"}, stored, tmp_path)
    assert (changed.model, changed.protocol, changed.cache, changed.temperature) == ("after", "webeval", False, None)
    assert judge_config({}, None, tmp_path, protocol="rubric").protocol == "rubric"
    assert not judge_config({}, None, tmp_path).configured  # nothing asked for: no judge, and no error


def test_a_bad_value_of_a_benchmark_is_the_one_option_error():
    from webeval.benchmarks import benchmark_flags, benchmark_setup

    with pytest.raises(OptionError, match=r"^benchmark 'webarena' is unknown: use one of local, miniwob, rubric, "
                                          r"tasks, webvoyager \(tasks as tasks:PATH\)$"):
        benchmark_flags("webarena")
    with pytest.raises(OptionError, match="^--miniwob-seeds '3-1': the range 3-1 runs backwards$"):
        benchmark_setup("miniwob", {"miniwob_seeds": "3-1"})
    with pytest.raises(OptionError, match="^this suite runs a task file: pass --tasks-file PATH"):
        benchmark_setup("tasks")
    with pytest.raises(OptionError, match="^benchmark 'local:x': local takes no argument$"):
        benchmark_setup("local:x")
    assert isinstance(OptionError("x"), ValueError)
