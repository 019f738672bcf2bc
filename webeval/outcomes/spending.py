"""What a run spent: tokens and dollars, policy and judge apart, over every attempt on record.

Every attempt counts, not only the final one: an attempt retried after an infrastructure error, or a verdict judged
again, was paid for. The policy's tokens of one attempt folder are counted once (a re-judged record repeats them);
each judgement's tokens are counted with the record it made. A side is priced only when every attempt that used
tokens on it had a price table: otherwise its dollars are None, never a partial sum read as the whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from webeval.outcomes.cost import TOKENS, usd
from webeval.outcomes.record import AttemptRecord

SIDES = ("policy", "judge")


@dataclass
class Side:
    tokens: dict[str, float] = field(default_factory=dict)
    usd: float = 0.0
    unpriced: int = 0  # attempts that used tokens on this side without a price

    def add(self, usage: dict[str, float], cost: float | None) -> None:
        used = False
        for key, value in usage.items():
            if value and key in TOKENS:
                self.tokens[key] = self.tokens.get(key, 0) + value
                used = True
        if cost is not None:
            self.usd += cost
        elif used:
            self.unpriced += 1

    def figures(self) -> dict[str, Any]:
        return {**{key: int(self.tokens.get(key, 0)) for key in TOKENS},
                "usd": None if self.unpriced else round(self.usd, 8)}


@dataclass
class Spending:
    policy: Side = field(default_factory=Side)
    judge: Side = field(default_factory=Side)

    @property
    def usd(self) -> float | None:
        sides = (self.policy, self.judge)
        return None if any(side.unpriced for side in sides) else round(sum(side.usd for side in sides), 8)

    @property
    def used(self) -> bool:
        return bool(self.policy.tokens or self.judge.tokens or self.policy.usd or self.judge.usd)


def policy_counted(records: Iterable[AttemptRecord]) -> Iterator[tuple[AttemptRecord, bool]]:
    """Each record, and whether its policy tokens count: once per attempt folder (a re-judged record repeats its
    attempt's), always for a record without one."""
    folders: set[tuple[str, str]] = set()
    for record in records:
        folder = (record.task_id, record.path)
        yield record, not record.path or folder not in folders
        folders.add(folder)


def spent(records: Iterable[AttemptRecord]) -> Spending:
    spending = Spending()
    for record, counts in policy_counted(records):
        if counts:
            spending.policy.add(record.usage, record.cost_usd.get("policy"))
        spending.judge.add(record.judge_usage, record.cost_usd.get("judge"))
    return spending


def run_cost(task_ids: Iterable[str], records: list[AttemptRecord], passed: int) -> dict[str, Any]:
    """summary.json's `cost`: per side its tokens and dollars, the run's dollars, per task that ran, per success,
    and each task's own. Empty for a run that used no tokens (an oracle's). One pass over the records: a run of
    100,000 attempts is reconciled at every session's end."""
    ids = list(task_ids)
    expected = set(ids)
    whole = Spending()
    tasks: dict[str, _TaskCost] = {}
    for record, counts in policy_counted(record for record in records if record.task_id in expected):
        task = tasks.get(record.task_id)
        if task is None:
            task = tasks[record.task_id] = _TaskCost()
        prices = record.cost_usd
        if counts and (record.usage or prices):
            task.policy_tokens += task.charge(whole.policy, record.usage, prices.get("policy"))
        if record.judge_usage or prices:
            task.judge_tokens += task.charge(whole.judge, record.judge_usage, prices.get("judge"))
    if not whole.used:
        return {}
    total = whole.usd
    return {
        "policy": whole.policy.figures(), "judge": whole.judge.figures(), "usd": total,
        "usd_per_task": round(total / len(tasks), 8) if total is not None and tasks else None,
        "usd_per_success": round(total / passed, 8) if total is not None and passed else None,
        "tasks": {task_id: tasks[task_id].figures() for task_id in ids if task_id in tasks},
    }


class _TaskCost:
    """One task's share of the run's spending, counted as the run's sides are."""

    __slots__ = ("usd", "unpriced", "policy_tokens", "judge_tokens")

    def __init__(self) -> None:
        self.usd, self.unpriced, self.policy_tokens, self.judge_tokens = 0.0, False, 0.0, 0.0

    def charge(self, side: Side, usage: dict[str, float], cost: float | None) -> float:
        """One attempt's usage on one side, added to the run's side and to this task; its prompt and completion
        tokens, which a task's figures count."""
        unpriced = side.unpriced
        side.add(usage, cost)
        self.unpriced = self.unpriced or side.unpriced > unpriced
        self.usd += cost or 0.0
        return usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)

    def figures(self) -> dict[str, Any]:
        return {"usd": None if self.unpriced else round(self.usd, 8), "policy_tokens": int(self.policy_tokens),
                "judge_tokens": int(self.judge_tokens)}


def cost_lines(cost: dict[str, Any]) -> list[str]:
    """The summary's lines on cost (none for a run that used no tokens)."""
    if not cost:
        return []
    tokens = "; ".join(f"{side} " + ", ".join(f"{key.removesuffix('_tokens')}={cost[side][key]}" for key in TOKENS)
                       for side in SIDES)
    per = (f", {usd(cost['usd_per_task'])} per task that ran, "
           + (f"{usd(cost['usd_per_success'])} per success" if cost["usd_per_success"] is not None
              else "no success to divide by")) if cost["usd"] is not None else " (a side without a price table)"
    return [f"  cost: {usd(cost['usd'])} (policy {usd(cost['policy']['usd'])}, judge {usd(cost['judge']['usd'])})"
            + per, f"  tokens: {tokens}"]


def record_tokens(record: AttemptRecord) -> str | None:
    """One attempt's tokens as the report shows them: `policy prompt=1000, cached=600, ...; judge prompt=...`."""
    sides = [(side, usage) for side, usage in (("policy", record.usage), ("judge", record.judge_usage))
             if any(usage.get(key) for key in TOKENS)]
    if not sides:
        return None
    return "; ".join(f"{side} " + ", ".join(f"{key.removesuffix('_tokens')}={int(usage.get(key, 0))}"
                                            for key in TOKENS) for side, usage in sides)


def record_cost(record: AttemptRecord) -> str | None:
    """One attempt's cost as the report shows it: `$0.0123 (policy $0.0100, judge $0.0023)`; None when unpriced."""
    if not record.cost_usd:
        return None
    sides = ", ".join(f"{side} {usd(record.cost_usd[side])}" for side in SIDES if side in record.cost_usd)
    return f"{usd(sum(record.cost_usd.values()))} ({sides})"


def cost_environment(cost: dict[str, Any]) -> dict[str, str]:
    """The run's cost as report environment entries; nothing for a run that used no tokens."""
    if not cost:
        return {}
    per_success = usd(cost["usd_per_success"]) if cost["usd_per_success"] is not None or cost["usd"] is None else "-"
    return {"cost": usd(cost["usd"]), "cost per success": per_success,
            "cost policy": usd(cost["policy"]["usd"]), "cost judge": usd(cost["judge"]["usd"])}
