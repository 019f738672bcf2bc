"""rollouts.jsonl: one line per rollout, appended whole or not at all, read back to resume without duplicates."""

from __future__ import annotations

import warnings
from pathlib import Path

from webeval.outcomes.whole_lines import append_line
from webeval.rollouts.records import INTERRUPTED, RolloutRecord

ROLLOUTS = "rollouts.jsonl"


class RolloutStore:
    def __init__(self, folder: Path, name: str = ROLLOUTS) -> None:
        self.path = Path(folder) / name

    def append(self, record: RolloutRecord) -> None:
        """The record as one whole line, or (OSError: a full disk) nothing at all; a line torn by a killed writer
        before it is cut back first, so every line that is there parses."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        append_line(self.path, (record.model_dump_json() + "\n").encode("utf-8"))

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

