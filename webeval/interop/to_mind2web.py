"""A run in Online-Mind2Web's result layout (schema v2), so that its own WebJudge script (`src/run.py`) judges it.

Per exported task, `<out>/<task id>/result.json` and `trajectory/NNNN.png`:
`{"schema_version": "online-mind2web-v2", "task", "task_id", "agent_final_answer", "action_history": [{"step",
"screenshot", "url", "action", "action_status", "thought"}]}`, a step per observation of the run (its screenshot,
the page's URL, the actions taken after it in one line, `| SUCCESS` or `| FAILED` as the step's error says). The last
step is the closing one, `TASK_COMPLETE -> ANSWER: <answer>` (`TASK_COMPLETE -> NO ANSWER` when the agent gave
none), with the last screenshot: upstream's script leaves that final step out of the action history it judges.

Exported: every task whose final record has evidence of a finished episode (passed, failed, or judge_failed: what
is to be judged). A task whose episode did not finish (infra_error, not_run, harness_error) is not: a judge would
read a broken episode as the agent's failure. `reference_length` (the human reference's step count) is not known to
a run and is left out.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from webeval.interop.final_attempts import FinalAttempt, read_run
from webeval.outcomes.evidence import IMPORTED_ACTION
from webeval.outcomes.record import Outcome

V2 = "online-mind2web-v2"
EXPORTABLE = (Outcome.passed, Outcome.failed, Outcome.judge_failed)


def _point(action: dict[str, Any]) -> str:
    return f"coords({action.get('x')}, {action.get('y')})" if action.get("x") is not None else "page"


def action_text(action: dict[str, Any]) -> str:
    """One action in Online-Mind2Web's action grammar (`<target> -> <VERB> -> <description>`)."""
    tool, kind = action.get("tool"), action.get("action")
    if tool == IMPORTED_ACTION:
        return str(action.get("text", ""))
    if tool == "computer":
        verbs = {"click": "CLICK", "double_click": "DOUBLE_CLICK", "right_click": "RIGHT_CLICK", "move": "HOVER"}
        if kind in verbs:
            return f"{_point(action)} -> {verbs[kind]}"
        described = {"drag": lambda: f"{_point(action)} -> DRAG -> to coords({action.get('to_x')}, "
                                     f"{action.get('to_y')})",
                     "type": lambda: f"page -> TYPE -> {action.get('text', '')!r}",
                     "key": lambda: "page -> PRESS_KEY -> " + "+".join(action.get("keys") or []),
                     "scroll": lambda: f"{_point(action)} -> SCROLL -> {action.get('direction')} "
                                       f"{action.get('amount') or ''}".rstrip(),
                     "wait": lambda: f"page -> WAIT -> {action.get('seconds')} s"}
        return described[kind]() if kind in described else f"page -> {str(kind).upper()}"
    if tool == "navigate":
        if action.get("back") or action.get("forward"):
            return "page -> GO_BACK" if action.get("back") else "page -> GO_FORWARD"
        return f"page -> NAVIGATE -> {action.get('url', '')}"
    if tool == "tabs":
        return f"page -> TAB_{str(kind).upper()} -> {action.get('url') or action.get('tab_id', '')}"
    return json.dumps(action, ensure_ascii=False)


def _steps(attempt: FinalAttempt) -> list[dict[str, Any]]:
    """The run's steps (trajectory.jsonl), or, without it, the evidence's screenshots and actions by position."""
    if attempt.steps:
        return attempt.steps
    evidence = attempt.evidence
    return [{"screenshot": name, "url": evidence.urls[i] if i < len(evidence.urls) else "",
             "actions": [evidence.actions[i]] if i < len(evidence.actions) else []}
            for i, name in enumerate(evidence.screenshots)]


def _screenshot(attempt: FinalAttempt, name: str) -> Path | None:
    source = attempt.folder / name if name else None
    if source is None or not source.is_file() or source.resolve().parent != attempt.folder.resolve():
        return None
    return source


def _copy(source: Path, shots: Path, index: int) -> str:
    target = f"{index:04d}{source.suffix or '.png'}"
    shutil.copyfile(source, shots / target)
    return target


def action_history(attempt: FinalAttempt, shots: Path) -> list[dict[str, Any]]:
    """A step per observation with its actions; then the closing step on the last screenshot. The run's last
    observation, when only the closing answer (or nothing) followed it, is the closing step's."""
    history: list[dict[str, Any]] = []
    answer, last = attempt.evidence.answer, None
    steps = _steps(attempt)
    for index, step in enumerate(steps):
        source = _screenshot(attempt, step.get("screenshot") or "")
        if source is None:
            continue
        last = (source, step.get("url") or "")
        done = [a for a in step.get("actions") or [] if a.get("tool") != "terminate"]
        if not done and index == len(steps) - 1:
            break
        status = "FAILED" if step.get("error") else "SUCCESS"
        thought = next((a.get("thought") for a in done if isinstance(a.get("thought"), str)), None)
        text = "; ".join(action_text(a) for a in done) or "page -> NO_ACTION"
        history.append({"step": len(history), "screenshot": _copy(source, shots, len(history)),
                        "url": step.get("url") or "", "action": f"{text} | {status}", "action_status": status,
                        "thought": thought})
    if last is not None:
        closing = f"TASK_COMPLETE -> ANSWER: {answer}" if answer is not None else "TASK_COMPLETE -> NO ANSWER"
        history.append({"step": len(history), "screenshot": _copy(last[0], shots, len(history)), "url": last[1],
                        "action": closing, "action_status": None, "thought": None})
    return history


def result(attempt: FinalAttempt, shots: Path) -> dict[str, Any]:
    return {"schema_version": V2, "task": attempt.evidence.goal, "task_id": attempt.task_id,
            "agent_final_answer": attempt.evidence.answer, "action_history": action_history(attempt, shots)}


def why_not(attempt: FinalAttempt) -> str:
    record = attempt.record
    if record.outcome not in EXPORTABLE:
        return f"its episode did not finish ({record.masked_key})"
    if attempt.evidence is None:
        return attempt.evidence_error
    if attempt.evidence.infra:
        return "its episode broke (infrastructure)"
    if not attempt.evidence.screenshot_paths():
        return "no screenshots"
    return ""


def export(path: Path, out: Path) -> tuple[list[str], list[tuple[str, str]], list[str]]:
    """(exported task ids, (task id, why not) of those left out, task ids that never ran)."""
    view = read_run(path)
    out.mkdir(parents=True, exist_ok=True)
    exported, left = [], []
    for attempt in view.attempts:
        why = why_not(attempt)
        if why:
            left.append((attempt.task_id, why))
            continue
        folder = out / attempt.task_id
        aside = out / f".{attempt.task_id}.{os.getpid()}"  # a reader never sees half a task folder
        shutil.rmtree(aside, ignore_errors=True)
        (aside / "trajectory").mkdir(parents=True)
        document = result(attempt, aside / "trajectory")
        (aside / "result.json").write_text(json.dumps(document, indent=2, ensure_ascii=False), encoding="utf-8")
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(aside, folder)
        exported.append(attempt.task_id)
    return exported, left, view.missing
