"""The core runs without pytest: `webeval --help`, every `webeval <command> --help`, each benchmark package and the
rooms below the plugin import no `pytest` or `_pytest` module. Each is checked in a fresh interpreter, through its
`sys.modules` once the import or the help has run."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from webeval.benchmarks import PACKAGES
from webeval.cli import build_parser

# Run in a fresh interpreter: what the code given imported, as a JSON list of pytest's modules among sys.modules.
PROBE = """
import json, sys
{code}
print(json.dumps(sorted(m for m in sys.modules if m == "pytest" or m.startswith(("pytest.", "_pytest")))))
"""
HELP = """
import contextlib, io
from webeval.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main({argv!r})
    except SystemExit as done:
        assert done.code == 0, done.code
"""
ROOMS = ["webeval.agent", "webeval.judges", "webeval.policy", "webeval.runtime", "webeval.tasks", "webeval.actions",
         "webeval.outcomes", "webeval.report", "webeval.cli", "webeval.flags", "webeval.run_settings",
         "webeval.cache_dir", "webeval.policy.choice", "webeval.judges.judge_options", "webeval.agent.evaluate",
         "webeval.models", "webeval.rollouts", "webeval.interop"]


def pytest_modules(code: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    done = subprocess.run([sys.executable, "-c", PROBE.format(code=code)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def subcommands() -> list[str]:
    """Every subcommand the `webeval` parser registers."""
    (found,) = [action for action in build_parser()._actions if isinstance(action, argparse._SubParsersAction)]
    return list(found.choices)


@pytest.mark.parametrize("argv", [["--help"], *([name, "--help"] for name in subcommands())],
                         ids=lambda argv: " ".join(argv))
def test_the_command_and_its_help_import_no_pytest(argv):
    assert pytest_modules(HELP.format(argv=argv)) == []


@pytest.mark.parametrize("module", [*PACKAGES.values(), *ROOMS])
def test_a_benchmark_or_a_room_below_the_plugin_imports_no_pytest(module):
    assert pytest_modules(f"import {module}") == []


def test_every_module_below_the_plugin_imports_no_pytest():
    """All of them in one interpreter: a module that imports pytest, however deep, shows here."""
    below = []
    for path in sorted((ROOT / "webeval").rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if not (name.startswith("webeval.plugin") or name.endswith((".plugin", "__main__"))):
            below.append(name)
    assert len(below) > 100
    assert pytest_modules("import importlib\n" + "\n".join(f"importlib.import_module({m!r})" for m in below)) == []


def test_the_probe_sees_pytest_where_it_is_imported():
    assert "pytest" in pytest_modules("import webeval.plugin")
    assert "pytest" in pytest_modules("import webeval.benchmarks.miniwob.plugin")
