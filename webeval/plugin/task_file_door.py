"""`pytest my.tasks.jsonl`: a task file collected the way pytest collects a test file, in any folder, with nothing but
the installed package.

Which files are task files:
- a file named on the command line whose name ends in `.jsonl`, `.jsonl.gz`, `.yaml` or `.yml`, always (pytest
  collects a test file it is given whatever its name): a malformed one is a collection error naming its file and line;
- a file found in a folder that pytest walks, when its name matches the `webeval_task_files` patterns (by default
  `tasks.jsonl`, `tasks.yaml`, `tasks.yml`, `*.tasks.jsonl`, `*.tasks.yaml`, `*.tasks.yml`) and its first task has a
  `goal` and a `start_url`. Other JSON Lines and YAML files in a repository are never collected by surprise.

A task file is the benchmark `webeval.benchmarks.TASK_FILES` names (the tasks benchmark, `tasks:PATH`), and its
plugin does the collecting: each task one test, with the outcomes, run directory, reconciliation, reports and options
of `pytest suites/tasks --tasks-file`. Its options (the selection's and the judge's) are pytest's once the command
line names a task file, or a folder that holds one directly, as a conftest's options are for the folders named.
"""

from __future__ import annotations

import fnmatch
import importlib
from pathlib import Path
from types import ModuleType
from typing import Any, Generator, Iterable

import pytest

from webeval.benchmarks import TASK_FILES, plugin_module

PATTERNS_INI = "webeval_task_files"
PATTERNS = ["tasks.jsonl", "tasks.yaml", "tasks.yml", "*.tasks.jsonl", "*.tasks.yaml", "*.tasks.yml"]
SUFFIXES = (".jsonl", ".jsonl.gz", ".yaml", ".yml")
BENCHMARK_PLUGINS = "webeval.benchmarks."
# Set before the task files' plugin is loaded by this door rather than by a suite's conftest: that plugin then reads
# its task files from the command line and the folders pytest walks, and asks for no --tasks-file.
OPENED = pytest.StashKey[bool]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(PATTERNS_INI, type="args", default=list(PATTERNS),
                  help="file name patterns of the task files pytest collects from the folders it walks (a task file "
                       "named on the command line is collected whatever its name)")


def named_task_file(path: Path) -> bool:
    return path.name.lower().endswith(SUFFIXES) and path.is_file()


def patterned(config: pytest.Config, path: Path) -> bool:
    return any(fnmatch.fnmatch(path.name, pattern) for pattern in config.getini(PATTERNS_INI))


def _arguments(config: pytest.Config, arguments: Iterable[str]) -> list[Path]:
    base = config.invocation_params.dir
    return [base / argument.split("::", 1)[0] for argument in arguments] or [base]


def names_task_files(config: pytest.Config, arguments: Iterable[str]) -> bool:
    """Whether the command line names a task file, or a folder holding one directly (by its name's pattern)."""
    for path in _arguments(config, arguments):
        if named_task_file(path):
            return True
        if path.is_dir() and any(child.is_file() and patterned(config, child) for child in path.iterdir()):
            return True
    return False


def _suite_loaded(config: pytest.Config) -> bool:
    return any(name.startswith(BENCHMARK_PLUGINS) for name, _ in config.pluginmanager.list_name_plugin()
               if isinstance(name, str))


def task_files_plugin(config: pytest.Config) -> ModuleType:
    """The task files' plugin, loaded now by this door unless a suite's conftest loaded it."""
    name = plugin_module(TASK_FILES)
    if not config.pluginmanager.has_plugin(name):
        config.stash[OPENED] = True
        config.pluginmanager.import_plugin(name)
    return importlib.import_module(name)


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser,
                                  args: list[str]) -> Generator[None, Any, Any]:
    """Once the named folders' conftests are loaded: a session that names task files, and loads no suite of a
    benchmark, gets the task files' plugin (and so its options) before the command line is parsed."""
    loaded = yield
    if not _suite_loaded(early_config) and names_task_files(early_config,
                                                           early_config.known_args_namespace.file_or_dir):
        task_files_plugin(early_config)
    return loaded


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    named = parent.session.isinitpath(file_path)
    if not file_path.name.lower().endswith(SUFFIXES) or not (named or patterned(parent.config, file_path)):
        return None
    return task_files_plugin(parent.config).collect_task_file(file_path, parent, named)
