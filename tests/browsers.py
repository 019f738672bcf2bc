"""Remote browser endpoints on 127.0.0.1 for the tests: a Playwright server and a Chromium with a DevTools port."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Iterator

from tests.runs import wait_for
from webeval.runtime.browser import find_chromium


def _started(args: list[str], log: Path, pattern: str) -> tuple[subprocess.Popen, str]:
    """Start a server in a process group of its own; the address it printed (to `log`) once it listens."""
    with log.open("wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)

    def address() -> str | None:
        found = re.search(pattern, log.read_text(errors="replace"))
        if found is None and proc.poll() is not None:
            raise AssertionError(f"{args[0]} exited: {log.read_text(errors='replace')[-2000:]}")
        return found[1] if found else None

    try:
        return proc, wait_for(address, timeout=60, what=f"{log.name} to listen")
    except BaseException:
        stop(proc)
        raise


def stop(proc: subprocess.Popen) -> None:
    """SIGKILL the server and everything it started."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


@contextlib.contextmanager
def playwright_server(folder: Path) -> Iterator[tuple[subprocess.Popen, str]]:
    """`playwright run-server` with --unsafe, so that clients may launch Debian's Chromium (executablePath)."""
    proc, url = _started([sys.executable, "-m", "playwright", "run-server", "--host", "127.0.0.1", "--port", "0",
                          "--unsafe"], folder / "playwright-server.log", r"Listening on (ws://\S+)")
    try:
        yield proc, url
    finally:
        stop(proc)


@contextlib.contextmanager
def cdp_chromium(folder: Path) -> Iterator[tuple[subprocess.Popen, str]]:
    """A headless Chromium whose DevTools port (chosen by itself) is read from its stderr; its http:// endpoint."""
    args = [find_chromium(), "--headless", "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
            f"--user-data-dir={folder / 'cdp-profile'}", "--no-first-run", "--disable-gpu", "about:blank"]
    if os.geteuid() == 0:
        args.append("--no-sandbox")
    proc, ws = _started(args, folder / "chromium.log", r"DevTools listening on (ws://\S+)")
    try:
        yield proc, "http://" + ws.split("/")[2]
    finally:
        stop(proc)
