"""Reading a folder of another harness's trajectories: every task folder read, or listed with why it was not."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from webeval.interop import from_agentlab, from_mind2web, from_webvoyager
from webeval.interop.imported import ImportedTrajectory, Skipped, Unreadable
from webeval.tasks import Population


@dataclass(frozen=True)
class Reader:
    folders: Callable[[Path], list[Path]]
    read: Callable[[Path, Path], ImportedTrajectory]  # (task folder, scratch folder for decoded files)
    protocol: str  # the judge protocol this source's trajectories are judged by unless told another


READERS: dict[str, Reader] = {
    "webvoyager": Reader(from_webvoyager.folders, lambda folder, _: from_webvoyager.read_folder(folder),
                         "webvoyager"),
    "online-mind2web": Reader(from_mind2web.folders, from_mind2web.read_folder, "webjudge"),
    "agentlab": Reader(from_agentlab.folders, lambda folder, _: from_agentlab.read_folder(folder), "webeval"),
}


def _why_not(trajectory: ImportedTrajectory, population: Population | None, first: dict[str, Path]) -> str:
    unreadable = [name for name, path in [*trajectory.screenshots, *trajectory.kept_files]
                  if not os.access(path, os.R_OK)]
    if unreadable:
        return f"{unreadable[0]}: cannot read it"
    if population is not None and trajectory.task_id not in population.ids:
        return f"task {trajectory.task_id!r} is not in population {population.name}"
    if not trajectory.goal and population is None:
        return "no task text (the source has none, and no population gives it)"
    if trajectory.task_id in first:
        return f"task {trajectory.task_id!r} again (first read from {first[trajectory.task_id].name})"
    return ""


def read_all(fmt: str, root: Path, scratch: Path,
             population: Population | None = None) -> tuple[list[ImportedTrajectory], list[Skipped]]:
    """The trajectories of every task folder under `root`, in folder order, and the folders skipped with why."""
    reader = READERS[fmt]
    read: list[ImportedTrajectory] = []
    skipped: list[Skipped] = []
    first: dict[str, Path] = {}
    for folder in reader.folders(root):
        if fmt == "agentlab" and from_agentlab.hidden(folder):
            skipped.append(Skipped(folder, "a hidden folder (AgentLab's copy of a relaunched experiment)"))
            continue
        try:
            trajectory = reader.read(folder, scratch)
        except Unreadable as exc:
            skipped.append(Skipped(folder, str(exc)))
            continue
        except OSError as exc:
            skipped.append(Skipped(folder, f"cannot read it ({exc.strerror or exc})"))
            continue
        why = _why_not(trajectory, population, first)
        if why:
            skipped.append(Skipped(folder, why))
            continue
        first[trajectory.task_id] = folder
        read.append(trajectory)
    return read, skipped
