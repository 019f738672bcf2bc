"""What a run ran with, for the report's Environment and Executor panels: environment.properties, executor.json.

Values are names and versions only. Endpoints are never written, and any URL credentials a value carries are cut,
because the report is meant to be shared.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from webeval.outcomes.record import AttemptRecord
from webeval.outcomes.redact import redact
from webeval.report.identity import report_name
from webeval.report.versions import versions
from webeval.tasks import Population

ENVIRONMENT = "environment.properties"
EXECUTOR = "executor.json"
def judges_of(records: list[AttemptRecord]) -> str:
    """The judges that gave the run's verdicts, as `name (model)`, from the records; sorted, since the records' order
    is the order in which the workers finished."""
    seen: set[str] = set()
    for record in records:
        verdict = record.verdict or {}
        if verdict.get("judge"):
            seen.add(verdict["judge"] + (f" ({verdict['model']})" if verdict.get("model") else ""))
    return ", ".join(sorted(seen)) or "none recorded"


def environment(population: Population, records: list[AttemptRecord], *, policy: str | None, model: str | None,
                chromium: str | None, root: Path, recipe: dict[str, str] | None = None,
                browser: tuple[str, str] | None = None) -> dict[str, str]:
    """`recipe` is the model's serving recipe, from its profile (revision, chat template, parsers, image limits);
    `browser` is where the browsers came from and the input path that ran (its kind only, never its endpoint)."""
    return {
        **({"browser": browser[0], "input": browser[1]} if browser else {}),
        "model": model or (policy if policy == "oracle" else "unknown"),
        "judge": judges_of(records),
        "population": population.name,
        "population.size": str(population.size),
        "population.sha256": population.sha256,
        "policy": policy or "unknown",
        **versions(chromium, root),
        **{f"recipe.{name}": value for name, value in (recipe or {}).items()},
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
