"""stored_per_step_over_screenshot: what a run directory stores per agent step, against the step's screenshot.

The offline suite (45 tasks, the oracle) runs into a run directory of its own, then `webeval report` builds its
report folder. Every file of the run directory is counted once per inode (a hard link stores nothing again, as `du`
counts), by its bytes: the attempt folders, results.jsonl, the Allure results, the report folder. The figure is
that total over the bytes of the steps' screenshots themselves. Two things are left out and kept in the details:
the report's own application (Allure's scripts and styles, the same few MB for any run, whatever its size) and the
single-file report.html (built separately, with `--single-file`: every screenshot again, base64).

Before screenshots were linked (issue 27): tasks/ 32 MB, allure-results/ 38 MB, report/ 41 MB, report.html 49 MB
for 45 tasks, about 4.8 times the screenshots with the single file, 3.3 without.

    .venv/bin/python -m bench.storage [--workers 2] [--json]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.common import ROOT, Figure, cli, loadavg

WEBEVAL = Path(sys.executable).with_name("webeval")


def _sizes(root: Path, seen: set[int]) -> tuple[int, int]:
    """(bytes, files) under `root` not counted before: each inode once."""
    size = files = 0
    for path in [root] if root.is_file() else root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            status = path.stat()
            files += 1
            if status.st_ino not in seen:
                seen.add(status.st_ino)
                size += status.st_size
    return size, files


def breakdown(run_dir: Path) -> dict[str, int]:
    """Bytes stored by each part of the run directory, each inode counted where it is first met."""
    seen: set[int] = set()
    parts = {"tasks": run_dir / "tasks", "allure-results": run_dir / "allure-results",
             "report data": run_dir / "report" / "data"}
    stored = {name: _sizes(path, seen)[0] for name, path in parts.items() if path.exists()}
    app = [path for path in (run_dir / "report").iterdir() if path.name != "data"]
    stored["report app"] = sum(_sizes(path, seen)[0] for path in app)
    stored["other"] = sum(_sizes(path, seen)[0] for path in run_dir.iterdir()
                          if path.name not in ("tasks", "allure-results", "report", "report.html"))
    return stored


def measure(workers: int = 2) -> list[Figure]:
    load_before = loadavg()
    with tempfile.TemporaryDirectory(prefix="webeval-storage-") as scratch:
        run_dir = Path(scratch) / "run"
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
        done = subprocess.run([sys.executable, "-m", "pytest", "-n", str(workers), "suites/local", "-q", "-p",
                               "no:randomly", "-p", "no:cacheprovider", "--run-dir", str(run_dir)], cwd=ROOT,
                              env=env, capture_output=True, text=True, timeout=1200)
        report = subprocess.run([str(WEBEVAL), "report", str(run_dir), "--no-history"], cwd=ROOT,
                                capture_output=True, text=True, timeout=600)
        if done.returncode != 0 or report.returncode != 0:
            return [Figure("stored_per_step_over_screenshot", None, 1.3, "x", "<=",
                           {"exits": [done.returncode, report.returncode],
                            "tail": (done.stdout + report.stderr)[-1500:]})]
        screenshots = sorted((run_dir / "tasks").rglob("step-*.png"))
        shot_bytes = sum(path.stat().st_size for path in screenshots)
        stored = breakdown(run_dir)
        single = subprocess.run([str(WEBEVAL), "report", str(run_dir), "--no-history", "--single-file"], cwd=ROOT,
                                capture_output=True, text=True, timeout=600)
        single_bytes = (run_dir / "report.html").stat().st_size if single.returncode == 0 else None
    per_run = sum(size for name, size in stored.items() if name != "report app")
    details = {
        "steps": len(screenshots), "screenshot_kb_mean": round(shot_bytes / max(1, len(screenshots)) / 1000, 1),
        "screenshots_mb": round(shot_bytes / 1e6, 2), "stored_mb": {k: round(v / 1e6, 2) for k, v in stored.items()},
        "with_report_app": round((per_run + stored["report app"]) / shot_bytes, 3),
        "single_file_mb": round(single_bytes / 1e6, 2) if single_bytes else None,
        "single_file_over_screenshots": round(single_bytes / shot_bytes, 3) if single_bytes else None,
        "workers": workers, "load_before": load_before, "load_after": loadavg(),
    }
    return [Figure("stored_per_step_over_screenshot", round(per_run / shot_bytes, 3), 1.3, "x", "<=", details)]


def options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workers", type=int, default=2, help="pytest -n for the run (default 2)")


def main() -> None:
    cli(__doc__, measure, options)


if __name__ == "__main__":
    main()
