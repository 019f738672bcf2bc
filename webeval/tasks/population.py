"""Reading task files, and the population a score is over (its ids are the fixed denominator)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from pydantic import BaseModel, ConfigDict, ValidationError

from webeval.tasks.model import Task


MAX_TASK_FILE_BYTES = 32 << 20  # the largest population we know of is under 1 MB


class TaskFileError(ValueError):
    """A task file that cannot be used; the message names the file and line."""


class Population(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    ids: tuple[str, ...]
    sha256: str
    sources: tuple[str, ...] = ()
    sites: dict[str, str] = {}  # task id -> its site, so that nothing has to read a site out of an id

    @property
    def size(self) -> int:
        return len(self.ids)

    def site(self, task_id: str) -> str:
        return self.sites.get(task_id, "")


def sha256_of(paths: Iterable[Path]) -> str:
    digest = hashlib.sha256()
    for path in paths:
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()


def describe_error(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    message = first["msg"].removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


def read_task_text(path: Path) -> str:
    """A task file's text, or a TaskFileError: unreadable, too large, or not UTF-8 (naming the line)."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_TASK_FILE_BYTES:
            raise TaskFileError(f"{path}: {size / (1 << 20):.0f} MB is more than a task file may be "
                                f"({MAX_TASK_FILE_BYTES >> 20} MB): is it the task file? Split a larger population")
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TaskFileError(f"{path}: cannot read task file: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        line = exc.object[:exc.start].count(b"\n") + 1
        raise TaskFileError(f"{path}:{line}: not UTF-8 text (byte {exc.object[exc.start]:#04x})") from None


def jsonl_rows(path: Path, text: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of every non-blank line, as they are read."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TaskFileError(f"{path}:{number}: invalid JSON: {exc.msg} (column {exc.colno})") from None
        if not isinstance(row, dict):
            raise TaskFileError(f"{path}:{number}: a task must be a JSON object")
        yield number, row


def tasks_from_rows(path: Path, rows: Iterable[tuple[int, dict[str, Any]]],
                    to_task: Callable[[dict[str, Any]], dict[str, Any]] = lambda row: row) -> list[Task]:
    """Every row as a Task, or a TaskFileError naming the file and line of the first bad one."""
    tasks: list[Task] = []
    seen: dict[str, int] = {}
    for number, row in rows:
        try:
            task = Task.model_validate(to_task(row))
        except ValidationError as exc:
            raise TaskFileError(f"{path}:{number}: {describe_error(exc)}") from None
        except (KeyError, TypeError, ValueError) as exc:
            raise TaskFileError(f"{path}:{number}: {exc}") from None
        if task.id in seen:
            raise TaskFileError(f"{path}:{number}: duplicate task id {task.id!r} (first on line {seen[task.id]})")
        seen[task.id] = number
        tasks.append(task)
    if not tasks:
        raise TaskFileError(f"{path}: no tasks in file")
    return tasks


def read_jsonl(
    path: Path, to_task: Callable[[dict[str, Any]], dict[str, Any]] = lambda row: row
) -> list[Task]:
    """Every task of a JSONL file, or a TaskFileError naming the file and line of the first bad row."""
    path = Path(path)
    return tasks_from_rows(path, jsonl_rows(path, read_task_text(path)), to_task)


def population_of(name: str, tasks: list[Task], sources: list[Path]) -> Population:
    return Population(
        name=name,
        ids=tuple(task.id for task in tasks),
        sha256=sha256_of(sources),
        sources=tuple(str(p) for p in sources),
        sites={task.id: task.site for task in tasks},
    )
