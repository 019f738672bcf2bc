"""WebVoyager task files as tasks: the row format, the pinned populations, and reading a local copy of them.

A row is `{"web_name", "id", "ques", "web"}` (the original format); a template row has `ques_template`,
`date_policy` and `render` instead of `ques` (the maintained format), and is rendered against a date. GAIA web rows
(`"Final answer"`, no `web_name`: the site is the start URL's host) read the same way. Reading files is all this
module does: downloading them is the `prepare` command's job, and every file is checked against its pin before a task
is made of it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlsplit

from webeval.repository_files import RepositoryFile
from webeval.tasks import dates
from webeval.tasks.model import Task
from webeval.tasks.population import Population, TaskFileError, population_of, read_jsonl, sha256_of


@dataclass(frozen=True)
class PinnedFile(RepositoryFile):
    role: str = field(kw_only=True)  # tasks | templates | references

    def describe(self) -> str:
        return f"{self.repo}@{self.commit[:7]} {self.path}"


@dataclass(frozen=True)
class PopulationPin:
    name: str
    size: int
    files: tuple[PinnedFile, ...]
    note: str = ""

    def file(self, role: str) -> PinnedFile | None:
        return next((f for f in self.files if f.role == role), None)


_ORIGINAL = ("MinorJerry/WebVoyager", "5a7896738c10bfb8b9edccce6bb0e0411f8ae569")
_MAINTAINED = ("jayl940712/webarena_benchmarks", "93b33c58b95db93116990f762b5503e702b1ae4a")
_NEMO = ("jayl940712/webarena_benchmarks", "6a2977939b157b0ab9de7799bb089c721f1ac115")
_TEMPLATES = PinnedFile(*_MAINTAINED, "template/webvoyager.template.jsonl",
                        "5bcc746efa51c661ed8c65b22b72c6dac14738c6b2c633ddfc1e90973ec0ca17", role="templates")

POPULATIONS: dict[str, PopulationPin] = {
    pin.name: pin for pin in (
        PopulationPin("original", 643, (
            PinnedFile(*_ORIGINAL, "data/WebVoyager_data.jsonl",
                       "69b19fd86c23f1a500244a3724e039aa7ca6a1223d03e11eb10e308d4f11c488", role="tasks"),
            PinnedFile(*_ORIGINAL, "data/reference_answer.json",
                       "5473818408d8a19960c4f820c1e5721d218b87b547499d7281c2a0fc4267b0c4", role="references"),
        ), note="the paper's 643 tasks, verbatim (its Booking and Google Flights dates are in the past)"),
        PopulationPin("maintained-595", 595, (
            PinnedFile(*_MAINTAINED, "webvoyager.jsonl",
                       "67ed53f057d3ac4e6bd978b4df9db2c5d33c8a726d930525d42fbcb6fb9da03b", role="tasks"),
            _TEMPLATES,
        ), note="48 stale tasks removed; Booking and Google Flights dates rendered against --today"),
        PopulationPin("nemo-552", 552, (
            PinnedFile(*_NEMO, "webvoyager.jsonl",
                       "f635a9b27fa1980a63b39bbf64ae8e9e766159cb70fa765451d3d3c0b948ff98", role="tasks"),
            _TEMPLATES,  # its own commit's templates are unpinned: the 595 pin's apply where a question fits one
        ), note="NeMo Gym's 552 tasks; dates rendered against --today where a pinned template fits"),
    )
}

_SITE_FROM_ID = re.compile(r"^(.+?)--\d+$")


def task_id(raw: str) -> str:
    """WebVoyager's own id, as in the data ('BBC News--3'); Task checks it is a safe path segment."""
    return raw.strip()


def _text(row: dict[str, Any], key: str) -> str:
    if key not in row:
        raise ValueError(f"missing field {key!r}")
    value = row[key]
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"field {key!r} must be non-empty text")
    return value


def site_of(row: dict[str, Any]) -> str:
    if "web_name" in row:
        return _text(row, "web_name")
    match = _SITE_FROM_ID.match(_text(row, "id"))
    if match:
        return match[1]
    host = urlsplit(_text(row, "web")).hostname
    if not host:
        raise ValueError("missing field 'web_name' (and neither the id nor the start URL names a site)")
    return host.removeprefix("www.")


def goal_of(row: dict[str, Any], today: date, index: int) -> str:
    if "ques_template" in row:
        for key in ("date_policy", "render"):
            if key not in row:
                raise ValueError(f"a template row needs {key!r}")
        return dates.render(_text(row, "ques_template"), row["date_policy"], row["render"], today, index)
    return _text(row, "ques")


def row_reader(today: date, references: dict[str, list[str]] | None = None) -> Callable[[dict[str, Any]], dict]:
    """A row -> task-fields function for read_jsonl; templates count in file order, for the date spread."""
    templates = 0

    def to_task(row: dict[str, Any]) -> dict[str, Any]:
        nonlocal templates
        raw_id = _text(row, "id")
        goal = goal_of(row, today, templates)
        if "ques_template" in row:
            templates += 1
        golden = list((references or {}).get(raw_id, []))
        if "Final answer" in row:
            golden.append(str(row["Final answer"]))
        tags = ["date-rendered"] if "ques_template" in row else []
        return {"id": task_id(raw_id), "site": site_of(row), "goal": goal, "start_url": _text(row, "web"),
                "reference_answers": golden or None, "tags": tags}

    return to_task


def read_references(path: Path) -> dict[str, list[str]]:
    """Golden answers by raw task id, from WebVoyager's reference_answer.json ("possible" answers are examples only)."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
        golden: dict[str, list[str]] = {}
        for site, entry in document.items():
            for answer in entry["answers"]:
                if answer["type"] == "golden":
                    golden.setdefault(f"{site}--{answer['id']}", []).append(str(answer["ans"]))
        return golden
    except OSError as exc:
        raise TaskFileError(f"{path}: cannot read reference answers: {exc.strerror}") from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise TaskFileError(f"{path}: not a WebVoyager reference answer file: {exc!r}") from None


def read_tasks(path: Path, today: date, references: dict[str, list[str]] | None = None) -> list[Task]:
    """A WebVoyager-format task file, rows and template rows alike; bad rows name the file and line."""
    return read_jsonl(Path(path), row_reader(today, references))


def apply_templates(tasks: list[Task], templates: list[Task], sources: dict[str, str]) -> list[Task]:
    """Each task whose question is an instance of a template gets the template's rendering (its dates moved)."""
    rendered = {t.id: t for t in templates}
    result = []
    for task in tasks:
        template = rendered.get(task.id)
        if template is not None and dates.instance_pattern(sources[task.id]).fullmatch(task.goal):
            task = task.model_copy(update={"goal": template.goal, "tags": [*task.tags, "date-rendered"]})
        result.append(task)
    return result


def template_sources(path: Path) -> dict[str, str]:
    """The raw `ques_template` of every template row, by task id."""
    found = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            found[task_id(row["id"])] = row["ques_template"]
    return found


class PinMismatch(TaskFileError):
    """A population file whose sha256 is not its pin's: never used, never silently replaced."""


def locate(pin: PinnedFile, folder: Path) -> Path:
    """The copy of a pinned file in a data folder: by its name, or by its path inside the repository."""
    for candidate in (folder / pin.name, folder / pin.path):
        if candidate.is_file():
            return candidate
    raise TaskFileError(f"{folder}: no {pin.name} (the {pin.role} file of {pin.describe()})")


def verify(pin: PinnedFile, path: Path, population: str) -> Path:
    actual = sha256_of([path])
    if actual != pin.sha256:
        raise PinMismatch(f"{path}: sha256 {actual} does not match the pin of population {population!r} "
                          f"({pin.describe()}: {pin.sha256})")
    return path


def load_population(population: str | PopulationPin, folder: Path, today: date) -> tuple[Population, list[Task]]:
    """A pinned population (a known one by name, or a pin of one's own) from a data folder: every file checked
    against its sha256, then read."""
    pin = POPULATIONS.get(population) if isinstance(population, str) else population
    if pin is None:
        raise TaskFileError(f"population {population!r} is unknown: use one of {', '.join(POPULATIONS)}")
    name = pin.name
    paths = {f.role: verify(f, locate(f, Path(folder)), name) for f in pin.files}
    references = read_references(paths["references"]) if "references" in paths else None
    tasks = read_tasks(paths["tasks"], today, references)
    if "templates" in paths:
        templates = read_tasks(paths["templates"], today)
        tasks = apply_templates(tasks, templates, template_sources(paths["templates"]))
    if len(tasks) != pin.size:
        raise TaskFileError(f"{paths['tasks']}: {len(tasks)} tasks, but population {name!r} has {pin.size}")
    # The population is what defines its tasks (rows and templates); reference answers only serve a judge.
    sources = [paths[f.role] for f in pin.files if f.role != "references"]
    population = population_of(f"webvoyager-{name}", tasks, sources)
    return population, tasks


def load_file(path: Path, today: date) -> tuple[Population, list[Task]]:
    """A population of one's own: a task file in WebVoyager's format."""
    path = Path(path)
    tasks = read_tasks(path, today)
    return population_of(f"webvoyager-file-{path.stem}", tasks, [path]), tasks
