"""soak_leaked_processes, soak_leaked_tmp and soak_mem_growth_mb: `pytest -n 8 suites/local`, five times in a row.

After each run: the processes the run started that are still there (Xvfb, Chromium and its helpers, its crashpad
handler, Playwright's node driver), the entries it left in its temporary directory (each run gets a directory of its
own as TMPDIR, so nothing of another program's counts; X lock files, which Xvfb keeps in /tmp whatever TMPDIR says, are
counted too, and so are shared memory segments left in /dev/shm; pytest's own tmp_path root, which it keeps by
design, is not), the most file descriptors the controller had open, and the host's available memory (on a shared
machine that moves with everything else it runs: the details say how much memory what the runs left holds).
Goals: no process and no temporary entry left after any run; available memory after the last run at most 50 MB
below what it was after the first. The first run is the baseline because it fills the host's caches once (fonts,
Node's compile cache, Python's bytecode, Chromium's shared files): 110 MB measured here, flat after it.

    .venv/bin/python -m bench.soak [--runs 5] [--workers 8] [--select EXPR] [--json]
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

from bench.common import ROOT, Figure, cli, kind_of, loadavg, pss_kb, run_processes

MARKER = "WEBEVAL_SOAK_RUN"
WATCHED = ("Xvfb", "chromium", "chrome_crashpad_handler", "node")  # kind_of() names, by prefix
LOOK_EVERY_S = 0.5
RUN_TIMEOUT_S = 900.0


def available_mb() -> float:
    return psutil.virtual_memory().available / (1 << 20)


def _started(pid: int) -> float | None:
    """A process's start time: a pid reused by another process is not the one we saw."""
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def _shared() -> set[str]:
    """X lock files (Xvfb keeps them in /tmp whatever TMPDIR says) and shared memory segments (Chromium's, in RAM)."""
    return {str(path) for path in [*Path("/tmp").glob(".X*-lock"), *Path("/dev/shm").iterdir()]}


def _size(paths: list[Path]) -> int:
    total = 0
    for path in paths:
        for part in [path, *path.rglob("*")] if path.is_dir() and not path.is_symlink() else [path]:
            try:
                total += part.lstat().st_size
            except OSError:
                continue
    return total


class Watch:
    """Every process of one run, seen while it runs (its descendants, and what carries its marker)."""

    def __init__(self, root: int, marker: str) -> None:
        self.root, self.marker = root, marker
        self.seen: dict[int, float | None] = {}
        self.controller_fds = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._look, daemon=True)
        self._thread.start()

    def _look(self) -> None:
        while not self._stop.wait(LOOK_EVERY_S):
            for pid in run_processes(self.root, self.marker):
                self.seen.setdefault(pid, _started(pid))
            try:
                self.controller_fds = max(self.controller_fds, psutil.Process(self.root).num_fds())
            except psutil.Error:
                pass

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def left(self) -> dict[int, str]:
        """The run's watched processes still alive after it exited (the same process: same pid, same start time)."""
        for pid in run_processes(self.root, self.marker):  # the root is gone: what carries the marker, reparented
            self.seen.setdefault(pid, _started(pid))
        alive = {pid: kind_of(pid) for pid, started in self.seen.items() if started and _started(pid) == started}
        return {pid: kind for pid, kind in alive.items() if kind.startswith(WATCHED)}


def one_run(workers: int, select: str | None, scratch: Path, number: int) -> dict:
    tmp = scratch / f"tmp-{number}"
    tmp.mkdir()
    token = secrets.token_hex(6)
    env = {**os.environ, "TMPDIR": str(tmp), MARKER: token, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "pytest", "suites/local", "-n", str(workers), "-q", "-p", "no:cacheprovider",
               "--run-dir", str(scratch / f"run-{number}")] + (["-k", select] if select else [])
    shared_before = _shared()
    began = time.monotonic()
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    watch = Watch(proc.pid, f"{MARKER}={token}")
    try:
        output, _ = proc.communicate(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        output, _ = proc.communicate()
    finally:
        watch.stop()
    time.sleep(1.0)  # what a run leaves has this long to go, as a next run would give it
    left = watch.left()
    # pytest-xdist has pytest make its tmp_path root for the workers; pytest keeps it on purpose (3 sessions' worth).
    entries = sorted(path for path in tmp.iterdir() if not path.name.startswith("pytest-of-"))
    shared = sorted(Path(name) for name in _shared() - shared_before)
    held_kb = sum(pss_kb(pid) for pid in left) + _size([*entries, *shared]) // 1024
    return {"exit": proc.returncode, "wall_s": round(time.monotonic() - began, 1), "processes_left": left,
            "tmp_left": [path.name for path in entries] + [str(path) for path in shared], "held_kb": held_kb,
            "controller_fds_max": watch.controller_fds, "available_mb": round(available_mb(), 1),
            "tail": output.strip().splitlines()[-1:] if output else []}


def measure(runs: int = 5, workers: int = 8, select: str | None = None) -> list[Figure]:
    load = loadavg()
    before = available_mb()
    results = []
    scratch = Path(tempfile.mkdtemp(prefix="webeval-soak-"))
    try:
        for number in range(1, runs + 1):
            results.append(one_run(workers, select, scratch, number))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        for pid in {pid for result in results for pid in result["processes_left"]}:
            subprocess.run(["kill", "-9", str(pid)], capture_output=True)  # a leak is counted, not kept
    complete = all(result["exit"] == 0 for result in results)
    details = {"runs": results, "workers": workers, "select": select, "available_mb_before": round(before, 1),
               "load_before": load, "load_after": loadavg()}
    leaked = sum(len(result["processes_left"]) for result in results)
    leaked_tmp = sum(len(result["tmp_left"]) for result in results)
    growth = round(results[0]["available_mb"] - results[-1]["available_mb"], 1) if results else None
    return [
        Figure("soak_leaked_processes", leaked if complete else None, 0, "processes", "<=", details),
        Figure("soak_leaked_tmp", leaked_tmp if complete else None, 0, "entries", "<=", {"runs": runs}),
        Figure("soak_mem_growth_mb", growth if complete else None, 50, "MB", "<=",
               {"available_mb": [r["available_mb"] for r in results], "before": round(before, 1),
                "held_by_leftovers_kb": sum(r["held_kb"] for r in results), "load": [load, loadavg()]}),
    ]


def _options(parser) -> None:
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--select", default=None, metavar="EXPR", help="a -k expression (a shorter soak)")


if __name__ == "__main__":
    cli(__doc__, measure, _options)
