"""The sessions that wrote into a run directory: one line each in `sessions.jsonl`, with what they ran with.

A run can be made by several sessions (a resumed run, re-runs, merged shards), possibly with different versions of
the harness, its browser or its packages. summary.json states the latest session's versions, and names the ones
that differed between sessions, so that no score silently mixes two set-ups.
"""

from __future__ import annotations

import json
import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from filelock import FileLock

from webeval.outcomes.whole_lines import append_line

SESSIONS = "sessions.jsonl"


def append_session(run_path: Path, session: str, versions: dict[str, str], **details: Any) -> None:
    """The session's line: its versions, and what else it ran with (its conditions, the recipe lock of its model,
    the writer it took the run directory over from)."""
    _append(run_path, {"session": session, "finished_at": datetime.now(timezone.utc).isoformat(),
                       "versions": versions, **{name: value for name, value in details.items() if value}})


def copy_sessions(source: Path, target: Path) -> None:
    """A merged run keeps the sessions of every run directory it was made from."""
    for entry in read_sessions(source):
        _append(target, entry)


def _append(run_path: Path, entry: dict[str, Any]) -> None:
    line = (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8")
    # Whole lines only (a full disk leaves none half written); sessions finishing at once take turns.
    with FileLock(str(run_path / f".{SESSIONS}.lock")):
        append_line(run_path / SESSIONS, line)


def read_sessions(run_path: Path) -> list[dict[str, Any]]:
    path = run_path / SESSIONS
    if not path.is_file():
        return []
    sessions = []
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
        try:
            entry = json.loads(line) if line.strip() else None
        except json.JSONDecodeError:
            entry = None
        if isinstance(entry, dict) and isinstance(entry.get("versions"), dict):
            sessions.append(entry)
        elif line.strip():
            warnings.warn(f"{path}:{number}: ignoring a torn or corrupt session line", stacklevel=2)
    return sessions


def summary_versions(run_path: Path) -> dict[str, Any]:
    """For summary.json: `versions` of the latest session, `versions_differ`: what changed between sessions."""
    sessions = read_sessions(run_path)
    if not sessions:
        return {}
    latest = sessions[-1]["versions"]
    names = dict.fromkeys(name for session in sessions for name in session["versions"])
    differ = {name: sorted({str(s["versions"].get(name, "-")) for s in sessions}) for name in names}
    found = {"versions": latest, "versions_differ": {name: seen for name, seen in differ.items() if len(seen) > 1}}
    locks = [session["recipe_lock"] for session in sessions if isinstance(session.get("recipe_lock"), dict)]
    return {**found, "recipe_lock": locks[-1]} if locks else found
