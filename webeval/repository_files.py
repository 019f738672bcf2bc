"""A file pinned at a commit of a public GitHub repository and known by its sha256: what `webeval prepare` fetches
(a benchmark's task files, a judge protocol's prompt files) and what their readers check before they use it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RepositoryFile:
    repo: str  # owner/name on GitHub
    commit: str
    path: str  # inside the repository
    sha256: str

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    @property
    def url(self) -> str:
        return f"https://raw.githubusercontent.com/{self.repo}/{self.commit}/{self.path}"
