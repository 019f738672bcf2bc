"""The programmatic verifier: reference answers with normalized matching, and checks of server-side state."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from webeval.outcomes.evidence import Evidence
from webeval.outcomes.record import JudgeError
from webeval.outcomes.verdict import Verdict
from webeval.tasks import StateCheck, Task, VerifierSpec

_DROP = re.compile(r"[^\w.%/:+-]+")


def normalize(text: str) -> str:
    """Casefolded, accents and currency and punctuation dropped, whole-number cents dropped, whitespace collapsed.

    '$1,299.00 ' -> '1299'; 'Crème Brûlée' -> 'creme brulee'; '-5 °C' keeps its sign.
    """
    text = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text).casefold())
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).replace(",", "")
    text = _DROP.sub(" ", text)
    text = re.sub(r"(?<!\w)(?:[.:/]|[+-](?!\d))+|[.:/+-]+(?!\w)", " ", text)
    text = re.sub(r"(\d)\.0+(?!\d)", r"\1", text)
    return " ".join(text.split())


def answer_matches(answer: str, references: list[str]) -> str | None:
    """The first reference that the answer equals or contains as whole words (after normalizing), else None."""
    said = f" {normalize(answer)} "
    for reference in references:
        wanted = normalize(reference)
        if wanted and f" {wanted} " in said:
            return reference
    return None


def lookup(document: Any, path: str) -> Any:
    node = document
    for part in path.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise KeyError(path)
    return node


def _same(actual: Any, expected: Any) -> bool:
    """Equality that never takes True for 1: JSON's booleans and numbers are different things."""
    if isinstance(actual, bool) or isinstance(expected, bool):
        return type(actual) is type(expected) and actual == expected
    if isinstance(actual, dict) and isinstance(expected, dict):
        return actual.keys() == expected.keys() and all(_same(actual[k], expected[k]) for k in expected)
    if isinstance(actual, list) and isinstance(expected, list):
        return len(actual) == len(expected) and all(_same(a, e) for a, e in zip(actual, expected))
    return actual == expected


def _contains(actual: Any, expected: Any) -> bool:
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            key in actual and _contains(actual[key], value) for key, value in expected.items()
        )
    if isinstance(expected, list):
        return isinstance(actual, list) and all(any(_contains(a, e) for a in actual) for e in expected)
    return _same(actual, expected)


def check_state(check: StateCheck, state: dict[str, Any]) -> str | None:
    """None when the check holds, else why it does not."""
    try:
        actual = lookup(state, check.path)
    except KeyError:
        return f"state has no {check.path!r}"
    if "equals" in check.model_fields_set and not _same(actual, check.equals):
        return f"{check.path} is {actual!r}, expected {check.equals!r}"
    if "contains" in check.model_fields_set and not _contains(actual, check.contains):
        return f"{check.path} is {actual!r}, expected it to contain {check.contains!r}"
    return None


def verify(spec: VerifierSpec, answer: str | None, state: dict[str, Any]) -> Verdict:
    problems: list[str] = []
    details: dict[str, Any] = {}
    if spec.answer:
        matched = answer_matches(answer or "", spec.answer) if answer is not None else None
        details["answer"] = {"given": answer, "references": spec.answer, "matched": matched}
        if answer is None:
            problems.append("no answer was given")
        elif matched is None:
            problems.append(f"answer {answer!r} matches none of {spec.answer!r}")
    for check in spec.state:
        problem = check_state(check, state)
        details[check.path] = problem or "ok"
        if problem:
            problems.append(problem)
    if problems:
        return Verdict(success=False, reason="; ".join(problems), judge="verifier", details=details)
    return Verdict(success=True, reason="every check holds", judge="verifier", details=details)


async def verifier_judge(task: Task, evidence: Evidence) -> Verdict:
    """The judge of offline tasks: their own programmatic verifier, over the evidence."""
    if task.verifier is None:
        raise JudgeError(f"task {task.id} has no verifier", kind="config")
    return verify(task.verifier, evidence.answer, evidence.state or {})
