"""The tasks that the `miniwob` package ships, read from its files without importing it (its import pulls in
gymnasium and registers environments: seconds a collection does not need), and the population over task x seed."""

from __future__ import annotations

import ast
import importlib.util
import re
from importlib import metadata
from pathlib import Path

from webeval.flags import OptionError
from webeval.tasks import Population, Task, population_of

DISTRIBUTION = "miniwob"
# Task files and ids name this origin; the environment moves it to the running server's.
PLACEHOLDER_ORIGIN = "http://miniwob.webeval.test"
_ENV_ID = re.compile(r"miniwob/(?P<name>[A-Za-z0-9_.\-]+)-v\d+")
_SEEDS = re.compile(r"(\d+)(?:-(\d+))?")
MAX_SEEDS = 10_000


class CatalogueError(OptionError):
    """The package's files or the seeds asked for cannot make a population; the message says what to do."""


def package_dir() -> Path:
    """Where the installed package's files are, found without running its `__init__`."""
    spec = importlib.util.find_spec(DISTRIBUTION)
    if spec is None or not spec.submodule_search_locations:
        raise CatalogueError(f"the {DISTRIBUTION!r} package is not installed: run `make setup`")
    return Path(next(iter(spec.submodule_search_locations)))


def version() -> str:
    return metadata.version(DISTRIBUTION)


def shipped(root: Path) -> list[str]:
    """The task names of every environment the package registers (`miniwob/<name>-v1`), in its own order."""
    source = root / "registration.py"
    try:
        tree = ast.parse(source.read_text(encoding="utf-8"), str(source))
    except (OSError, SyntaxError) as exc:
        raise CatalogueError(f"{source}: cannot read the package's task list ({exc})") from None
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                value = keyword.value
                if keyword.arg == "id" and isinstance(value, ast.Constant) and isinstance(value.value, str):
                    match = _ENV_ID.fullmatch(value.value)
                    if match:
                        names.append(match["name"])
    if not names:
        raise CatalogueError(f"{source}: no registered task found; is {DISTRIBUTION} {version()} a 1.x release?")
    return list(dict.fromkeys(names))


def page_path(name: str) -> str:
    """A task's page under the package's html folder, as the package itself maps it (FlightWoB's wrap a site)."""
    if name.startswith("flight."):
        return name.replace(".", "/", 1) + "/wrapper.html"
    return f"miniwob/{name}.html"


def parse_seeds(text: str) -> list[int]:
    """`0`, `0,3,7` or `0-9` (ranges inclusive, mixable): the seeds every task runs with, in order, each once."""
    seeds: list[int] = []
    for part in text.split(","):
        match = _SEEDS.fullmatch(part.strip())
        if not match:
            raise CatalogueError(f"--miniwob-seeds {text!r}: expected seeds such as 0, 0,3,7 or 0-9")
        first, last = int(match[1]), int(match[2] or match[1])
        if last < first:
            raise CatalogueError(f"--miniwob-seeds {text!r}: the range {part.strip()} runs backwards")
        if last - first + len(seeds) >= MAX_SEEDS:
            raise CatalogueError(f"--miniwob-seeds {text!r}: more than {MAX_SEEDS} seeds per task")
        seeds.extend(range(first, last + 1))
    return list(dict.fromkeys(seeds))


def task_id(name: str, seed: int) -> str:
    return f"{name}--{seed}"


def tasks(names: list[str], seeds: list[int], solved: frozenset[str] = frozenset()) -> list[Task]:
    """One task per name x seed. The goal is a stand-in until the page makes up its problem: the agent gets the
    page's own utterance (webeval.benchmarks.miniwob.page). A task whose name has an oracle solver is tagged."""
    return [
        Task(id=task_id(name, seed), site=name, start_url=f"{PLACEHOLDER_ORIGIN}/{page_path(name)}",
             goal=f"The instruction that the MiniWoB++ page {name} shows (seed {seed}).",
             tags=["miniwob", f"seed={seed}", *(["oracle"] if name in solved else [])])
        for name in names for seed in seeds
    ]


def population(seeds: list[int], solved: frozenset[str] = frozenset()) -> tuple[Population, list[Task]]:
    """Every shipped task x seed; its sha256 is over the package's task list and every task's page."""
    root = package_dir()
    names = shipped(root)
    html = root / "html"
    sources = [root / "registration.py", *(html / page_path(name) for name in names)]
    missing = [str(path) for path in sources if not path.is_file()]
    if missing:
        raise CatalogueError(f"the {DISTRIBUTION} package lacks {missing[0]}: reinstall it (`make setup`)")
    chosen = tasks(names, seeds, solved)
    return population_of(f"miniwob-{version()}", chosen, sources), chosen
