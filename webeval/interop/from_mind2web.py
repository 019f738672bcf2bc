"""Online-Mind2Web's result layout: a folder per task (named by its task id) with `result.json` and `trajectory/`.

Two schemas, read as Online-Mind2Web's own `src/run.py` reads them:
- v1: `task`, `action_history` (strings), `thoughts` (strings), `final_result_response`; the screenshots are the
  files of `trajectory/` ordered by the first number in their names. Actions and thoughts pair by position; the
  source has no URL of each page.
- v2 (`"schema_version": "online-mind2web-v2"`): `task`, `agent_final_answer` and `action_history` as steps
  `{step, screenshot, url, action, action_status, thought}`, each naming its screenshot (a file of `trajectory/`).
A last action that starts with TASK_COMPLETE is the closing answer (upstream leaves the final step out of the action
history); in v1 without `final_result_response`, the answer is read from it ("TASK_COMPLETE -> ANSWER: ...").
`input_image_paths`, `reference_length` and any other field are kept in the evidence as the source's details.
"""

from __future__ import annotations

import base64
import binascii
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from webeval.interop.imported import ImportedTrajectory, SourceAction, Unreadable, inside, read_json
from webeval.tasks.model import SAFE_ID

RESULT = "result.json"
TRAJECTORY = "trajectory"
V2 = "online-mind2web-v2"
CLOSING = "TASK_COMPLETE"
_NUMBER = re.compile(r"\d+")
_DATA_URI = re.compile(r"^data:image/(png|jpe?g|webp);base64,(.*)$", re.DOTALL)
KEPT_FIELDS = ("input_image_paths", "reference_length", "website", "level")


def _result(folder: Path) -> dict[str, Any]:
    result = read_json(folder, RESULT)
    if not isinstance(result, dict):
        raise Unreadable(f"{RESULT}: not a JSON object")
    return result


def _strings(result: dict[str, Any], key: str) -> list[str]:
    value = result.get(key) or []
    if not isinstance(value, list) or not all(isinstance(item, str) or item is None for item in value):
        raise Unreadable(f"{RESULT}: {key} is not a list of strings")
    return [item or "" for item in value]


def _answer_in(action: str) -> str | None:
    _, said, rest = action.partition("ANSWER:")
    return rest.strip() if said else None


def _v1_screenshots(folder: Path) -> list[tuple[str, Path]]:
    shots = folder / TRAJECTORY
    if not shots.is_dir():
        raise Unreadable(f"no {TRAJECTORY}/ folder")
    named = [p for p in shots.iterdir() if p.is_file()]
    unnumbered = [p.name for p in named if not _NUMBER.search(p.name)]
    if unnumbered:
        raise Unreadable(f"{TRAJECTORY}/{unnumbered[0]}: no step number in its name")
    named.sort(key=lambda p: (int(_NUMBER.findall(p.name)[0]), p.name))
    return [(p.name, p) for p in named]


def _v1(folder: Path, result: dict[str, Any]) -> tuple[list[tuple[str, Path]], list[SourceAction], list[str], Any]:
    history, thoughts = _strings(result, "action_history"), _strings(result, "thoughts")
    actions = [SourceAction(text=text, thought=(thoughts[i] or None) if i < len(thoughts) else None,
                            final=text.startswith(CLOSING)) for i, text in enumerate(history)]
    answer = result.get("final_result_response")
    if answer is None and actions and actions[-1].final:
        answer = _answer_in(actions[-1].text)
    return _v1_screenshots(folder), actions, [], answer


def _step_screenshot(folder: Path, index: int, name: Any, decoded: Path) -> tuple[str, Path]:
    """The step's screenshot file; one given inline (a data URI) is written under `decoded` first."""
    if not isinstance(name, str) or not name:
        raise Unreadable(f"{RESULT}: step {index} names no screenshot")
    encoded = _DATA_URI.match(name)
    if encoded:
        try:
            data = base64.b64decode(encoded[2], validate=True)
        except binascii.Error:
            raise Unreadable(f"{RESULT}: step {index}'s screenshot is not valid base64") from None
        named = f"inline-{index:04d}.{encoded[1].replace('jpeg', 'jpg')}"
        decoded.mkdir(parents=True, exist_ok=True)
        (decoded / named).write_bytes(data)
        return named, decoded / named
    path = inside(folder / TRAJECTORY, name)
    if path is None:
        raise Unreadable(f"{RESULT}: step {index}'s screenshot {name!r} is not a file of {TRAJECTORY}/")
    return name, path


def _v2(folder: Path, result: dict[str, Any], decoded: Path) -> tuple[list, list[SourceAction], list[str], Any]:
    steps = result.get("action_history")
    if not isinstance(steps, list) or not all(isinstance(step, dict) for step in steps):
        raise Unreadable(f"{RESULT}: action_history is not a list of steps")
    shots, actions, urls = [], [], []
    for index, step in enumerate(steps):
        shots.append(_step_screenshot(folder, index, step.get("screenshot"), decoded))
        text = step.get("action") if isinstance(step.get("action"), str) else ""
        thought = step.get("thought") if isinstance(step.get("thought"), str) else None
        actions.append(SourceAction(text=text, thought=thought,
                                    final=index == len(steps) - 1 and text.startswith(CLOSING)))
        urls.append(step.get("url") if isinstance(step.get("url"), str) else "")
    return shots, actions, urls, result.get("agent_final_answer")


def read_folder(folder: Path, decoded: Path) -> ImportedTrajectory:
    """A task folder; screenshots given inline (data URIs) are written under `decoded`."""
    if not SAFE_ID.fullmatch(folder.name) or ".." in folder.name:
        raise Unreadable("the folder's name is not a task id webeval can keep (letters, digits, '_', '-', '.')")
    result = _result(folder)
    v2 = result.get("schema_version") == V2
    shots, actions, urls, answer = _v2(folder, result, decoded / folder.name) if v2 else _v1(folder, result)
    if not shots:
        raise Unreadable(f"no screenshots in {TRAJECTORY}/")
    goal = result.get("task") if isinstance(result.get("task"), str) else ""
    known = [url for url in urls if url.startswith(("http://", "https://"))]
    trajectory = ImportedTrajectory(
        folder=folder, task_id=folder.name, site=urlsplit(known[0]).hostname or "" if known else "",
        goal=goal.strip(), answer=answer if isinstance(answer, str) else None, screenshots=shots,
        actions=actions, urls=urls, start_url=known[0] if known else None,
        read={RESULT, *(f"{TRAJECTORY}/{name}" for name, path in shots if path.parent.name == TRAJECTORY)},
        details={"schema": V2 if v2 else "v1", **{k: result[k] for k in KEPT_FIELDS if k in result}})
    if result.get("task_id") not in (None, folder.name):
        trajectory.details["result_task_id"] = result["task_id"]  # upstream judges by the folder's name too
    trajectory.site = trajectory.site.removeprefix("www.") or "online-mind2web"
    trajectory.note_missing()
    trajectory.lacks.append("titles")
    return trajectory


def folders(root: Path) -> list[Path]:
    return sorted(path for path in root.iterdir() if path.is_dir())
