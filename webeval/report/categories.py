"""How an outcome reads in Allure: its status, a message that starts with our outcome prefix, and the categories
that sort results by those prefixes (why an agent failed, not only that it did)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from webeval.outcomes.record import FailureClass, Outcome

_REST = r"[\s\S]*"  # the rest of the message, newlines included (Allure 2 matches the whole message)


def _agent_failure(name: str, *classes: FailureClass) -> dict[str, Any]:
    """The category of the failed results whose message starts with one of these failure classes."""
    kinds = "|".join(failure.value for failure in classes)
    return {"name": name, "matchedStatuses": ["failed"],
            "messageRegex": (f"^({kinds})" if len(classes) > 1 else f"^{kinds}") + _REST}


# Allure 2's categories.json format; Allure 3 takes the same rules from its config. The first match wins.
CATEGORIES: list[dict[str, Any]] = [
    {"name": "Infrastructure", "matchedStatuses": ["skipped", "broken", "failed", "unknown"],
     "messageRegex": r"^infra\[" + _REST,
     "description": "The browser, display, network or model endpoint broke: masked, never a 0; the run is incomplete."},
    {"name": "Judge failed", "matchedStatuses": ["skipped", "broken", "failed", "unknown"],
     "messageRegex": "^judge_failed" + _REST,
     "description": "The judge gave no verdict (transport, timeout, authentication, schema): re-judge from evidence."},
    {"name": "Precondition", "matchedStatuses": ["skipped", "unknown"],
     "messageRegex": r"^precondition\[" + _REST,
     "description": "Not run: a precondition failed before the first action."},
    {"name": "Missing", "matchedStatuses": ["skipped", "unknown"],
     "messageRegex": "^missing" + _REST,
     "description": "No result at all (interrupted run, crashed worker, not selected): counted in N, not scored."},
    _agent_failure("Invalid model output", FailureClass.invalid_output),
    _agent_failure("Wrong answer", FailureClass.wrong_answer, FailureClass.wrong_state),
    _agent_failure("No answer", FailureClass.no_answer, FailureClass.gave_up, FailureClass.refusal),
    _agent_failure("Step budget", FailureClass.step_budget),
    _agent_failure("Time budget", FailureClass.time_budget),
    _agent_failure("Other agent failure", FailureClass.closed_last_tab, FailureClass.judge_unparseable,
                   FailureClass.replay_diverged, FailureClass.safety_check),
    {"name": "Harness error", "matchedStatuses": ["broken"],
     "messageRegex": "^harness_error" + _REST,
     "description": "A bug of the harness, not of the agent."},
]

_STATUS = {
    Outcome.passed: "passed",
    Outcome.failed: "failed",
    Outcome.infra_error: "skipped",
    Outcome.judge_failed: "skipped",
    Outcome.not_run: "skipped",
    Outcome.harness_error: "broken",
}


def allure_status(outcome: Outcome | None) -> str:
    """None is a task with no result at all: skipped, like every other outcome that is not scored."""
    return _STATUS[outcome] if outcome is not None else "skipped"


def status_message(outcome: Outcome | None, reason: str = "", *, kind: str | None = None,
                   failure_class: str | None = None) -> str:
    """The message Allure shows, prefixed so that the categories above can sort it."""
    reason = reason.strip()
    if outcome is None:
        return "missing: " + (reason or "this task has no result in the run")
    if outcome is Outcome.passed:
        return reason
    if outcome is Outcome.failed:
        return f"{failure_class or 'wrong_answer'}: {reason}"
    root, prefix = {
        Outcome.infra_error: ("infra[", f"infra[{kind or 'unknown'}]"),
        Outcome.judge_failed: ("judge_failed", "judge_failed"),
        Outcome.not_run: ("precondition[", f"precondition[{kind or 'skipped'}]"),
        Outcome.harness_error: ("harness_error", "harness_error"),
    }[outcome]
    return reason if reason.startswith(root) else f"{prefix}: {reason}"


def write_categories(results_dir: Path) -> None:
    (results_dir / "categories.json").write_text(json.dumps(CATEGORIES, indent=2), encoding="utf-8")
