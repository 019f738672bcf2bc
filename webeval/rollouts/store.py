"""rollouts.jsonl: one line per rollout, appended whole or not at all, read back to resume without duplicates."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

from webeval.rollouts.records import INTERRUPTED, RolloutRecord

ROLLOUTS = "rollouts.jsonl"


class RolloutStore:
    def __init__(self, folder: Path, name: str = ROLLOUTS) -> None:
        self.path = Path(folder) / name

    def append(self, record: RolloutRecord) -> None:
        """The record as one line; a line torn by a killed writer before it is cut back first, so every line that
        is there parses."""
        line = (record.model_dump_json() + "\n").encode("utf-8")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "ab") as out:
            size = out.tell()
            if size and _last_byte(self.path) != b"\n":
                out.truncate(_last_line_end(self.path))
            try:
                out.write(line)
                out.flush()
                os.fsync(out.fileno())
            except OSError:
                out.truncate(size)  # a full disk: the file ends on its last whole line again
                raise

    def records(self) -> list[RolloutRecord]:
        """Every whole record; a torn or corrupt line is skipped with a warning that names it."""
        if not self.path.exists():
            return []
        found = []
        with open(self.path, encoding="utf-8", errors="replace") as lines:
            for number, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                try:
                    found.append(RolloutRecord.model_validate_json(line))
                except ValueError:
                    warnings.warn(f"{self.path}:{number}: ignoring a torn or corrupt rollout record", stacklevel=2)
        return found

    def final(self) -> dict[str, RolloutRecord]:
        """The last record of each rollout id: a rollout interrupted in flight and run again has two, the later
        one counts."""
        return {record.rollout_id: record for record in self.records()}

    def done(self) -> set[str]:
        """The rollout ids a resumed collection does not run again: every one with a record, but those whose last
        record says the collection was interrupted while they ran (they never had their whole episode)."""
        return {rollout_id for rollout_id, record in self.final().items() if record.failure_kind != INTERRUPTED}


def _last_byte(path: Path) -> bytes:
    with open(path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1)


def _last_line_end(path: Path) -> int:
    """The offset just past the file's last newline (0 if it has none)."""
    with open(path, "rb") as f:
        end = f.seek(0, os.SEEK_END)
        position = end
        while position > 0:
            step = min(1 << 16, position)
            f.seek(position - step)
            chunk = f.read(step)
            found = chunk.rfind(b"\n")
            if found >= 0:
                return position - step + found + 1
            position -= step
    return 0
