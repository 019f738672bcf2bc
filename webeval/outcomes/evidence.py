"""The evidence of one attempt: what a judge reads, written before the browser context closes.

A judge reads only this, so it can run again later with no browser. The file sits in the attempt folder as
`evidence.json`; the screenshots it names are files of that folder, and nothing outside it is ever read.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

EVIDENCE = "evidence.json"
IMPORTED_ACTION = "imported"  # the tool of an action in its source's own words (`webeval import`): its `text` is it


class EvidenceError(ValueError):
    """An attempt folder whose evidence cannot be read."""


class Evidence(BaseModel):
    model_config = ConfigDict(extra="allow")  # a benchmark may keep more (a page's own reward, say)

    task_id: str
    goal: str
    answer: str | None = None
    status: str | None = None  # what terminate said: success | failure
    failure_class: str | None = None  # set when the agent's run alone decided the failure
    reason: str = ""
    infra: dict[str, str] | None = None
    final_url: str = ""
    urls: list[str] = Field(default_factory=list)  # of each observation, as titles are
    titles: list[str] = Field(default_factory=list)
    actions: list[dict[str, Any]] = Field(default_factory=list)
    screenshots: list[str] = Field(default_factory=list)
    state: dict[str, Any] | None = None  # an offline site's server-side state after the episode
    duration_s: float = 0.0
    folder: Path = Field(default=Path("."), exclude=True)

    @classmethod
    def load(cls, folder: Path) -> "Evidence":
        path = Path(folder) / EVIDENCE
        try:
            evidence = cls.model_validate_json(path.read_bytes())
        except OSError as exc:
            raise EvidenceError(f"{path}: cannot read the evidence ({exc.strerror})") from None
        except ValidationError as exc:
            raise EvidenceError(f"{path}: not an evidence file ({exc.errors()[0]['msg']})") from None
        return evidence.model_copy(update={"folder": Path(folder)})

    def write(self) -> None:
        (self.folder / EVIDENCE).write_text(self.model_dump_json(indent=2), encoding="utf-8")

    def screenshot_paths(self, last: int | None = None) -> list[Path]:
        """The screenshots' files, oldest first (the last `last` of them); a name that would leave the attempt
        folder (`../x`, an absolute path, a link to elsewhere) is ignored with a warning, never followed."""
        folder = self.folder.resolve()
        paths = []
        for name in self.screenshots:
            path = (self.folder / name)
            inside = Path(name).name == name and path.resolve().parent == folder
            if not inside:
                warnings.warn(f"{self.folder / EVIDENCE}: ignoring screenshot {name!r}: it is not a file of the "
                              "attempt folder", stacklevel=2)
            elif path.is_file():
                paths.append(path)
        if last is not None:
            return paths[-last:] if last > 0 else []
        return paths
