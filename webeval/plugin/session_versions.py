"""Once per session, on the controller: what it ran with goes into the run directory, before the summary is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from webeval.outcomes.disk import disk_error
from webeval.outcomes.rundir import RunDir
from webeval.outcomes.sessions import append_session
from webeval.plugin.keys import SESSION_ID, finished_run_dir
from webeval.plugin.policies import chosen
from webeval.plugin.run_conditions import conditions_of
from webeval.plugin.run_writer import writer_lease
from webeval.plugin.unwritten import unwritten
from webeval.report.versions import versions


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    run_dir = finished_run_dir(session.config)
    if run_dir is not None:
        _append_this_session(session.config, run_dir)


def _append_this_session(config: pytest.Config, run_dir: RunDir) -> None:
    """This session's line of sessions.jsonl: the versions, run conditions and recipe it ran with, and whether it
    took the run directory over; a full disk keeps it unwritten, said at the session's end."""
    from webeval.runtime.browser import find_chromium

    chromium = find_chromium(config.option.browser_path)
    profile = chosen(config).profile
    lock = profile.recipe.lock if profile is not None and profile.recipe is not None else None
    lease = writer_lease(config)
    try:
        append_session(run_dir.path, config.stash.get(SESSION_ID, ""), versions(chromium, Path(config.rootpath)),
                       conditions=conditions_of(config, run_dir),
                       recipe_lock=lock.pinned() if lock is not None else None,
                       took_over=lease.taken_over if lease is not None else None)
    except OSError as exc:
        if disk_error(exc) is None:
            raise
        unwritten(config, "this session's line of sessions.jsonl", disk_error(exc), run_dir.path)
