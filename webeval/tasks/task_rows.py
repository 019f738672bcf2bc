"""How one line of a task file becomes a Task, with the file and line named when it cannot.

A RowReader has a name (it is part of an index's cache key: two readers of one file keep two indexes) and a
function from the line's JSON object to a Task. TASK_ROWS reads the core's own Task rows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from pydantic import ValidationError

from webeval.tasks.model import Task
from webeval.tasks.population import TaskFileError, describe_error


def json_object(path: Path, line: int, raw: bytes) -> dict[str, Any]:
    try:
        row = json.loads(raw.decode("utf-8"))  # decoded first: json.loads would guess UTF-16 from the bytes
    except UnicodeDecodeError as exc:
        raise TaskFileError(f"{path}:{line}: not UTF-8 text (byte {exc.object[exc.start]:#04x})") from None
    except json.JSONDecodeError as exc:
        raise TaskFileError(f"{path}:{line}: invalid JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(row, dict):
        raise TaskFileError(f"{path}:{line}: a task must be a JSON object")
    return row


@dataclass(frozen=True)
class RowReader:
    name: str
    to_task: Callable[[dict[str, Any]], Task] | None = None  # None: the row is a Task as it is

    def parse(self, path: Path, line: int, raw: bytes) -> Task:
        """The line's task, or a TaskFileError naming the file and line."""
        if self.to_task is None:
            try:
                return Task.model_validate_json(raw)  # the common case, without building the dict in Python
            except ValidationError:
                pass  # said below, with the same words as any other reader's
        row = json_object(path, line, raw)
        try:
            return Task.model_validate(row) if self.to_task is None else self.to_task(row)
        except ValidationError as exc:
            raise TaskFileError(f"{path}:{line}: {describe_error(exc)}") from None
        except (KeyError, TypeError, ValueError) as exc:
            raise TaskFileError(f"{path}:{line}: {exc}") from None

    def row(self, path: Path, line: int, raw: bytes) -> dict[str, Any]:
        return json_object(path, line, raw)


TASK_ROWS = RowReader("task")
