"""The pictures of a run's Allure results: the click marks on the steps' screenshots and an animated replay per task.

They are made once, when the report is built (`webeval report`), and not by the pytest workers after every test:
decoding and encoding images there was a third of a worker's CPU, taken from the run being measured. The workers
attach each step's screenshot as it is, and its actions as JSON; this pass reads both back from the results folder.

A result is done once it has a replay, so a second pass changes nothing and a resumed run that added results gets
only those done. Marks are drawn on the results folder's copy of a screenshot, never on the run's trajectory.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from webeval.report.replay import Frame, animate, draw_marks, has_points, load, replay_frame
from webeval.runtime.observe import encode_png

SCREENSHOT = "screenshot"
MARKED = "screenshot (click marked)"
REPLAY = "replay"
_NUMBER = re.compile(r"(\d+)\. ")  # a step's title starts with its number (webeval.report.steps.step_title)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _replace(path: Path, data: bytes) -> None:
    """Write through a temporary file: a reader never sees half a file, and a file that was a link to another
    (a trajectory's screenshot) gets a new inode instead of changing the other."""
    aside = path.with_name(path.name + ".tmp")
    aside.write_bytes(data)
    aside.replace(path)


def _attachment(owner: dict[str, Any], *names: str) -> dict[str, Any] | None:
    for attachment in owner.get("attachments") or []:
        if attachment.get("name") in names and attachment.get("source"):
            return attachment
    return None


def _pending(result: Any) -> bool:
    return (isinstance(result, dict) and _attachment(result, REPLAY) is None
            and any(_attachment(step, SCREENSHOT, MARKED) for step in result.get("steps") or []))


def _actions(folder: Path, step: dict[str, Any]) -> list[dict[str, Any]]:
    found = _attachment(step, "actions")
    actions = _read_json(folder / found["source"]) if found is not None else None
    return [a for a in actions if isinstance(a, dict)] if isinstance(actions, list) else []


def _frame(folder: Path, step: dict[str, Any], shot: dict[str, Any], index: int) -> Frame:
    number = _NUMBER.match(step.get("name") or "")
    # A failed step is an invalid reply: the replay says so, with nothing marked.
    error = ((step.get("statusDetails") or {}).get("message") or "") if step.get("status") == "failed" else None
    return Frame(folder / shot["source"], int(number.group(1)) if number else index + 1, _actions(folder, step), error)


def complete(path: Path) -> bool:
    """Marks and replay of one result file; False when it needs none or cannot be read."""
    result = _read_json(path)
    if not _pending(result):
        return False
    folder, frames, changed = path.parent, [], False
    for index, step in enumerate(result["steps"]):
        shot = _attachment(step, SCREENSHOT, MARKED)
        image = load(folder / shot["source"]) if shot is not None else None
        if image is None:
            continue  # the replay shows the steps that have a screenshot
        frame = _frame(folder, step, shot, index)
        frames.append(replay_frame(image, frame))  # from the unmarked pixels: it draws its own, scaled marks
        if shot["name"] == SCREENSHOT and has_points(frame.actions):
            draw_marks(image, frame.actions)
            _replace(frame.screenshot, encode_png(image))
            shot["name"], changed = MARKED, True
    replay = animate(frames)
    if replay is not None:
        name = f"{uuid.uuid4()}-attachment.webp"
        _replace(folder / name, replay)
        result.setdefault("attachments", []).append({"name": REPLAY, "source": name, "type": "image/webp"})
        changed = True
    if changed:
        _replace(path, json.dumps(result, ensure_ascii=False).encode("utf-8"))
    return changed


def _complete_or_skip(path: Path) -> bool:
    try:
        return complete(path)
    except (OSError, ValueError, TypeError, AttributeError, KeyError):
        return False  # a result not shaped like ours, or a full disk: the report is still built, without them


def add_pictures(results_dir: Path) -> int:
    """Marks and replays for every result of the folder that has none yet; returns how many results got them."""
    todo = [path for path in sorted(results_dir.glob("*-result.json")) if _pending(_read_json(path))]
    workers = min(os.cpu_count() or 1, len(todo))
    if workers <= 1:
        return sum(map(_complete_or_skip, todo))
    # Results are independent and a run has thousands of steps: one result file per task of the pool.
    with ProcessPoolExecutor(workers) as pool:
        return sum(pool.map(_complete_or_skip, todo))
