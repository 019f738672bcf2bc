"""What a run spent: tokens and dollars, policy and judge apart, over every attempt on record.

Every attempt counts, not only the final one: an attempt retried after an infrastructure error, or a verdict judged
again, was paid for. The policy's tokens of one attempt folder are counted once (a re-judged record repeats them);
each judgement's tokens are counted with the record it made. A side is priced only when every attempt that used
tokens on it had a price table: otherwise its dollars are None, never a partial sum read as the whole.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

from webeval.outcomes.cost import TOKENS, usd
from webeval.outcomes.record import AttemptRecord

SIDES = ("policy", "judge")


@dataclass
class Side:
    tokens: Counter[str] = field(default_factory=Counter)
    usd: float = 0.0
    unpriced: int = 0  # attempts that used tokens on this side without a price

    def add(self, usage: dict[str, float], cost: float | None) -> None:
        used = {key: value for key, value in usage.items() if key in TOKENS and value}
        self.tokens.update(used)
        if cost is not None:
            self.usd += cost
        elif used:
            self.unpriced += 1

    def figures(self) -> dict[str, Any]:
        return {**{key: int(self.tokens[key]) for key in TOKENS},
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


def spent(records: Iterable[AttemptRecord]) -> Spending:
    spending = Spending()
    folders: set[tuple[str, str]] = set()
    for record in records:
        folder = (record.task_id, record.path) if record.path else None
        if folder is None or folder not in folders:
            if folder is not None:
                folders.add(folder)
            spending.policy.add(record.usage, record.cost_usd.get("policy"))
        spending.judge.add(record.judge_usage, record.cost_usd.get("judge"))
    return spending


def run_cost(task_ids: Iterable[str], records: list[AttemptRecord], passed: int) -> dict[str, Any]:
    """summary.json's `cost`: per side its tokens and dollars, the run's dollars, per task that ran, per success,
    and each task's own. Empty for a run that used no tokens (an oracle's)."""
    ids = list(task_ids)
    by_task: dict[str, list[AttemptRecord]] = {task_id: [] for task_id in ids}
    for record in records:
        if record.task_id in by_task:
            by_task[record.task_id].append(record)
    whole = spent(record for task_id in ids for record in by_task[task_id])
    if not whole.used:
        return {}
    tasks = {task_id: _task(spent(found)) for task_id, found in by_task.items() if found}
    total = whole.usd
    return {
        "policy": whole.policy.figures(), "judge": whole.judge.figures(), "usd": total,
        "usd_per_task": round(total / len(tasks), 8) if total is not None and tasks else None,
        "usd_per_success": round(total / passed, 8) if total is not None and passed else None,
        "tasks": tasks,
    }


def _task(spending: Spending) -> dict[str, Any]:
    tokens = lambda side: int(side.tokens["prompt_tokens"] + side.tokens["completion_tokens"])  # noqa: E731
    return {"usd": spending.usd, "policy_tokens": tokens(spending.policy), "judge_tokens": tokens(spending.judge)}


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
