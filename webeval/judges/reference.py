"""The reference judge: the final answer against a task's golden answers, with no model.

WebVoyager's golden answers are short descriptions more than exact strings ("'Swedish Meatballs I', prep time
25 mins"), so an answer meets one when it contains it whole, or contains each of its parts: the text is split at
';' and ',' (quoted names stay whole, parenthesised remarks are dropped), and quoted names joined by 'or' are
alternatives. Matching is after the verifier's normalization (case, accents, punctuation, thousands separators).
"""

from __future__ import annotations

import re
from typing import Any

from webeval.judges.verifier import normalize
from webeval.outcomes.evidence import Evidence
from webeval.outcomes.record import JudgeError
from webeval.outcomes.verdict import Verdict
from webeval.tasks import Task

_QUOTED = re.compile(r"'([^']+)'|\"([^\"]+)\"")
_REMARK = re.compile(r"\([^)]*\)")
_ALTERNATIVES = re.compile(r"^\s*(['\"][^'\"]+['\"]\s*(?:or\s+)?)+\s*\.?\s*$", re.IGNORECASE)


def _contains(said: str, wanted: str) -> bool:
    wanted = normalize(wanted)
    return bool(wanted) and f" {wanted} " in f" {said} "


def parts(golden: str) -> list[list[str]]:
    """The facts of a golden answer, each a list of alternatives (any one of them will do)."""
    if _ALTERNATIVES.match(golden) and re.search(r"\bor\b", golden, re.IGNORECASE):
        return [[a or b for a, b in _QUOTED.findall(golden)]]
    facts: list[list[str]] = []
    quoted = [a or b for a, b in _QUOTED.findall(golden)]
    rest = _REMARK.sub(" ", _QUOTED.sub(" ", golden))
    facts += [[q] for q in quoted]
    facts += [[piece.strip()] for piece in re.split(r"[;,\n]", rest) if normalize(piece)]
    return facts


def golden_met(answer: str, golden: str) -> bool:
    said = normalize(answer)
    if _contains(said, golden) or _contains(said, _REMARK.sub(" ", golden)):
        return True
    facts = parts(golden)
    return bool(facts) and all(any(_contains(said, alt) for alt in fact) for fact in facts)


def reference_verdict(task: Task, answer: str | None) -> Verdict:
    golden = task.reference_answers or []
    if not golden:
        raise JudgeError(f"task {task.id} has no golden reference answer: the reference judge cannot decide it",
                         kind="config")
    details: dict[str, Any] = {"references": golden, "answer": answer}
    if answer is None:
        return Verdict(success=False, reason="no answer was given", judge="reference", details=details)
    met = next((g for g in golden if golden_met(answer, g)), None)
    details["matched"] = met
    if met is None:
        return Verdict(success=False, reason=f"the answer meets none of the golden answers {golden!r}",
                       judge="reference", details=details)
    return Verdict(success=True, reason=f"the answer meets the golden answer {met!r}", judge="reference",
                   details=details)


async def reference_judge(task: Task, evidence: Evidence) -> Verdict:
    return reference_verdict(task, evidence.answer)
