"""Every module under webeval/ has a file name of its own, so that a name in a traceback, an import or a search
says which module it is. Two exceptions are names by convention: a package's `__init__.py`, and the `plugin.py` of
a benchmark package (`webeval.benchmarks.<name>.plugin`, what a suite's conftest loads)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from tests.conftest import ROOT

CONVENTIONS = {"__init__.py"}
BENCHMARK_PLUGIN = "plugin.py"


def duplicates(package: Path) -> dict[str, list[str]]:
    """File names that more than one module under `package` has, with the modules' paths."""
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package.parent)
        if path.name in CONVENTIONS or "__pycache__" in path.parts:
            continue
        if path.name == BENCHMARK_PLUGIN and path.parent.parent.name == "benchmarks":
            continue
        found[path.name].append(relative.as_posix())
    return {name: paths for name, paths in found.items() if len(paths) > 1}


def test_no_two_modules_share_a_file_name():
    assert duplicates(ROOT / "webeval") == {}


def test_a_duplicate_is_found(tmp_path):
    for folder in ("webeval/judges", "webeval/cli", "webeval/benchmarks/a", "webeval/benchmarks/b"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "webeval/judges/summary.py").write_text("")
    (tmp_path / "webeval/cli/summary.py").write_text("")
    for name in ("a", "b"):
        (tmp_path / f"webeval/benchmarks/{name}/plugin.py").write_text("")
    (tmp_path / "webeval/cli/plugin.py").write_text("")
    (tmp_path / "webeval/judges/plugin.py").write_text("")
    assert duplicates(tmp_path / "webeval") == {
        "summary.py": ["webeval/cli/summary.py", "webeval/judges/summary.py"],
        "plugin.py": ["webeval/cli/plugin.py", "webeval/judges/plugin.py"],
    }
