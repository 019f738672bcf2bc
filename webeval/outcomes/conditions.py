"""A run's conditions: what its score depends on besides the agent's luck, by name (population, the rendered task
texts, the policy's model and profile, the judge and its convention, the browser provider, the screen, a preset).

The first session that writes a run directory records its conditions (`conditions.json`); a later session (a
resume, a shard, a re-run into the same directory) and `webeval merge` compare theirs with them. A difference is
refused with one line that names it, unless mixing was allowed, and then the run keeps which session differed in
what, for its summary to list.
"""

from __future__ import annotations

from typing import Any, Mapping

CONDITIONS = "conditions.json"
NONE = "-"  # a condition a session did not have (no preset, no judge)

Conditions = dict[str, str]
Differences = dict[str, tuple[str, str]]


class ConditionsDiffer(ValueError):
    """A session (or a run to merge) whose conditions are not the run's; the message is one line."""


def differences(first: Mapping[str, str], this: Mapping[str, str]) -> Differences:
    """Each condition whose value differs, as (the first session's, this one's); a missing one reads as `-`."""
    names = dict.fromkeys([*first, *this])
    return {name: (first.get(name, NONE), this.get(name, NONE)) for name in names
            if first.get(name, NONE) != this.get(name, NONE)}


def describe(found: Differences) -> str:
    """`screen 1280x720 -> 1920x1080; policy model a -> b`: the first session's value, then the other's."""
    return "; ".join(f"{name} {before} -> {after}" for name, (before, after) in found.items())


def refusal(where: str, found: Differences, whose: str = "this session's") -> str:
    return (f"{where}: {whose} conditions differ from the run's first session: {describe(found)}; use a new run "
            "directory, or pass --allow-mixed to mix them (the summary then lists the differences)")


def read_document(data: Any) -> tuple[Conditions, dict[str, Differences]]:
    """The first session's conditions and, by session, what each later one ran with differently."""
    if not isinstance(data, dict):
        return {}, {}
    first = {str(k): str(v) for k, v in (data.get("first") or {}).items()}
    mixed = {str(session): {str(name): (str(pair[0]), str(pair[1])) for name, pair in found.items()}
             for session, found in (data.get("mixed") or {}).items() if isinstance(found, dict)}
    return first, mixed


def document(first: Conditions, first_session: str, mixed: Mapping[str, Differences]) -> dict[str, Any]:
    return {"first": dict(first), "first_session": first_session,
            "mixed": {session: {name: list(pair) for name, pair in found.items()} for session, found in mixed.items()}}


def mixed_lines(mixed: Mapping[str, Differences]) -> list[str]:
    """One line per session that ran with other conditions (`--allow-mixed`), for the summary."""
    return [f"session {session}: {describe(found)}" for session, found in mixed.items()]
