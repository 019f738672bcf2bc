"""WebVoyager's own `results/` layout: a folder `task<id>` per task, with `interact_messages.json` (the whole
conversation) and `screenshot<N>.png` (some also `screenshot<N>_no_box.png`, the page without its labels).

What is read is what the original automatic evaluation reads, the same way, so that the `webvoyager` judge protocol
sends it the same request: the task is the text between "Now given a task:" and "Please interact with" in the first
user turn (on one line); the answer is read from the last turn only when it holds "Action: ANSWER", as the text after
"ANSWER" and "; " (up to a "]"); the screenshots are the files named `screenshot<N>.png`, ordered by N. Each assistant
turn is kept as an action (its "Action:" part) with its thought and the whole reply; the start URL is read from the
first user turn. The source has no URL of each page and no page titles.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from webeval.interop.imported import ImportedTrajectory, SourceAction, Unreadable, read_json

MESSAGES = "interact_messages.json"
FOLDER_PREFIX = "task"
_TASK = re.compile(r"Now given a task:(.+?)Please interact with")
_START_URL = re.compile(r"Please interact with (https?://\S+?)(?: and get the answer|\s|$)")
_ANSWER = re.compile(r"ANSWER[; ]+\[?(.[^\]]*)\]?")
_SHOT = re.compile(r"screenshot(\d+)\.png")
_UNMARKED = re.compile(r"^screenshot(\d+)_no_box\.png$")
_THOUGHT = re.compile(r"Thought:(.*?)(?:\n\s*Action:|$)", re.DOTALL)


def text_of(message: dict[str, Any]) -> str | None:
    """A turn's text: its content, or the first part's text when the content is a list of parts."""
    content = message.get("content")
    if isinstance(content, list):
        first = content[0] if content else None
        return first.get("text") if isinstance(first, dict) and isinstance(first.get("text"), str) else None
    return content if isinstance(content, str) else None


def _messages(folder: Path) -> list[dict[str, Any]]:
    messages = read_json(folder, MESSAGES)
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        raise Unreadable(f"{MESSAGES}: not a list of chat turns")
    return messages


def screenshots(folder: Path) -> list[tuple[str, Path]]:
    """The files the original evaluation takes as screenshots, ordered by their number (ties by name)."""
    found = [(name, int(match[1])) for name in sorted(p.name for p in folder.iterdir() if p.is_file())
             if (match := _SHOT.search(name))]
    found.sort(key=lambda item: item[1])
    return [(name, folder / name) for name, _ in found]


def answer_of(messages: list[dict[str, Any]]) -> str | None:
    last = messages[-1].get("content") if len(messages) > 1 else None
    if not isinstance(last, str) or "Action: ANSWER" not in last:
        return None
    match = _ANSWER.search(last)
    return match[1].strip() if match else None


def _action(reply: str) -> SourceAction:
    thought = _THOUGHT.search(reply)
    _, said, action = reply.rpartition("Action:")
    text = action.strip() if said else ""
    return SourceAction(text=text, thought=thought[1].strip() if thought else None, raw=reply,
                        final=text.startswith("ANSWER"))


def read_folder(folder: Path) -> ImportedTrajectory:
    if not folder.name.startswith(FOLDER_PREFIX) or len(folder.name) == len(FOLDER_PREFIX):
        raise Unreadable(f"not a WebVoyager result folder (named {FOLDER_PREFIX}<task id>)")
    task_id = folder.name[len(FOLDER_PREFIX):]
    messages = _messages(folder)
    shots = screenshots(folder)
    if not shots:
        raise Unreadable("no screenshot<N>.png")
    first = text_of(messages[1]) if len(messages) > 1 else None
    task = _TASK.search(first) if first and "Now given a task" in first else None
    start = _START_URL.search(first or "")
    replies = [m.get("content") for m in messages if m.get("role") == "assistant"]
    actions = [_action(reply) for reply in replies if isinstance(reply, str)]
    unmarked = sorted(((int(m[1]), name) for p in folder.iterdir() if (m := _UNMARKED.match(name := p.name))))
    trajectory = ImportedTrajectory(
        folder=folder, task_id=task_id, site=task_id.rpartition("--")[0] or task_id,
        goal=task[1].strip() if task else "", answer=answer_of(messages), screenshots=shots, actions=actions,
        start_url=start[1] if start else None, read={MESSAGES, *(name for name, _ in shots)},
        kept_files=[(name, folder / name) for _, name in unmarked],
        details={"turns": len(messages), "unmarked_screenshots": [name for _, name in unmarked]})
    trajectory.read.update(name for name, _ in trajectory.kept_files)
    trajectory.note_missing()
    trajectory.lacks.append("titles")
    return trajectory


def folders(root: Path) -> list[Path]:
    return sorted(path for path in root.iterdir() if path.is_dir())
