"""The offline sites as an environment: a fresh state namespace per task, URLs moved to the running server."""

from __future__ import annotations

from webeval.agent.environment import Environment, Prepared
from webeval.benchmarks.local.site_server import NAMESPACE_COOKIE, PLACEHOLDER_ORIGIN, SiteServer
from webeval.tasks import Task


class OfflineSites(Environment):
    def __init__(self, server: SiteServer, placeholder: str = PLACEHOLDER_ORIGIN) -> None:
        self.server = server
        self.placeholder = placeholder

    def rewrite(self, url: str) -> str:
        return self.server.origin + url[len(self.placeholder):] if url.startswith(self.placeholder) else url

    def prepare(self, task: Task) -> Prepared:
        namespace = self.server.new_namespace()
        return Prepared(
            task=task.with_origin(self.placeholder, self.server.origin),
            cookies=[{"name": NAMESPACE_COOKIE, "value": namespace, "url": self.server.origin}],
            read_state=lambda: self.server.state(namespace),
            rewrite_url=self.rewrite,
        )
