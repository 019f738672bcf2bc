"""Where the WebVoyager task files are for the harness's own tests: a local copy, never part of the repository.

$WEBEVAL_TEST_DATA, else the `shared/data` folder beside the repository. Tests that need them skip without them.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import _pytest.config
import pytest

from tests.conftest import ROOT
from webeval.benchmarks import benchmark_flags
from webeval.flags import add_arguments
from webeval.judges.judge_options import REJUDGE_FLAGS

DATA = Path(os.environ.get("WEBEVAL_TEST_DATA") or ROOT.parent / "shared" / "data")
ORIGINAL = DATA / "webvoyager"
MAINTAINED = DATA / "webvoyager-maintained"

need_data = pytest.mark.skipif(not (ORIGINAL / "WebVoyager_data.jsonl").is_file(),
                               reason=f"no WebVoyager task files in {DATA} (set WEBEVAL_TEST_DATA)")


def pytest_run(args: list[str], env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """`pytest ARGS` in a subprocess from the repository root, as a user runs it."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "WEBEVAL_DATA"))}
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "pytest", *args, "-p", "no:cacheprovider"], cwd=ROOT, env=full_env,
                          capture_output=True, text=True, timeout=timeout)


def closed_port() -> int:
    """A local port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def offline_env() -> dict[str, str]:
    """No route to the internet, even on a machine that has one: every request goes to a closed local port."""
    dead = f"http://127.0.0.1:{closed_port()}"
    return {"http_proxy": dead, "https_proxy": dead, "HTTP_PROXY": dead, "HTTPS_PROXY": dead, "no_proxy": "",
            "NO_PROXY": ""}


def webvoyager_rows(path: Path, rows: list[tuple[str, str, str]]) -> Path:
    """A small task file in WebVoyager's format: (id, question, start URL) per row."""
    lines = [json.dumps({"web_name": raw_id.split("--")[0], "id": raw_id, "ques": ques, "web": web})
             for raw_id, ques, web in rows]
    path.write_text("\n".join(lines), encoding="utf-8")  # like the original file: no newline after the last row
    return path


def records(run_dir: Path) -> list[dict]:
    path = run_dir / "results.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def parsed(args: list[str]) -> dict[str, Any]:
    """The benchmark's option values as a front door reads them back (its family rendered into argparse), with the
    core's `--rejudge DIR`: what webeval.benchmarks.webvoyager.settings.build takes."""
    parser = argparse.ArgumentParser(prog="webvoyager", exit_on_error=False)
    add_arguments(parser, (*benchmark_flags("webvoyager"), *REJUDGE_FLAGS))
    parser.add_argument("--rejudge", default=None)
    return vars(parser.parse_args(args))


def pytest_config(args: list[str]) -> pytest.Config:
    """The suite's options as pytest parses them, in this process, its plugin loaded."""
    return _pytest.config._prepareconfig(["suites/webvoyager", "-s", *args])  # -s: keep the outer capture


def tripwires(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An environment in which starting Xvfb or Chromium leaves a mark (and fails): proof that neither started."""
    bin_dir = tmp_path / "tripwire-bin"
    bin_dir.mkdir()
    marks = tmp_path / "tripwire-marks"
    for name in ("Xvfb", "chromium"):
        script = bin_dir / name
        # asking Chromium its version (for the report's environment) starts no browser
        script.write_text(f'#!/bin/sh\n[ "$1" = --version ] && echo "Chromium 0 (tripwire)" && exit 0\n'
                          f'echo "{name} $*" >> {marks}\nexit 1\n')
        script.chmod(0o755)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "WEBEVAL_CHROMIUM": str(bin_dir / "chromium")}
    return env, marks
