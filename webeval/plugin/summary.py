"""At the end of a session, once (on the xdist controller): reconcile the run directory and report it."""

from __future__ import annotations

import json

import pytest

from webeval.outcomes.reconcile import Summary, reconcile, summary_json, summary_lines, summary_markdown
from webeval.outcomes.rundir import POPULATION, RunDir
from webeval.plugin.record import RUN_DIR

SUMMARY = pytest.StashKey[Summary]()


def write_summary(run_dir: RunDir) -> Summary | None:
    if not (run_dir.path / POPULATION).exists():
        return None
    summary = reconcile(run_dir.population(), run_dir.records())
    (run_dir.path / "summary.json").write_text(json.dumps(summary_json(summary), indent=2), encoding="utf-8")
    (run_dir.path / "summary.md").write_text(summary_markdown(summary), encoding="utf-8")
    return summary


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if hasattr(config, "workerinput") or config.option.collectonly:
        return
    run_dir = config.stash.get(RUN_DIR, None)
    if run_dir is not None:
        summary = write_summary(run_dir)
        if summary is not None:
            config.stash[SUMMARY] = summary


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    summary = config.stash.get(SUMMARY, None)
    run_dir = config.stash.get(RUN_DIR, None)
    if summary is None or run_dir is None:
        return
    terminalreporter.section("webeval summary")
    for line in summary_lines(summary):
        terminalreporter.write_line(line)
    terminalreporter.write_line(f"  results: {run_dir.path}/summary.md")
