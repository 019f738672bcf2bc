"""The MiniWoB++ judge: the page's own reward, read from the evidence (so a run can be re-judged with no browser).

Success is what the package and BrowserGym count: the episode ended on the task's page with a raw reward above 0
(`WOB_RAW_REWARD_GLOBAL`, the reward before any time penalty).
"""

from __future__ import annotations

from typing import Any

from webeval.benchmarks.miniwob.page import STATE_KEY
from webeval.outcomes.evidence import Evidence
from webeval.outcomes.record import FailureClass, JudgeError
from webeval.outcomes.verdict import Verdict
from webeval.tasks import Task

NAME = "miniwob-reward"


def _why_not(page: dict[str, Any]) -> tuple[str, FailureClass]:
    if not page.get("on_task_page"):
        return (f"the agent left the task's page ({page.get('url')!r}, not {page.get('task_page')!r})",
                FailureClass.wrong_state)
    if not page.get("done"):
        return "the episode had not ended: the page gave no reward", FailureClass.wrong_state
    if page.get("reason") == "timed out":
        return (f"the page's time limit ({page.get('time_limit_ms', 0) / 1000:g} s) ran out",
                FailureClass.time_budget)
    return f"the page's reward is {page.get('raw_reward')} (reason: {page.get('reason')})", FailureClass.wrong_state


async def reward_judge(task: Task, evidence: Evidence) -> Verdict:
    page = (evidence.state or {}).get(STATE_KEY)
    if not isinstance(page, dict):
        raise JudgeError(f"{evidence.folder}: the evidence holds no MiniWoB++ reward (state.{STATE_KEY}): was the "
                         "episode run by webeval.benchmarks.miniwob?", kind="config")
    details = {key: page.get(key) for key in ("raw_reward", "reward", "reason", "done", "time_limit_ms")}
    raw = page.get("raw_reward")
    if page.get("on_task_page") and page.get("done") and isinstance(raw, (int, float)) and raw > 0:
        return Verdict(success=True, reason=f"the page's reward is {raw}", judge=NAME, details=details)
    reason, failure = _why_not(page)
    return Verdict(success=False, reason=reason, judge=NAME, details={**details, "failure_class": failure.value})
