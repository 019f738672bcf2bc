"""What the Allure writers put on disk: attachments linked to the attempt's own files, and a full disk met quietly.

A step's screenshot is attached as a hard link to the trajectory's file (webeval.report.links): the results folder
stores no second copy. Allure's writer (allure-pytest's, or ours) meeting a full disk would end the session in an
INTERNALERROR traceback; the guard below stops the session instead (webeval.plugin.stops: no task starts after,
exit 12 with the one line), and the results that could not be written are completed from the records by the next
`--resume` or `webeval report`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from webeval.outcomes.disk import DISK, disk_error, full_disk
from webeval.plugin.keys import RUN_DIR
from webeval.plugin.halting import halt


def _guard_class():
    """DiskGuard is made on first use: allure_commons is imported only by a session that writes Allure results."""
    from allure_commons import hookimpl

    class DiskGuard:
        """Wraps every Allure writer's hooks: an OSError of a full disk is taken, its half-written file removed."""

        def __init__(self, config: pytest.Config, session: pytest.Session) -> None:
            self.config, self.session = config, session

        def _kept(self, file_name: str | None):
            try:
                return (yield)
            except OSError as exc:
                error = disk_error(exc)
                if error is None:
                    raise
                folder = getattr(self.config.option, "allure_report_dir", None)
                if folder and file_name:
                    (Path(folder) / f"{file_name}.tmp").unlink(missing_ok=True)
                run_dir = self.config.stash.get(RUN_DIR, None)
                if run_dir is not None:
                    halt(self.config, DISK, full_disk(error, run_dir.path).line, self.session)
                return None

        @hookimpl(wrapper=True)
        def report_result(self, result):
            return (yield from self._kept(None))

        @hookimpl(wrapper=True)
        def report_container(self, container):
            return (yield from self._kept(None))

        @hookimpl(wrapper=True)
        def report_attached_file(self, source, file_name):
            return (yield from self._kept(file_name))

        @hookimpl(wrapper=True)
        def report_attached_data(self, body, file_name):
            return (yield from self._kept(file_name))

    return DiskGuard


def guard(config: pytest.Config, session: pytest.Session) -> None:
    """Once per process, around whichever Allure writer the session has."""
    from allure_commons import plugin_manager

    if not any(type(plugin).__name__ == "DiskGuard" for plugin in plugin_manager.get_plugins()):
        guarded = _guard_class()(config, session)
        plugin_manager.register(guarded)
        config.add_cleanup(lambda: plugin_manager.unregister(guarded))
