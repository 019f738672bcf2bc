"""The policy's options: declared once (webeval.policy.choice), the choice they make, fed for real to pytest and to an
argparse parser (one line of error each), and the documented profiles."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from webeval.flags import OptionError, add_arguments, option_strings, values_of
from webeval.policy.choice import POLICY_FLAGS, PolicyChoice
from webeval.policy.openai import load_profile

ROOT = Path(__file__).resolve().parents[1]


def test_documented_profiles_load():
    profiles = sorted((ROOT / "docs" / "profiles").glob("*.toml"))
    loaded = {path.name: load_profile(path, {}) for path in profiles}
    assert {p.adapter for p in loaded.values()} == {"tools", "webvoyager", "ui-tars", "computer-use", "grid-1"}
    assert len(loaded) == 9 and {p.api for p in loaded.values()} == {"chat", "responses"}
    assert all(p.model and p.base_url.startswith("http") for p in loaded.values())


def options(**given) -> dict:
    """The policy family's values by destination, as a front door reads them back (the rest have their defaults)."""
    return given


def policy_options(values: dict) -> PolicyChoice:
    return PolicyChoice.from_values(values)


def test_options_make_the_profile(tmp_path):
    profile = tmp_path / "p.toml"
    profile.write_text('base_url = "http://127.0.0.1:9/v1"\nmodel = "m"\nscreenshots = 5\n')
    chosen = policy_options(options(policy="openai", policy_profile=str(profile), policy_model="n",
                                    policy_screenshots=2, policy_adapter="grid-999", record=True))
    assert (chosen.profile.model, chosen.profile.screenshots, chosen.profile.adapter, chosen.record) == (
        "n", 2, "grid-999", True)
    assert policy_options(options(policy="replay", replay_from=str(tmp_path))).replay_from == tmp_path


def test_bad_policy_options_are_one_line_errors(tmp_path):
    bad_toml = tmp_path / "bad.toml"
    bad_toml.write_text('base_url = "http://127.0.0.1:9/v1"\nmodel = "m"\nscreenshots = 0\n')
    cases = [
        (dict(policy="openai", policy_base_url="http://127.0.0.1:9/v1"),
         "policy options: no model (pass --policy-model or a profile that sets it)"),
        (dict(policy="openai", policy_model="m"), "policy options: no base_url (pass --policy-base-url or a profile "
                                                  "that sets it)"),
        (dict(policy="openai", policy_profile=str(bad_toml)),
         f"profile {bad_toml}: screenshots: Input should be greater than or equal to 1"),
        (dict(policy="openai", policy_profile=str(tmp_path / "none.toml")),
         f"cannot read profile {tmp_path / 'none.toml'}: No such file or directory"),
        (dict(policy="openai", policy_base_url="http://a/v1", policy_model="m", policy_timeout=0.0),
         "policy options: timeout_s: Input should be greater than 0"),
        (dict(policy="oracle", record=True), "--record keeps a model's requests and replies: use it with --policy "
                                             "openai"),
        (dict(policy="oracle", replay_from=str(tmp_path)), "--replay-from goes with --policy replay"),
        (dict(policy="replay"), "--policy replay needs --replay-from DIR (a run directory recorded with --record)"),
        (dict(policy="replay", replay_from=str(tmp_path / "gone")), f"--replay-from {tmp_path / 'gone'}: no such "
                                                                     "directory"),
    ]
    for given, message in cases:
        with pytest.raises(OptionError) as caught:
            policy_options(options(**given))
        assert str(caught.value) == message


def test_a_bad_option_stops_pytest_before_any_task(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    proc = subprocess.run([sys.executable, "-m", "pytest", "suites/local", "-p", "no:xdist", "-q", "--run-dir",
                           str(tmp_path / "r"), "--policy", "openai", "--policy-base-url", "http://127.0.0.1:9/v1"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 4
    assert proc.stderr.strip() == "ERROR: policy options: no model (pass --policy-model or a profile that sets it)"
    assert not (tmp_path / "r").exists()


def test_the_policy_family_renders_into_argparse_and_makes_the_same_choice(tmp_path):
    parser = argparse.ArgumentParser(prog="collect")
    add_arguments(parser, POLICY_FLAGS)
    args = parser.parse_args(["--policy", "openai", "--policy-base-url", "http://127.0.0.1:9/v1", "--policy-model",
                              "m", "--policy-screenshots", "2", "--record"])
    chosen = PolicyChoice.from_values(values_of(args, POLICY_FLAGS))
    assert (chosen.name, chosen.model, chosen.profile.screenshots, chosen.record) == ("openai", "m", 2, True)
    assert chosen == policy_options(options(policy="openai", policy_base_url="http://127.0.0.1:9/v1",
                                            policy_model="m", policy_screenshots=2, record=True))
    assert PolicyChoice.from_values(values_of(parser.parse_args(["--policy", "oracle"]), POLICY_FLAGS)).describe() \
        == "policy: oracle -- the tasks' built-in solutions are acting, not a model"
    with pytest.raises(OptionError) as caught:
        PolicyChoice.from_values(values_of(parser.parse_args(["--policy", "gpt"]), POLICY_FLAGS))
    assert str(caught.value) == "--policy 'gpt' is unknown: use one of oracle, openai, replay"


def test_pytest_and_argparse_take_the_same_policy_options(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    helped = subprocess.run([sys.executable, "-m", "pytest", "suites/local", "--help"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=300)
    assert helped.returncode == 0, helped.stderr
    assert help_options(helped.stdout, ("--policy", "--record", "--replay-from", "--dump-observation")) == \
        option_strings(POLICY_FLAGS)


def help_options(text: str, prefixes: tuple[str, ...]) -> set[str]:
    """The options a help text declares (each at the start of its line, as pytest and argparse print them)."""
    found = set()
    for line in text.splitlines():
        first = line.strip().split(" ", 1)[0]
        for option in first.split(","):
            option = option.split("=", 1)[0]
            if option.startswith(prefixes):
                found.add(option)
    return found
