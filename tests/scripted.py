"""A scripted model for tests that drive whole runs through the OpenAI-compatible stub: it reads each request's
observation (goal, step, URL, title, tabs, the last action's result) and answers with the next tool call."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from fixtures.openai_stub import Reply, call

_HEAD = re.compile(r"^Step (\d+)\. URL: (.*)$", re.M)
_GOAL = re.compile(r"^Task: (.*)$", re.M)


@dataclass(frozen=True)
class Seen:
    """What the model was shown in one request."""

    goal: str
    step: int
    url: str
    title: str
    tabs: str
    last: str  # the "Last action:" line: results, errors and browser events since the previous observation


def _texts(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    return [part.get("text", "") for part in content or [] if isinstance(part, dict) and part.get("type") == "text"]


def _line(text: str, name: str) -> str:
    match = re.search(rf"^{name}: (.*)$", text, re.M)
    return match[1] if match else ""


def seen(request: dict[str, Any]) -> Seen:
    users = [m for m in request.get("messages", []) if m.get("role") == "user"]
    goal = next((m[1] for t in _texts(users[0]) if (m := _GOAL.search(t))), "") if users else ""
    text = next((t for t in reversed(_texts(users[-1])) if _HEAD.search(t)), "") if users else ""
    head = _HEAD.search(text)
    return Seen(goal=goal, step=int(head[1]) if head else 0, url=head[2] if head else "",
                title=_line(text, "Title"), tabs=_line(text, "Tabs"), last=_line(text, "Last action"))


def click(point: tuple[int, int]) -> Reply:
    return call("computer", {"action": "click", "x": point[0], "y": point[1]})


def key(*keys: str) -> Reply:
    return call("computer", {"action": "key", "keys": list(keys)})


def type_text(text: str) -> Reply:
    return call("computer", {"action": "type", "text": text})


def wait(seconds: float) -> Reply:
    return call("computer", {"action": "wait", "seconds": seconds})


def navigate(url: str | None = None, back: bool = False) -> Reply:
    return call("navigate", {"url": url} if url is not None else {"back": back})


def focus_tab(tab_id: int) -> Reply:
    return call("tabs", {"action": "focus", "tab_id": tab_id})


def finish(answer: str = "done") -> Reply:
    return call("terminate", {"status": "success", "answer": answer})


def arguments(reply: Reply) -> dict[str, Any]:
    return json.loads(reply.tool_calls[0][1])
