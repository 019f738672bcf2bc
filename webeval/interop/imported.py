"""One trajectory read from another harness's folder: what its source says, kept as it says it, and what it lacks.

An importer reads a folder into an `ImportedTrajectory`, or raises `Unreadable` with the one-line reason; nothing
here touches a run directory (webeval.interop.into_rundir writes one).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from webeval.outcomes.evidence import IMPORTED_ACTION
MAX_SOURCE_BYTES = 64 << 20  # a result file larger than this is not one: it is not read


class Unreadable(Exception):
    """A folder that cannot be imported; the message says why in one line."""


@dataclass(frozen=True)
class SourceAction:
    text: str  # the action as the source wrote it
    thought: str | None = None
    raw: str | None = None  # the model's whole reply, where the source keeps it
    final: bool = False  # the closing answer (ANSWER, TASK_COMPLETE, send_msg_to_user)

    def as_action(self, answer: str | None) -> dict[str, Any]:
        """The action as evidence keeps it: the closing answer is a terminate (judges leave it out of the action
        history, as upstream's leave out the final step); every other one is an `imported` action with its text."""
        kept: dict[str, Any] = {"tool": "terminate", "answer": answer} if self.final else {"tool": IMPORTED_ACTION}
        kept["text"] = self.text
        if self.thought is not None:
            kept["thought"] = self.thought
        return kept


@dataclass
class ImportedTrajectory:
    folder: Path  # the source folder it was read from
    task_id: str
    site: str
    goal: str  # the task text the agent was given; "" when the source has none
    answer: str | None
    screenshots: list[tuple[str, Path]]  # (its name in the attempt folder, the source file), oldest first
    actions: list[SourceAction] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)  # of each screenshot, "" where unknown; [] when the source has none
    start_url: str | None = None
    lacks: list[str] = field(default_factory=list)  # what the source does not say (goal, answer, urls, ...)
    read: set[str] = field(default_factory=set)  # the source files that were read, relative to `folder`
    details: dict[str, Any] = field(default_factory=dict)  # the source's own facts (its reward, seed, agent)
    kept_files: list[tuple[str, Path]] = field(default_factory=list)  # copied along, not judged
    infra: dict[str, str] | None = None  # the source says its episode broke: masked, never judged
    label: bool | None = None  # the source's own verdict (a benchmark's reward): a truth label for the judge

    def note_missing(self) -> None:
        """Name what the source does not say, in `lacks`."""
        checks = {"goal": not self.goal, "answer": self.answer is None, "start_url": not self.start_url,
                  "urls": not any(self.urls), "actions": not self.actions,
                  "thoughts": not any(a.thought for a in self.actions)}
        for name, missing in checks.items():
            if missing and name not in self.lacks:
                self.lacks.append(name)


@dataclass(frozen=True)
class Skipped:
    folder: Path
    reason: str

    def line(self, root: Path) -> str:
        try:
            shown = self.folder.relative_to(root)
        except ValueError:
            shown = self.folder
        return f"skipped {shown}: {self.reason}"


def read_text(path: Path, folder: Path) -> str:
    """A source file's text, or Unreadable naming it relative to its folder."""
    name = path.relative_to(folder) if path.is_relative_to(folder) else path
    try:
        if path.stat().st_size > MAX_SOURCE_BYTES:
            raise Unreadable(f"{name}: larger than {MAX_SOURCE_BYTES >> 20} MB")
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise Unreadable(f"no {name}") from None
    except OSError as exc:
        raise Unreadable(f"{name}: cannot read it ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise Unreadable(f"{name}: not UTF-8 text") from None


def read_json(folder: Path, name: str) -> Any:
    """The JSON document in `folder/name`, or Unreadable naming the file (and where its JSON breaks)."""
    try:
        return json.loads(read_text(folder / name, folder))
    except json.JSONDecodeError as exc:
        raise Unreadable(f"{name}: invalid JSON (line {exc.lineno}, column {exc.colno})") from None


def inside(folder: Path, name: str) -> Path | None:
    """`folder/name` when that is a file of `folder` itself (no `..`, no absolute path, no link elsewhere)."""
    if not name or Path(name).name != name:
        return None
    path = folder / name
    return path if path.is_file() and path.resolve().parent == folder.resolve() else None
