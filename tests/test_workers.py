"""Parallel workers: each has its own display and browser, and input on one never reaches another."""

from __future__ import annotations

import json
import os

from tests.conftest import ROOT
from tests.runs import run

CONCURRENT_TYPING = '''
import json, os, pytest
from pathlib import Path
from tests import lab
from webeval.actions import parse_call
from webeval.benchmarks.local.site_server import SiteServer
from webeval.runtime.executor import execute

@pytest.fixture(scope="session")
def server():
    with SiteServer({"lab": lab.site}) as s:
        yield s

@pytest.mark.parametrize("n", range(4))
async def test_type(n, server, webeval_runtime, tmp_path):
    runtime = await webeval_runtime.ready()
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    text = f"{worker}-{n}-" + "abcdefghijklmnopqrstuvwxyz0123456789" * 3
    session = await runtime.browser.new_session(tmp_path)
    try:
        await session.goto(server.origin + "/lab/input")
        await session.settle()
        for call in [("computer", {"action": "click", "x": 300, "y": 112}), ("computer", {"action": "type", "text": text})]:
            await execute(parse_call(call[0], json.dumps(call[1]), (1280, 720)), session, runtime.device)
            await session.settle()
        typed = await session.active.locator("#field").input_value()
    finally:
        await session.close()
    Path(os.environ["OUT_DIR"], f"{worker}-{n}.json").write_text(json.dumps(
        {"display": runtime.display.name, "typed": typed, "expected": text}))
    assert typed == text
'''


def typing_run(tmp_path, *pytest_args: str):
    """The typing module above, run by pytest as a user would; returns the job and the folder of what each typed."""
    (tmp_path / "test_concurrent_typing.py").write_text(CONCURRENT_TYPING)
    out = tmp_path / "out"
    out.mkdir()
    env = {"PYTHONPATH": str(ROOT), "OUT_DIR": str(out)}
    job = run([*pytest_args, "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(ROOT), str(tmp_path)],
              tmp_path / "run", env=env)
    return job, out


def test_two_workers_never_see_each_others_input(tmp_path):
    job, out = typing_run(tmp_path, "-n", "2")
    assert job.proc.returncode == 0, job.output
    results = [json.loads(p.read_text()) for p in out.iterdir()]
    assert len(results) == 4
    assert all(r["typed"] == r["expected"] for r in results)
    displays = {p.name.split("-")[0]: json.loads(p.read_text())["display"] for p in out.iterdir()}
    assert len(set(displays.values())) == len(displays) == 2, displays
    assert job.processes() == []  # no Xvfb or Chromium outlives the session


def test_without_xdist_too(tmp_path):
    job, out = typing_run(tmp_path, "-p", "no:xdist")
    assert job.proc.returncode == 0, job.output
    assert sorted(os.listdir(out)) == [f"main-{n}.json" for n in range(4)]
    assert job.processes() == []
