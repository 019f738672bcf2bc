"""The policy in pytest: its options (webeval.policy.choice's family), the choice kept in `config.stash`, the
preflight of a model endpoint, and stopping the session when the endpoint refuses the credentials.

`config.stash[POLICY]` holds the `PolicyChoice`; `config.stash[EPISODE_POLICY]`, what builds each episode's policy.
Both are set at session start on every process (the controller and each xdist worker). A plugin that acts otherwise
(bench/model_standin.py) wraps EPISODE_POLICY in its own `pytest_sessionstart` (trylast).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from webeval.flags import OptionError, add_pytest_options, values_of
from webeval.models import PreflightError
from webeval.plugin.keys import ATTEMPT
from webeval.plugin.options import settings
from webeval.policy.choice import POLICY_FLAGS, PolicyChoice, PolicyFactory
from webeval.policy.choice import check_policy as _check_policy
from webeval.policy.openai import PolicyAuthError, check_policy_endpoint

STOP_EXIT_CODE = 3  # the session stopped for a misconfiguration: nothing (more) can run
STOPPED = pytest.StashKey[str]()
POLICY = pytest.StashKey[PolicyChoice]()  # who acts, as the options chose
EPISODE_POLICY = pytest.StashKey[PolicyFactory]()  # what builds each episode's policy (its session, its task)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_pytest_options(parser.getgroup("webeval"), POLICY_FLAGS)


def check_policy(name: str | None) -> None:
    try:
        _check_policy(name)
    except OptionError as exc:
        raise pytest.UsageError(str(exc)) from None


def chosen(config: pytest.Config) -> PolicyChoice:
    """The session's policy choice; before session start (or with --help), what the --policy option names."""
    return config.stash.get(POLICY, None) or PolicyChoice(config.option.policy)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Options first, then (once, on the xdist controller, before any worker starts) the endpoint's preflight."""
    config = session.config
    if config.option.help or config.option.policy is None:
        return
    try:
        choice = PolicyChoice.from_values(values_of(config.option, POLICY_FLAGS), Path(config.rootpath))
    except OptionError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[POLICY] = choice
    config.stash[EPISODE_POLICY] = choice.factory(settings(config).screen)
    if choice.profile is not None and not hasattr(config, "workerinput") and not config.option.collectonly:
        try:
            check_policy_endpoint(choice.profile, os.environ)
        except PreflightError as exc:
            pytest.exit(f"webeval: {exc}", returncode=STOP_EXIT_CODE)


# -- a refused API key mid-run stops the session (the task itself is masked as infra[policy_auth]) -----------------
def stop_session(item: pytest.Item, message: str) -> None:
    """Stop the whole session (every xdist worker too) after this test: nothing more can run. It exits 3."""
    config = item.config
    text = f"webeval: stopping the session: {message}"
    if not config.stash.get(STOPPED, None):
        config.stash[STOPPED] = text
    item.session.shouldstop = text
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["webeval_stop"] = text


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    attempt = item.stash.get(ATTEMPT, None)
    episode = attempt.episode if attempt is not None else None
    if report.when == "call" and episode is not None and isinstance(episode.infra, PolicyAuthError):
        stop_session(item, episode.infra.message)  # the client's messages never carry the key
    return report


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    """xdist controller: a worker that stopped for a refused key stops the whole run with its message."""
    message = getattr(node, "workeroutput", {}).get("webeval_stop")
    if message and not node.config.stash.get(STOPPED, None):
        node.config.stash[STOPPED] = message


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    if session.config.stash.get(STOPPED, None):
        session.exitstatus = STOP_EXIT_CODE
