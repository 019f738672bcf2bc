"""At the end of a session, once (on the xdist controller): reconcile the run directory, report it, and decide the
exit status: 12 when a task this session selected did not complete, else the gate's status, else pytest's own."""

from __future__ import annotations

from collections import Counter

import pytest

from webeval.outcomes.gate import SELECTED_INCOMPLETE, selected_incomplete
from webeval.outcomes.reconcile import Summary, summary_lines, write_summary
from webeval.plugin import gate
from webeval.plugin.keys import RUN_DIR, finished_run_dir
from webeval.plugin.outcome import outcome_of

SUMMARY = pytest.StashKey[Summary]()
EXIT_LINE = pytest.StashKey[str]()


class SelectedTasks:
    """The outcomes of the tasks this session ran, as their reports reach the controller."""

    def __init__(self) -> None:
        self.outcomes: Counter[str] = Counter()

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        found = outcome_of(report)
        if found is not None:
            outcome, kind = found
            self.outcomes[outcome.value if outcome.valid or not kind else f"{outcome.value}[{kind}]"] += 1

    def unfinished(self) -> dict[str, int]:
        return {key: count for key, count in self.outcomes.items() if key not in ("passed", "failed")}


SELECTED = pytest.StashKey[SelectedTasks]()


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):
        config.stash[SELECTED] = selected = SelectedTasks()
        config.pluginmanager.register(selected, "webeval-selected-tasks")


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    run_dir = finished_run_dir(config)
    if run_dir is None:
        return
    run_dir.set_conventions({"judge_unparseable": config.option.judge_unparseable})
    config.stash[SUMMARY] = summary = write_summary(run_dir)
    if session.exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        return  # interrupted, a usage error, a stopped session: pytest's (or the stop's) status stands
    selected = config.stash[SELECTED]
    if selected.unfinished() and not config.option.allow_incomplete:
        config.stash[EXIT_LINE] = selected_incomplete(selected.unfinished(), sum(selected.outcomes.values()))
        session.exitstatus = SELECTED_INCOMPLETE
        return
    gate.apply(session, summary)


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    summary = config.stash.get(SUMMARY, None)
    run_dir = config.stash.get(RUN_DIR, None)
    if summary is None or run_dir is None:
        return
    terminalreporter.section("webeval summary")
    for line in summary_lines(summary):
        terminalreporter.write_line(line)
    terminalreporter.write_line(f"  results: {run_dir.path}/summary.md")
    for key in (gate.VERDICT_LINE, EXIT_LINE):
        line = config.stash.get(key, None)
        if line:
            terminalreporter.write_line(f"  {line}", red=not line.startswith("gate passed"), bold=True)
