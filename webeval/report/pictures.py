"""The pictures of a run's Allure results: the click marks on the steps' screenshots and an animated replay per task.

They are made once, when the report is built (`webeval report`), and not by the pytest workers after every test:
decoding and encoding images there was a third of a worker's CPU, taken from the run being measured. The workers
attach each step's screenshot as it is, and its actions as JSON; this pass reads both back from the results folder.

A result is done once it has a replay, so a second pass changes nothing and a resumed run that added results gets
only those done. The step's screenshot stays the attempt's own file (the results folder links it): the marks go on
a picture of their own, the part of the screen around the points the step aimed at, at full resolution, so that a
step costs a few kB more, not a second screenshot.
"""

from __future__ import annotations

import io
import json
import os
import re
import uuid
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from PIL import Image

from webeval.report.replay import Frame, animate, draw_marks, has_points, load, replay_frame
from webeval.report.steps import points

SCREENSHOT = "screenshot"
MARKED = "screenshot (click marked)"  # a whole marked screenshot, as earlier versions drew it
CLICKED = "where it acted (marked)"
REPLAY = "replay"
CROP = (480, 270)  # at least this much of the screen around the points: the target and what surrounds it
MARGIN = 120
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
        frames.append(replay_frame(image, frame))
        if shot["name"] == SCREENSHOT and has_points(frame.actions) and _attachment(step, CLICKED) is None:
            name = f"{uuid.uuid4()}-attachment.webp"
            _replace(folder / name, marked_crop(image, frame.actions))
            step.setdefault("attachments", []).append({"name": CLICKED, "source": name, "type": "image/webp"})
            changed = True
    replay = animate(frames)
    if replay is not None:
        name = f"{uuid.uuid4()}-attachment.webp"
        _replace(folder / name, replay)
        result.setdefault("attachments", []).append({"name": REPLAY, "source": name, "type": "image/webp"})
        changed = True
    if changed:
        _replace(path, json.dumps(result, ensure_ascii=False).encode("utf-8"))
    return changed


def marked_crop(image: Image.Image, actions: list[dict[str, Any]]) -> bytes:
    """The part of the screen around every point the actions aimed at, marked, as a lossless WebP: every pixel as
    the agent saw it, in 8 kB where a PNG of it takes 20 (method 1: 9 ms, a higher method gains nothing here)."""
    spots = [spot for action in actions for spot in points(action)]
    left, top = min(x for x, _ in spots) - MARGIN, min(y for _, y in spots) - MARGIN
    right, bottom = max(x for x, _ in spots) + MARGIN, max(y for _, y in spots) + MARGIN
    width, height = max(right - left, CROP[0]), max(bottom - top, CROP[1])
    left = min(max(0, (left + right - width) // 2), max(0, image.width - width))
    top = min(max(0, (top + bottom - height) // 2), max(0, image.height - height))
    box = (left, top, min(image.width, left + width), min(image.height, top + height))
    crop = image.crop(box)
    moved = [_moved(action, box[0], box[1]) for action in actions]
    draw_marks(crop, moved)
    out = io.BytesIO()
    crop.save(out, "WEBP", lossless=True, method=1)
    return out.getvalue()


def _moved(action: dict[str, Any], dx: int, dy: int) -> dict[str, Any]:
    """The action with its points in the crop's coordinates."""
    moved = dict(action)
    for x, y in (("x", "y"), ("to_x", "to_y")):
        if isinstance(action.get(x), int) and isinstance(action.get(y), int):
            moved[x], moved[y] = action[x] - dx, action[y] - dy
    return moved


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
