"""The pytest plugin: thin hooks that turn pytest's life cycle into calls of the layers below."""

from __future__ import annotations

import uuid

import pytest

from webeval.outcomes.rundir import RunDir
from webeval.plugin import allure, browsers, cost_limit, episode_fixtures, epoch_option, gate_options, options, outcome
from webeval.plugin import policies, progress, redaction, rejudge_selection, run_conditions, run_writer, selection
from webeval.plugin import session_summary, session_versions, stops, suite, task_file_door
from webeval.plugin.keys import RUN_DIR, SESSION_ID
from webeval.plugin.options import Settings, run_dir_path, settings
from webeval.plugin.policies import check_policy, chosen

_PARTS = (options, browsers, redaction, selection, rejudge_selection, gate_options, policies, episode_fixtures, outcome,
          suite, session_summary, allure, progress, session_versions, epoch_option, cost_limit, task_file_door,
          run_writer, run_conditions, stops)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    for part in _PARTS:
        if not pluginmanager.is_registered(part):
            pluginmanager.register(part, f"webeval.{part.__name__.rsplit('.', 1)[-1]}")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "site(name): the website a task runs on")
    if config.option.help or getattr(config.option, "version", False):
        return
    config.stash[RUN_DIR] = RunDir(run_dir_path(config))
    # One id per session, shared by its workers: valid records of one task from two sessions are duplicates.
    worker_input = getattr(config, "workerinput", None)
    config.stash[SESSION_ID] = worker_input["webeval_session"] if worker_input else uuid.uuid4().hex[:12]


def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    settings(config)  # a bad option stops the session here, before any task
    if config.option.policy is not None:
        check_policy(config.option.policy)


def pytest_report_header(config: pytest.Config) -> list[str]:
    run_dir = config.stash.get(RUN_DIR, None)
    return [chosen(config).describe(), f"run directory: {run_dir.path if run_dir else '-'}"]


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """xdist: every worker writes into the controller's run directory."""
    node.workerinput["webeval_run_dir"] = str(node.config.stash[RUN_DIR].path)
    node.workerinput["webeval_session"] = node.config.stash[SESSION_ID]


@pytest.fixture(scope="session")
def webeval_settings(pytestconfig: pytest.Config) -> Settings:
    return settings(pytestconfig)


@pytest.fixture(scope="session")
def webeval_run_dir(pytestconfig: pytest.Config) -> RunDir:
    return pytestconfig.stash[RUN_DIR]
