"""What a run ran with: the exact versions of the harness, its browser and the packages a score depends on, and the
harness's git commit with whether its tree had changes not committed.

Each session records these into its run directory (webeval.outcomes.sessions), so that summary.json and the Allure
environment say what produced a score, even when they are written again later, elsewhere.
"""

from __future__ import annotations

import functools
import subprocess
import sys
from importlib import metadata
from pathlib import Path

PACKAGES = ("pytest-webeval", "playwright", "pytest", "pytest-xdist", "openai", "allure-pytest")
HARNESS = Path(__file__).resolve().parents[2]  # the folder holding the webeval package


def run(command: list[str], cwd: Path | None = None) -> str | None:
    """A short command's output, or None when it cannot run or fails."""
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=20,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def package_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def chromium_version(executable: str | None) -> str:
    if not executable:
        return "Playwright's bundled Chromium"
    return run([executable, "--version"]) or f"unknown ({executable})"


def git_state(folder: Path) -> tuple[Path, str, bool] | None:
    """(top of the work tree, commit, whether anything tracked or not ignored differs from it), or None."""
    top = run(["git", "rev-parse", "--show-toplevel"], cwd=folder)
    commit = run(["git", "rev-parse", "HEAD"], cwd=folder)
    status = run(["git", "status", "--porcelain"], cwd=folder)
    if not top or not commit or status is None:
        return None
    return Path(top).resolve(), commit, bool(status)


@functools.cache
def versions(chromium: str | None, project: Path | None = None) -> dict[str, str]:
    """Exact versions, and git commits: the harness's (`git.*`), and the project's (`project.git.*`) when pytest runs
    in another work tree, such as a repository of one's own suites."""
    values = {"python": sys.version.split()[0], **{name: package_version(name) for name in PACKAGES},
              "chromium": chromium_version(chromium)}
    harness = git_state(HARNESS)
    if harness is not None and harness[0] == HARNESS:
        values["git.commit"], values["git.dirty"] = harness[1], str(harness[2]).lower()
    else:
        values["git.commit"], values["git.dirty"] = "none (installed as a package)", "unknown"
    own = git_state(project) if project is not None else None
    if own is not None and own[0] != HARNESS:
        values["project.git.commit"], values["project.git.dirty"] = own[1], str(own[2]).lower()
    return values
