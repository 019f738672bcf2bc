"""A task file of one's own, without Python: one task per JSON line (or a YAML list), each with one verifier.

    {"id": "save-note", "site": "notes", "goal": "Save a note that says hello.", "start_url": "http://127.0.0.1:8000/",
     "page": {"selector": "#status", "exact": "Saved"}}

Verifiers: `answer` (the agent's final answer), `url` (the URL the episode ended on) or `page` (the text of the first
element a CSS `selector` matches, read before the browser context closes) each with one of `exact`, `contains` or
`regex`; or `rubric`, criteria for a model judge. Optional: `max_steps`, `tags`, and an oracle `solution`
(webeval.tasks.OracleStep). docs/suites.md has a worked example.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any, Iterator, Literal

import yaml
from pydantic import Field, model_validator

from webeval.tasks import OracleStep, Task, TaskFileError
from webeval.tasks.model import Frozen
from webeval.tasks.population import jsonl_rows, read_task_text, tasks_from_rows

VERIFIERS = ("answer", "url", "page", "rubric")
YAML_SUFFIXES = (".yaml", ".yml")
TASK_FILE_SUFFIXES = (".jsonl", ".jsonl.gz", *YAML_SUFFIXES)
FIRST_LINE_BYTES = 1 << 20  # a first task longer than this is not looked for


def collapse(text: str) -> str:
    return " ".join(text.split())


class Match(Frozen):
    """Exactly one of: `exact` (equal, whitespace collapsed), `contains` (a substring) or `regex` (found anywhere:
    anchor it with ^ and $ to match the whole); all case-sensitive."""

    exact: str | None = None
    contains: str | None = None
    regex: str | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> "Match":
        given = [name for name in ("exact", "contains", "regex") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of 'exact', 'contains' or 'regex'")
        if self.regex is not None:
            try:
                re.compile(self.regex)
            except re.error as exc:
                raise ValueError(f"regex {self.regex!r} does not compile: {exc}") from None
        return self

    @property
    def kind(self) -> Literal["exact", "contains", "regex"]:
        return "exact" if self.exact is not None else "contains" if self.contains is not None else "regex"

    @property
    def expected(self) -> str:
        return getattr(self, self.kind)

    def holds(self, text: str) -> bool:
        if self.exact is not None:
            return collapse(text) == collapse(self.exact)
        if self.contains is not None:
            return self.contains in text
        return re.search(self.regex, text) is not None

    def describe(self) -> str:
        return {"exact": "equal to", "contains": "containing", "regex": "matching"}[self.kind] + f" {self.expected!r}"


class PageProbe(Match):
    selector: str = Field(min_length=1)


class TaskEntry(Frozen):
    """One line of a task file."""

    id: str
    site: str = Field(min_length=1)
    goal: str = Field(min_length=1)
    start_url: str
    answer: Match | None = None
    url: Match | None = None
    page: PageProbe | None = None
    # criteria (a list, or one text), or WebGym's fact groups: a list of groups, each a list of criteria
    rubric: list[str] | list[list[str]] | None = Field(default=None, min_length=1)
    domain: str | None = Field(default=None, min_length=1)
    difficulty: int | None = Field(default=None, ge=1)
    parent: str | None = None
    max_steps: int | None = Field(default=None, ge=1)
    tags: list[str] = Field(default_factory=list)
    solution: list[OracleStep] | None = None

    @model_validator(mode="before")
    @classmethod
    def _rubric_text(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("rubric"), str):
            return {**data, "rubric": [data["rubric"]]}
        return data

    @property
    def fact_groups(self) -> list[list[str]] | None:
        """The rubric as fact groups (a plain list of criteria: one group each)."""
        if self.rubric is None:
            return None
        return [group if isinstance(group, list) else [group] for group in self.rubric]

    @property
    def criteria(self) -> list[str]:
        return [criterion for group in self.fact_groups or [] for criterion in group]

    @model_validator(mode="after")
    def _one_verifier(self) -> "TaskEntry":
        given = [name for name in VERIFIERS if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError(f"a task needs exactly one verifier of {', '.join(VERIFIERS)} "
                             f"({'none' if not given else ' and '.join(given)} given)")
        if self.rubric is not None and (not all(self.fact_groups) or not all(c.strip() for c in self.criteria)):
            raise ValueError("a rubric criterion is empty")
        return self

    @property
    def verifier(self) -> str:
        return next(name for name in VERIFIERS if getattr(self, name) is not None)

    def task(self) -> dict[str, Any]:
        """The core's Task (its rubric as one group per criterion); the verifier stays with the entry."""
        fields = self.model_dump(include={"id", "site", "goal", "start_url", "domain", "difficulty", "parent",
                                          "max_steps", "tags", "solution"}, exclude_none=True)
        if self.rubric is not None:
            fields["rubric"] = self.fact_groups
        return fields


def yaml_rows(path: Path, text: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, mapping) of every item of a YAML list of tasks."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise TaskFileError(f"{path}:{mark.line + 1 if mark else 1}: invalid YAML: {exc.problem}") from None
    except yaml.YAMLError as exc:
        raise TaskFileError(f"{path}: invalid YAML: {exc}") from None
    if root is None:
        return
    if not isinstance(root, yaml.SequenceNode):
        raise TaskFileError(f"{path}:{root.start_mark.line + 1}: a YAML task file is a list of tasks ('- id: ...')")
    loader = yaml.SafeLoader("")
    for node in root.value:
        number = node.start_mark.line + 1
        if not isinstance(node, yaml.MappingNode):
            raise TaskFileError(f"{path}:{number}: a task must be a mapping (id: ..., goal: ...)")
        try:
            yield number, loader.construct_document(node)
        except yaml.YAMLError as exc:
            raise TaskFileError(f"{path}:{number}: invalid YAML: {exc}") from None


def read_task_file(path: Path) -> tuple[list[Task], dict[str, TaskEntry]]:
    """The tasks of a task file (JSONL; YAML for a .yaml or .yml name) and each one's entry, or a TaskFileError
    naming the file and line."""
    path = Path(path)
    entries: dict[str, TaskEntry] = {}

    def to_task(row: dict[str, Any]) -> dict[str, Any]:
        entry = TaskEntry.model_validate(row)
        entries.setdefault(entry.id, entry)  # a duplicate id is refused when its task is read, naming both lines
        return entry.task()

    read = yaml_rows if path.suffix.lower() in YAML_SUFFIXES else jsonl_rows
    return tasks_from_rows(path, read(path, read_task_text(path)), to_task), entries


def _first_row(path: Path) -> Any:
    if path.name.lower().endswith(YAML_SUFFIXES):
        rows = yaml.safe_load(path.read_text(encoding="utf-8"))
        return rows[0] if isinstance(rows, list) and rows else None
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    with opener(path, "rb") as lines:
        for raw in iter(lambda: lines.readline(FIRST_LINE_BYTES), b""):
            if raw.strip():
                return json.loads(raw)
    return None


def looks_like_task_file(path: Path) -> bool:
    """Whether the file's first task (its first JSON line, or the first item of its YAML list) is a mapping with a
    `goal` and a `start_url`: how a task file that pytest finds in a folder is told from other JSON Lines or YAML."""
    try:
        row = _first_row(Path(path))
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError, EOFError):
        return False
    return isinstance(row, dict) and isinstance(row.get("goal"), str) and isinstance(row.get("start_url"), str)
