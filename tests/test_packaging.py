"""The distribution: a wheel built from the tree is `pytest-webeval`, a pytest plugin; installed into a fresh virtual
environment, pytest finds its options and the `webeval` command runs, and from an empty folder outside the repository
a newcomer runs a task file (`pytest tasks.jsonl`) and a shipped benchmark (`webeval new-suite local`, then
`pytest local`).

The fresh environment takes its dependencies from this one (a path line in a .pth file: the packages are there, and
nothing of this environment's own webeval, whose editable finder a plain path line does not run), so the test needs
no network and installs only the wheel."""

from __future__ import annotations

import email
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from importlib import metadata
from pathlib import Path
from typing import Callable

import pytest

from tests.conftest import ROOT
from webeval.benchmarks.miniwob.server import PageServer


OFFLINE_BENCHMARKS = """
import asyncio, urllib.request
from webeval.benchmarks import benchmark_setup, open_benchmark

async def main():
    for name in ("local", "rubric"):
        print(name, benchmark_setup(name).population.size)
    async with open_benchmark("local") as benchmark:
        task = benchmark.task("Shop--0")
        origin = benchmark.environment.prepare(task).task.start_url.split("/shop")[0]
        for path in ("/static/common.css", "/static/shop/book.svg"):
            with urllib.request.urlopen(origin + path, timeout=10) as reply:
                print(reply.status, reply.headers["Content-Type"])

asyncio.run(main())
"""


def package_data() -> set[str]:
    """The files under webeval/ that are not modules and that git tracks: what the wheel must carry besides them."""
    tracked = subprocess.run(["git", "ls-files", "webeval"], cwd=ROOT, capture_output=True, text=True, check=True)
    return {name for name in tracked.stdout.split() if not name.endswith(".py")}


def build_wheel(tmp_path: Path) -> Path:
    """A wheel from a copy of the tree (the build leaves its egg-info and build folders in the copy)."""
    source = tmp_path / "source"
    shutil.copytree(ROOT / "webeval", source / "webeval", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    dist = tmp_path / "dist"
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                           "-q", "-w", str(dist), str(source)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = dist.glob("*.whl")
    return wheel


def fresh_venv(tmp_path: Path) -> Path:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    site = Path(sysconfig.get_paths(vars={"base": str(venv), "platbase": str(venv)})["purelib"])
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, Path]:
    """(the wheel, a fresh virtual environment with only it installed)."""
    tmp_path = tmp_path_factory.mktemp("installed")
    wheel = build_wheel(tmp_path)
    venv = fresh_venv(tmp_path)
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                           "--no-deps", "--no-index", str(wheel)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return wheel, venv


def newcomer(folder: Path) -> Callable[..., subprocess.CompletedProcess]:
    """Commands run in `folder` as a user of the package runs them: no PYTHONPATH, no pytest of ours around it."""
    folder.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("PYTEST_")}

    def run(*command: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=timeout)

    return run


def test_the_wheel_is_pytest_webeval_and_works_in_a_fresh_venv(installed, tmp_path):
    wheel, venv = installed
    assert wheel.name.startswith("pytest_webeval-")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        meta = email.message_from_string(archive.read(info).decode())
        entry_points = archive.read(info.replace("METADATA", "entry_points.txt")).decode()
    assert meta["Name"] == "pytest-webeval"
    assert "Framework :: Pytest" in meta.get_all("Classifier")
    assert "[pytest11]\nwebeval = webeval.plugin" in entry_points
    assert "[console_scripts]\nwebeval = webeval.cli:main" in entry_points
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "webeval").rglob("*.py")}
    assert modules <= set(names), sorted(modules - set(names))
    data = package_data()  # the offline benchmarks' sites and task files
    assert len(data) > 30 and data <= set(names), sorted(data - set(names))

    python = venv / "bin" / "python"
    run = newcomer(tmp_path / "elsewhere")  # no conftest, no pyproject, not the repository
    where = run(str(python), "-c", "import webeval, importlib.metadata as m; "
                                    "print(webeval.__file__); print(m.distribution('pytest-webeval').locate_file(''))")
    assert where.returncode == 0, where.stderr
    assert all(Path(line).is_relative_to(venv) for line in where.stdout.split()), where.stdout
    # Installed as a package, the harness has no commit of its own to report; its version says what it is.
    found = run(str(python), "-c", "from webeval.report.versions import versions; v = versions(None); "
                                    "print(v['git.commit'], v['pytest-webeval'], sep='|')")
    assert found.stdout.strip() == f"none (installed as a package)|{metadata.version('pytest-webeval')}", found.stderr
    helped = run(str(python), "-m", "pytest", "--help")
    assert helped.returncode == 0, helped.stderr
    group = re.search(r"^webeval\b[^\n]*:\n(.*?)\n\n", helped.stdout, re.M | re.S)  # the option group
    assert group, helped.stdout
    for option in ("--policy", "--run-dir", "--resume", "--shard", "--gate-baseline", "--policy-profile"):
        assert re.search(rf"^  {option}\b", group[1], re.M), option
    # The offline benchmarks run from the installed package: their tasks read, their sites served with their files.
    served = run(str(python), "-c", OFFLINE_BENCHMARKS)
    assert served.returncode == 0, served.stderr
    assert served.stdout.split() == ["local", "45", "rubric", "15", "200", "text/css", "200", "image/svg+xml"]
    command = run(str(venv / "bin" / "webeval"), "--help")
    assert command.returncode == 0, command.stderr
    assert command.stdout.startswith("usage: webeval") and "summary" in command.stdout and "merge" in command.stdout


NEWCOMER_TASKS = [
    {"id": "sencha-price", "site": "tea-shop", "goal": "How much does a pot of Sencha cost? Answer with the price.",
     "start_url": "{origin}/index.html", "answer": {"regex": "^\\$?4\\.50?$"},
     "solution": [{"do": "answer", "text": "4.50"}]},
    {"id": "two-assam", "site": "tea-shop", "goal": "Put two pots of Assam in the basket, and nothing else.",
     "start_url": "{origin}/index.html", "page": {"selector": "#basket", "exact": "Assam x 2"},
     "solution": [{"do": "click", "selector": "#add-assam"}, {"do": "click", "selector": "#add-assam"},
                  {"do": "answer", "text": "done"}]},
]


def finished_run(folder: Path, before: set[Path]) -> dict:
    """The summary of the one run directory the command left under `folder`/reports/runs."""
    (run_dir,) = set((folder / "reports" / "runs").iterdir()) - before
    return json.loads((run_dir / "summary.json").read_text())


def test_an_installed_package_runs_a_task_file_and_a_shipped_benchmark_from_an_empty_folder(installed, tmp_path):
    _, venv = installed
    folder = tmp_path / "newcomer"
    run = newcomer(folder)
    shutil.copy(ROOT / "docs" / "examples" / "tasks" / "index.html", folder / "index.html")  # the task file's page
    with PageServer(folder) as page:
        lines = [json.dumps(task).replace("{origin}", page.origin) for task in NEWCOMER_TASKS]
        (folder / "tasks.jsonl").write_text("\n".join(lines) + "\n")
        tasks = run(str(venv / "bin" / "python"), "-m", "pytest", "tasks.jsonl", "--policy", "oracle", timeout=600)
    assert tasks.returncode == 0, tasks.stdout + tasks.stderr
    assert "2 passed" in tasks.stdout and f"rootdir: {folder}" in tasks.stdout, tasks.stdout
    done = finished_run(folder, set())
    assert (done["population"], done["n"], done["passed"], done["complete"]) == ("tasks", 2, 2, True), done

    written = run(str(venv / "bin" / "webeval"), "new-suite", "local")
    assert written.returncode == 0, written.stderr
    assert sorted(p.name for p in (folder / "local").iterdir()) == ["conftest.py", "test_local.py"]
    before = set((folder / "reports" / "runs").iterdir())
    local = run(str(venv / "bin" / "python"), "-m", "pytest", "local", "-k", "Shop--0 or News--0", timeout=600)
    assert local.returncode == 0, local.stdout + local.stderr
    assert "2 passed, 43 deselected" in local.stdout, local.stdout
    shipped = finished_run(folder, before)
    assert (shipped["population"], shipped["n"], shipped["passed"]) == ("local", 45, 2), shipped
