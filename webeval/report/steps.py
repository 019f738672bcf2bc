"""Agent steps as a reviewer reads them: a title per action, and the screen points an action aimed at."""

from __future__ import annotations

from typing import Any

from webeval.outcomes.evidence import IMPORTED_ACTION

_MAX_TEXT = 48


def _short(text: Any) -> str:
    text = str(text).replace("\n", " ")
    return repr(text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT - 1] + "…")


def describe(action: dict[str, Any]) -> str:
    """One action as a short title: `click (334, 77)`, `type 'ephemeral'`, `terminate success: 'Tomás'`."""
    tool = action.get("tool")
    if tool == "computer":
        kind = action.get("action", "?")
        at = f" ({action['x']}, {action['y']})" if "x" in action and "y" in action else ""
        if kind == "drag":
            return f"drag{at} → ({action.get('to_x')}, {action.get('to_y')})"
        if kind == "type":
            return f"type {_short(action.get('text', ''))}"
        if kind == "key":
            return "key " + "+".join(action.get("keys") or [])
        if kind == "scroll":
            return f"scroll {action.get('direction', '')} {action.get('amount', '')}".rstrip() + at
        if kind == "wait":
            return f"wait {action.get('seconds', '')} s"
        return kind + at
    if tool == "navigate":
        if action.get("back"):
            return "navigate back"
        if action.get("forward"):
            return "navigate forward"
        return f"navigate {action.get('url', '')}"
    if tool == "tabs":
        target = action.get("url") if action.get("action") == "new" else action.get("tab_id")
        return f"tabs {action.get('action', '')} {target}"
    if tool == "terminate":
        return f"terminate {action.get('status', '')}: {_short(action.get('answer', ''))}"
    if tool == IMPORTED_ACTION:
        return _short(action.get("text", ""))
    return str(tool or "action")


def step_title(number: int, actions: list[dict[str, Any]], error: str | None) -> str:
    if error is not None:
        return f"{number}. invalid reply"
    if not actions:
        return f"{number}. no action"
    return f"{number}. " + "; ".join(describe(a) for a in actions)


def points(action: dict[str, Any]) -> list[tuple[int, int]]:
    """Where on the screenshot an action aimed: its point, and for a drag where it ended."""
    if action.get("tool") != "computer":
        return []
    pairs = [(action.get("x"), action.get("y")), (action.get("to_x"), action.get("to_y"))]
    return [(int(x), int(y)) for x, y in pairs if isinstance(x, int) and isinstance(y, int)]


def step_length_s(timings: dict[str, float], latency_s: float) -> float:
    """A step's measured length: laid end to end from its test's start, the steps match the test's timeline."""
    return timings.get("step") or sum(timings.values()) or latency_s


def step_parameters(url: str, title: str, results: list[str], timings: dict[str, float],
                    usage: dict[str, int]) -> list[tuple[str, str]]:
    """A step's rows in the report, one line each (its screenshot comes after them, so they are kept short); the
    URL as the caller gives it (redacted)."""
    rows = [("url", url), ("title", title)]
    if results:
        rows.append(("result", "; ".join(results)))
    if timings:
        rows.append(("seconds", " · ".join(f"{name} {value:.2f}" for name, value in timings.items())))
    if usage:
        rows.append(("tokens", " · ".join(f"{name.removesuffix('_tokens')} {value}" for name, value in usage.items())))
    return rows
