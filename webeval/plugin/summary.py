"""At the end of a session, once (on the xdist controller): reconcile the run directory and report it."""

from __future__ import annotations

import pytest

from webeval.outcomes.reconcile import Summary, summary_lines, write_summary
from webeval.outcomes.rundir import POPULATION
from webeval.plugin import gate
from webeval.plugin.keys import RUN_DIR

SUMMARY = pytest.StashKey[Summary]()


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if hasattr(config, "workerinput") or config.option.collectonly:
        return
    run_dir = config.stash.get(RUN_DIR, None)
    if run_dir is not None and (run_dir.path / POPULATION).exists():
        config.stash[SUMMARY] = summary = write_summary(run_dir)
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
    line = config.stash.get(gate.VERDICT_LINE, None)
    if line:
        terminalreporter.write_line(f"  {line}", red=not line.startswith("gate passed"), bold=True)
