"""The run directory: population.json, an append-only results.jsonl shared by every worker, one folder per attempt."""

from __future__ import annotations

import json
import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from filelock import FileLock

from webeval.outcomes.conditions import (
    CONDITIONS, Conditions, ConditionsDiffer, Differences, differences, document, read_document, refusal,
)
from webeval.outcomes.record import AttemptRecord
from webeval.outcomes.whole_lines import append_line, replace_file
from webeval.tasks import Population

RESULTS = "results.jsonl"
POPULATION = "population.json"
CONVENTIONS = "conventions.json"


class PopulationMismatch(ValueError):
    """A run directory is scored against one population only."""


class RunDir:
    """`reruns`: the tasks this session runs again on purpose after a failure (`--resume DIR --lf`); their records
    say so (`extra.rerun`), and reconciliation takes them over the failure they replace."""

    def __init__(self, path: Path, reruns: frozenset[str] = frozenset()) -> None:
        self.path = Path(path)
        self.reruns = reruns
        self._lock = FileLock(str(self.path / ".results.lock"))

    def rerunning(self, task_ids: frozenset[str]) -> "RunDir":
        """The same directory, whose records of `task_ids` are marked as re-runs of a failure."""
        return RunDir(self.path, self.reruns | task_ids)

    @property
    def run_id(self) -> str:
        return self.path.name

    @staticmethod
    def default_path(root: Path = Path("reports/runs")) -> Path:
        return root / datetime.now().strftime("%Y%m%d-%H%M%S")

    def create(self, population: Population, documents: dict[str, Any] | None = None) -> "RunDir":
        """The directory with its population.json and a suite's own documents (JSON files), each written once."""
        self.path.mkdir(parents=True, exist_ok=True)
        self._write_once(POPULATION, population.model_dump_json(indent=2))
        for name, document in (documents or {}).items():
            self._write_once(name, json.dumps(document, indent=2, ensure_ascii=False))
        return self.check(population)

    def _write_once(self, name: str, text: str) -> None:
        target = self.path / name
        if not target.exists():
            # Every worker may get here at once: write aside, then rename, so no reader sees half a file.
            replace_file(target, text)

    def check(self, population: Population) -> "RunDir":
        """PopulationMismatch when the directory already holds another population; nothing is written."""
        if (self.path / POPULATION).exists():
            existing = self.population()
            if (existing.sha256, existing.ids) != (population.sha256, population.ids):
                raise PopulationMismatch(
                    f"{self.path} holds population {existing.name} ({existing.sha256[:12]}, {existing.size} tasks), "
                    f"not {population.name} ({population.sha256[:12]}, {population.size} tasks): "
                    "use a new run directory")
        return self

    def population(self) -> Population:
        return Population.model_validate_json((self.path / POPULATION).read_text())

    def attempt_dir(self, task_id: str) -> tuple[int, Path]:
        """A new folder for the next attempt at a task; mkdir is atomic, so workers never share one."""
        base = self.path / "tasks" / task_id
        base.mkdir(parents=True, exist_ok=True)
        attempt = 1
        while True:
            folder = base / f"attempt-{attempt}"
            try:
                folder.mkdir()
                return attempt, folder
            except FileExistsError:
                attempt += 1

    def append(self, record: AttemptRecord) -> None:
        """The record as one whole line of results.jsonl, or (OSError: a full disk) nothing at all."""
        if record.task_id in self.reruns:
            record = record.model_copy(update={"extra": {**record.extra, "rerun": True}})
        if not record.finished_at:
            record = record.model_copy(update={"finished_at": datetime.now(timezone.utc).isoformat()})
        line = (record.model_dump_json() + "\n").encode("utf-8")
        with self._lock:
            append_line(self.path / RESULTS, line)

    def records(self) -> list[AttemptRecord]:
        return read_records(self.path / RESULTS)

    def conventions(self) -> dict[str, str]:
        """How this run counts what could not be judged (`judge_unparseable`: mask | fail), as its sessions said."""
        try:
            return json.loads((self.path / CONVENTIONS).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}

    def set_conventions(self, conventions: dict[str, str]) -> None:
        merged = {**self.conventions(), **conventions}
        if merged != self.conventions():
            replace_file(self.path / CONVENTIONS, json.dumps(merged, indent=2))

    def _conditions_file(self) -> dict[str, Any]:
        try:
            data = json.loads((self.path / CONDITIONS).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def conditions(self) -> tuple[Conditions, dict[str, Differences]]:
        """The conditions of the run's first session, and what each later session (allowed to mix) had otherwise."""
        return read_document(self._conditions_file())

    def record_conditions(self, session: str, conditions: Conditions, allow_mixed: bool = False) -> Differences:
        """The first session's conditions are written once; a later session's are compared with them. A difference
        is ConditionsDiffer (one line), unless mixing is allowed: then it is kept under the session's id. Every
        worker of a session may call this: the result is the same."""
        with self._lock:
            data = self._conditions_file()
            first, mixed = read_document(data)
            if not first:
                replace_file(self.path / CONDITIONS, _json(document(conditions, session, {})))
                return {}
            if data.get("first_session") == session:
                return {}
            found = differences(first, conditions)
            if found and not allow_mixed:
                raise ConditionsDiffer(refusal(str(self.path), found))
            if found and mixed.get(session) != found:
                replace_file(self.path / CONDITIONS, _json(document(first, data.get("first_session", ""),
                                                                    {**mixed, session: found})))
            return found


def _json(value: dict[str, Any]) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def read_records(path: Path) -> list[AttemptRecord]:
    """Every intact record; a torn or corrupt line is skipped with a warning that names it."""
    if not path.exists():
        return []
    records = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                records.append(AttemptRecord.model_validate_json(line))
            except ValueError:  # pydantic's ValidationError, torn JSON included
                warnings.warn(f"{path}:{number}: ignoring a torn or corrupt record", stacklevel=2)
    return records
