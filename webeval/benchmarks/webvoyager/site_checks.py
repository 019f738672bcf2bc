"""Each start URL checked once: a site that does not answer makes its tasks not run, and starts no browser."""

from __future__ import annotations

import threading

from webeval.agent.live import LiveSites
from webeval.runtime.sites import unreachable
from webeval.tasks import Task


class SiteChecks:
    """Each start URL is checked once per process; the answer is kept."""

    def __init__(self, environment: LiveSites, timeout_s: float) -> None:
        self.environment = environment
        self.timeout_s = timeout_s
        self._known: dict[tuple[str, str], str | None] = {}
        self._lock = threading.Lock()

    def problem(self, task: Task) -> str | None:
        url = self.environment.start_url(task)
        proxy = self.environment.proxy(task.site)
        key = (url, proxy.server if proxy else "")
        with self._lock:
            if key not in self._known:
                self._known[key] = unreachable(url, self.timeout_s, proxy)
            return self._known[key]
