"""Fixtures of the harness's own tests: a real runtime (Xvfb + headed Chromium), the lab and offline sites."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.sites.server import SiteServer
from tests import lab
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
    return [pid for pid, env in processes_with(f"DISPLAY={display}") if "chrom" in _cmdline(pid)]


def processes_with(marker: str) -> list[tuple[int, str]]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            env = (entry / "environ").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if marker in env.split("\0"):
            found.append((int(entry.name), env))
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""

