"""What a run ran with, for the report's Environment and Executor panels: environment.properties, executor.json.

Values are names and versions only. Endpoints are never written, and any URL credentials a value carries are cut,
because the report is meant to be shared.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from webeval.outcomes.record import AttemptRecord
from webeval.report.identity import report_name
from webeval.tasks import Population

ENVIRONMENT = "environment.properties"
EXECUTOR = "executor.json"
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s@]+@")


def redact(value: str) -> str:
    return _USERINFO.sub(r"\1***@", value)


def _run(command: list[str], cwd: Path | None = None) -> str | None:
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=20,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def git_commit(root: Path) -> str:
    commit = _run(["git", "rev-parse", "HEAD"], cwd=root)
    if not commit:
        return "unknown"
    dirty = _run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root)
    return f"{commit} (with uncommitted changes)" if dirty else commit


def chromium_version(executable: str | None) -> str:
    if not executable:
        return "Playwright's bundled Chromium"
    return _run([executable, "--version"]) or f"unknown ({executable})"


def playwright_version() -> str:
    try:
        return metadata.version("playwright")
    except metadata.PackageNotFoundError:
        return "not installed"


def judges_of(records: list[AttemptRecord]) -> str:
    """The judges that gave the run's verdicts, as `name (model)`, from the records."""
    seen: dict[str, None] = {}
    for record in records:
        verdict = record.verdict or {}
        if verdict.get("judge"):
            seen[verdict["judge"] + (f" ({verdict['model']})" if verdict.get("model") else "")] = None
    return ", ".join(seen) or "none recorded"


def environment(population: Population, records: list[AttemptRecord], *, policy: str | None, model: str | None,
                chromium: str | None, root: Path) -> dict[str, str]:
    return {
        "model": model or (policy if policy == "oracle" else "unknown"),
        "judge": judges_of(records),
        "population": population.name,
        "population.size": str(population.size),
        "population.sha256": population.sha256,
        "policy": policy or "unknown",
        "chromium": chromium_version(chromium),
        "playwright": playwright_version(),
        "python": sys.version.split()[0],
        "git.commit": git_commit(root),
    }


def _escape(text: str, key: bool = False) -> str:
    text = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    text = text.replace("=", "\\=").replace(":", "\\:")
    return text.replace(" ", "\\ ") if key else text


def _unescape(text: str) -> str:
    out, chars = [], iter(text)
    for char in chars:
        if char == "\\":
            char = next(chars, "")
            char = {"n": "\n", "r": "\r", "t": "\t"}.get(char, char)
        out.append(char)
    return "".join(out)


def read_environment(results_dir: Path) -> dict[str, str]:
    """What write_environment wrote (its own escaping; not a general properties reader)."""
    path = results_dir / ENVIRONMENT
    if not path.is_file():
        return {}
    values = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        escaped, split = False, None
        for index, char in enumerate(line):
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == "=":
                split = index
                break
        if split is not None and not line.startswith("#"):
            values[_unescape(line[:split])] = _unescape(line[split + 1:])
    return values


def write_environment(results_dir: Path, values: dict[str, str]) -> None:
    lines = [f"{_escape(key, key=True)}={_escape(redact(value))}" for key, value in values.items()]
    (results_dir / ENVIRONMENT).write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_executor(results_dir: Path, population: Population, run_id: str) -> None:
    executor = {
        "name": "webeval",
        "type": "ci" if os.environ.get("CI") else "local",
        "buildName": f"{population.name} {run_id}",
        "reportName": report_name(population.name, run_id),
    }
    (results_dir / EXECUTOR).write_text(json.dumps(executor, indent=2), encoding="utf-8")
