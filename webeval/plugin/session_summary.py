"""At the end of a session, once (on the xdist controller): reconcile the run directory, report it, and decide the
exit status: 12 when a task this session selected did not complete, else the gate's status, else pytest's own."""

from __future__ import annotations

from collections import Counter

import pytest

from webeval.outcomes.gate import RUN_DUPLICATES, SELECTED_INCOMPLETE, duplicates_line, selected_incomplete
from webeval.outcomes.disk import DISK, disk_error
from webeval.outcomes.reconcile import Summary, reconcile, summary_lines, write_summary
from webeval.outcomes.rundir import RunDir
from webeval.plugin import gate_options
from webeval.plugin.keys import RUN_DIR, finished_run_dir
from webeval.plugin.outcome import outcome_of
from webeval.plugin.halting import halted
from webeval.plugin.run_writer import writer_lease
from webeval.plugin.unwritten import unwritten, unwritten_line

SUMMARY = pytest.StashKey[Summary]()
EXIT_LINE = pytest.StashKey[str]()
LAST_LINE = pytest.StashKey[str]()  # said after pytest's own closing line: the session's very last word


class SelectedTasks:
    """The tests this session selected, and the outcomes of the tasks it ran, as their reports reach the controller.
    A selected task that never reported one (-x, --maxfail, a session that stopped) did not complete either."""

    def __init__(self) -> None:
        self.outcomes: Counter[str] = Counter()
        self.selected: set[str] = set()  # node ids; which of them are tasks is known once the population is
        self.reported: set[str] = set()

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.selected.update(item.nodeid for item in session.items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids: list[str]) -> None:
        self.selected.update(ids)  # the controller collects nothing: each worker says what it collected

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        found = outcome_of(report)
        if found is not None and report.nodeid not in self.reported:
            self.reported.add(report.nodeid)
            outcome, kind = found
            self.outcomes[outcome.value if outcome.valid or not kind else f"{outcome.value}[{kind}]"] += 1

    def unfinished(self, task_ids: frozenset[str]) -> dict[str, int]:
        unfinished = {key: count for key, count in self.outcomes.items() if key not in ("passed", "failed")}
        never = sum(1 for nodeid in self.selected - self.reported if _parameter(nodeid) in task_ids)
        return {**unfinished, "never started": never} if never else unfinished

    def count(self, unfinished: dict[str, int]) -> int:
        """How many selected tasks there were, given what `unfinished` found."""
        return sum(self.outcomes.values()) + unfinished.get("never started", 0)


def _parameter(nodeid: str) -> str:
    """The task id a task test's node id ends with: `...::test_task[<id>]`."""
    return nodeid[nodeid.rfind("[") + 1:-1] if nodeid.endswith("]") else ""


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
    config.stash[SUMMARY] = summary = _summarised(config, run_dir)
    stopped = halted(config)
    selected, task_ids = config.stash[SELECTED], frozenset(run_dir.population().ids)
    unfinished = selected.unfinished(task_ids)
    if stopped is not None and unfinished:
        # A stopped session (a signal, a full disk) exits 12 whatever --allow-incomplete says: it did not end.
        remedy = ("free space there, then " if stopped.kind == DISK else "") + \
            f"run them with --resume {run_dir.path}"
        config.stash[EXIT_LINE] = selected_incomplete(unfinished, selected.count(unfinished), stopped.why, remedy)
        session.exitstatus = SELECTED_INCOMPLETE
        return
    if stopped is not None:  # stopped after its last task: nothing was cut short
        session.exitstatus = pytest.ExitCode.TESTS_FAILED if session.testsfailed else pytest.ExitCode.OK
    if session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and config.option.resume and summary.complete:
        # Resuming a complete run leaves nothing to run: that is the run's end, gated as any, not "no tests" (5),
        # which would keep a `resume until it is complete` loop going for ever.
        session.exitstatus = pytest.ExitCode.OK
    if session.exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        return  # interrupted, a usage error, a stopped session: pytest's (or the stop's) status stands
    if summary.duplicates:
        config.stash[LAST_LINE] = duplicates_line(summary.duplicates)
        session.exitstatus = RUN_DUPLICATES
        return
    if unfinished and not config.option.allow_incomplete:
        config.stash[EXIT_LINE] = selected_incomplete(unfinished, selected.count(unfinished))
        session.exitstatus = SELECTED_INCOMPLETE
        return
    gate_options.apply(session, summary, run_dir.path)


def _summarised(config: pytest.Config, run_dir: RunDir) -> Summary:
    """The run reconciled, and its summary files written; on a full disk they are not (the terminal still shows it)."""
    try:
        return write_summary(run_dir)
    except OSError as exc:
        error = disk_error(exc)
        if error is None:
            raise
        unwritten(config, "summary.json and summary.md", error, run_dir.path)
    return reconcile(run_dir.population(), run_dir.records(), run_dir.conventions(), run_dir.conditions())


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    summary = config.stash.get(SUMMARY, None)
    run_dir = config.stash.get(RUN_DIR, None)
    if summary is None or run_dir is None:
        return
    terminalreporter.section("webeval summary")
    for line in summary_lines(summary):
        terminalreporter.write_line(line)
    terminalreporter.write_line(f"  results: {run_dir.path}/summary.md")
    if unwritten_line(config):
        terminalreporter.write_line(f"  {unwritten_line(config)}", red=True)
    lease = writer_lease(config)
    if lease is not None and lease.describe_takeover():
        terminalreporter.write_line(f"  writer: {lease.describe_takeover()}")
    for key in (gate_options.VERDICT_LINE, EXIT_LINE):
        line = config.stash.get(key, None)
        if line:
            terminalreporter.write_line(f"  {line}", red=not line.startswith("gate passed"), bold=True)


def pytest_unconfigure(config: pytest.Config) -> None:
    line = config.stash.get(LAST_LINE, None)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if line and reporter is not None:
        reporter.write_line(line, red=True, bold=True)
