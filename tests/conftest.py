"""Fixtures of the harness's own tests: a real runtime (Xvfb + headed Chromium), the lab and offline sites."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest

from tests import lab
from webeval.benchmarks.local.site_server import SiteServer
from webeval.runtime.slot import Slot

WIDTH, HEIGHT = 1280, 720
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def lab_server():
    with SiteServer({"lab": lab.site}) as server:
        yield server


@pytest.fixture(scope="session")
async def runtime():
    worker = Slot(WIDTH, HEIGHT, None)
    await worker.ready()
    try:
        yield worker
    finally:
        await worker.close()


@pytest.fixture
async def session(runtime, tmp_path):
    await runtime.ready()
    task_session = await runtime.browser.new_session(tmp_path)
    try:
        yield task_session
    finally:
        await task_session.close()


def chromium_pids(display: str) -> list[int]:
    """Chromium processes drawing on a display (found through their environment)."""
    return [pid for pid in processes_with(f"DISPLAY={display}") if "chrom" in " ".join(command_line(pid))]


def renderers(browser_pid: int) -> list[psutil.Process]:
    """A Chromium's renderer processes: its descendants started with --type=renderer."""
    try:
        descendants = psutil.Process(browser_pid).children(recursive=True)
    except psutil.Error:
        return []
    found = []
    for process in descendants:
        try:
            if "--type=renderer" in process.cmdline():
                found.append(process)
        except psutil.Error:  # gone since
            continue
    return found


def processes_with(marker: str) -> list[int]:
    """The processes whose environment holds `marker` (NAME=VALUE), of those this user may read."""
    name, _, value = marker.partition("=")
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get(name) == value:
                found.append(process.pid)
        except psutil.Error:  # gone, or not ours to read
            continue
    return found


def command_line(pid: int) -> list[str]:
    try:
        return psutil.Process(pid).cmdline()
    except psutil.Error:
        return []

