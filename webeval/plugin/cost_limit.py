"""`--cost-limit USD`: once the session has spent that much, no further task starts.

The tasks that were not started are missing (no record at all): the run is incomplete, never failed, and the
session exits 12 unless `--allow-incomplete`, as for any selected task that did not complete; `--resume DIR` runs
them later. Tasks already running when the limit is reached finish.

What each task cost reaches the process that counts it as results do: in the report's user properties (xdist ships
them from the workers to the controller). The controller adds them up; when the sum reaches the limit it leaves a
mark in the run directory, named for the session, which every worker looks for before it starts a task.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from webeval.flags import OptionError, values_of
from webeval.outcomes.cost import usd
from webeval.plugin.allure import forget
from webeval.plugin.keys import RUN_DIR, SESSION_ID, TASK, dry_run
from webeval.plugin.outcome import COST_PROPERTY
from webeval.plugin.policies import chosen
from webeval.run_settings import RUN_FLAGS, cost_limit

REACHED = pytest.StashKey[float]()  # what had been spent when the limit was reached


def mark(config: pytest.Config) -> Path:
    """The mark the controller leaves when the limit is reached; one per session, so a resumed run starts afresh."""
    return config.stash[RUN_DIR].path / f".cost-limit-reached.{config.stash.get(SESSION_ID, '')}"


class Spent:
    """On the controller (or the one process): what the session's tasks cost, as their reports arrive."""

    def __init__(self, config: pytest.Config, limit: float) -> None:
        self.config = config
        self.limit = limit
        self.usd = 0.0

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        cost = dict(getattr(report, "user_properties", ())).get(COST_PROPERTY)
        if not cost:
            return
        self.usd += float(cost)
        if self.usd >= self.limit and REACHED not in self.config.stash:
            self.config.stash[REACHED] = self.usd
            mark(self.config).write_text(f"{self.usd}\n", encoding="utf-8")

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self) -> None:
        mark(self.config).unlink(missing_ok=True)

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if REACHED in self.config.stash:
            # Tasks already running when the limit was reached finished: the session spent what it says here.
            terminalreporter.write_line(
                f"  webeval: cost limit {usd(self.limit)} reached ({usd(self.usd)} spent): no further task was "
                "started; the tasks not started are missing (run them with --resume DIR)", yellow=True, bold=True)
        elif self.usd:
            terminalreporter.write_line(f"  cost: {usd(self.usd)} spent of the {usd(self.limit)} limit")


def pytest_configure(config: pytest.Config) -> None:
    try:
        limit = cost_limit(values_of(config.option, RUN_FLAGS))
    except OptionError as exc:
        raise pytest.UsageError(str(exc)) from None
    if limit is None:
        return
    if not hasattr(config, "workerinput") and not dry_run(config):
        config.pluginmanager.register(Spent(config, limit), "webeval-cost-limit")


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    if config.option.cost_limit is not None and config.option.policy == "openai" and chosen(config).prices is None:
        raise pytest.UsageError("--cost-limit needs the policy's price table: add [prices] (input, cached_input, "
                                "output: US dollars per million tokens) to its profile")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    """A task is not started once the limit is reached: no report, no record; it is missing."""
    config = item.config
    if config.option.cost_limit is None or TASK not in item.stash or not mark(config).exists():
        return None
    forget(item)
    return True
