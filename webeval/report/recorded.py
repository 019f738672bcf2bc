"""An Allure test result made from a task's record and its attempt folder, for a task that has a record in
results.jsonl and no test result in the results folder: its session was stopped between the two, it ran without the
Allure plugin, a full disk kept the result out. It carries what the plugin's own result would (webeval.plugin.allure):
the steps with their screenshots (linked, not copied), the model's replies and actions, the answer, the verdict and
the evidence; so a report is never short of a recorded task.

Its file names are fixed per task (the placeholder's), so writing it again replaces it, and it is written again only
when the task's final record changed; a test result of the task's own, once there, replaces it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from webeval.outcomes.record import AttemptRecord
from webeval.outcomes.redact import redact
from webeval.outcomes.rundir import RunDir
from webeval.report.links import link_or_copy
from webeval.report.steps import step_length_s, step_parameters, step_title

RECORD_PARAMETER = "record"  # the final record's time: a result already written for it is left as it is


def _lines(path: Path) -> list[dict[str, Any]]:
    """The trajectory's steps; a line torn by a stop is left out."""
    steps = []
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    for line in text.splitlines():
        try:
            step = json.loads(line)
        except ValueError:
            continue
        if isinstance(step, dict):
            steps.append(step)
    return steps


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


class _Writer:
    """Attachments of one result, under names fixed by the result's uuid and their place in it."""

    def __init__(self, results_dir: Path, uuid: str) -> None:
        self.results_dir, self.uuid, self.count = results_dir, uuid, 0

    def text(self, owner: dict, name: str, text: str, mime: str = "text/plain") -> None:
        file_name = self._name("json" if mime == "application/json" else "txt")
        (self.results_dir / file_name).write_text(redact(text), encoding="utf-8")
        owner.setdefault("attachments", []).append({"name": name, "source": file_name, "type": mime})

    def image(self, owner: dict, name: str, source: Path) -> None:
        file_name = self._name(source.suffix.lstrip(".") or "png")
        link_or_copy(source, self.results_dir / file_name)
        owner.setdefault("attachments", []).append({"name": name, "source": file_name, "type": "image/png"})

    def _name(self, ext: str) -> str:
        self.count += 1
        return f"{self.uuid}-{self.count}-attachment.{ext}"


def _step(writer: _Writer, folder: Path, step: dict[str, Any], clock: int) -> dict[str, Any]:
    actions = step.get("actions") or []
    error = step.get("error")
    timings, usage = step.get("timings") or {}, step.get("usage") or {}
    length = step_length_s(timings, step.get("latency_s") or 0.0)
    node: dict[str, Any] = {
        "name": step_title(step.get("step", 0), actions, error), "status": "failed" if error else "passed",
        "stage": "finished", "start": clock, "stop": clock + int(length * 1000),
        "parameters": [{"name": name, "value": value} for name, value in
                       step_parameters(redact(step.get("url", "")), step.get("title", ""), step.get("results") or [],
                                       timings, usage)],
    }
    if error:
        node["statusDetails"] = {"message": error}
    screenshot = folder / str(step.get("screenshot", ""))
    if step.get("screenshot") and screenshot.is_file() and screenshot.parent == folder:
        writer.image(node, "screenshot", screenshot)
    if step.get("raw"):
        writer.text(node, "model reply", step["raw"])
    if actions:
        writer.text(node, "actions", json.dumps(actions, indent=2, ensure_ascii=False), "application/json")
    return node


def add_attempt(result: dict[str, Any], run_dir: RunDir, record: AttemptRecord, results_dir: Path) -> None:
    """Fill `result` (a placeholder of the task) with the attempt's steps, answer, verdict and evidence."""
    folder = (run_dir.path / record.path).resolve()
    if run_dir.path.resolve() not in folder.parents or not folder.is_dir():
        return  # a path that leaves the run directory is never followed
    writer = _Writer(results_dir, result["uuid"])
    clock = result["start"] - int(record.duration_s * 1000)
    steps = []
    for step in _lines(folder / "trajectory.jsonl"):
        steps.append(_step(writer, folder, step, clock))
        clock = steps[-1]["stop"]
    result["steps"] = steps
    result["start"] = min(result["start"], steps[0]["start"]) if steps else result["start"]
    if record.answer is not None:
        writer.text(result, "final answer", record.answer)
    if record.verdict is not None:
        success = record.verdict.get("success")
        writer.text(result, f"verdict: {'success' if success else 'failure'}", json.dumps(record.verdict, indent=2),
                    "application/json")
    evidence = _read(folder / "evidence.json")
    if evidence is not None:
        writer.text(result, "evidence", evidence, "application/json")
    result["description"] = (f"Written from the run's record and its attempt folder (`{record.path}`): the test's "
                             "own Allure result never reached the results folder.")
    result["parameters"].append({"name": RECORD_PARAMETER, "value": record.finished_at, "excluded": True})


def written_for(path: Path, record: AttemptRecord | None) -> bool:
    """Whether the result at `path` was written from this very record (so it stays, with its pictures)."""
    if record is None or not record.finished_at or not path.is_file():
        return False
    try:
        parameters = json.loads(path.read_text(encoding="utf-8")).get("parameters") or []
    except (OSError, ValueError, AttributeError):
        return False
    return any(p.get("name") == RECORD_PARAMETER and p.get("value") == record.finished_at for p in parameters
               if isinstance(p, dict))
