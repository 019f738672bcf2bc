"""A collection of rollouts without a trainer: what was asked (kept beside the records, so that running it again
goes on where it stopped and refuses to mix another ask in), the requests it makes, its progress and its summary."""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Sequence, TextIO

from pydantic import BaseModel, ConfigDict, Field

from webeval.rollouts.records import INTERRUPTED, RolloutRecord
from webeval.rollouts.requests import MAX_SEED, RolloutRequest

COLLECTION = "collection.json"
SUMMARY = "summary.json"


class CollectionError(ValueError):
    """A collection that cannot go on as asked; the message is one line."""


class Ask(BaseModel):
    """What a collection was asked for; a second run into the same folder must ask the same."""

    model_config = ConfigDict(frozen=True)

    suite: str
    options: dict[str, Any] = Field(default_factory=dict)  # the benchmark's options, as given
    group_size: int
    seed: int
    task_ids: list[str]
    policy: str  # who acts, as the policy choice describes it
    history: str | None = None
    token_ids: bool = False

    def differences(self, other: "Ask") -> list[str]:
        mine, theirs = self.model_dump(), other.model_dump()
        return [name for name in mine if mine[name] != theirs[name]]


def settle_ask(folder: Path, ask: Ask) -> None:
    """Write what was asked, or check it against what the folder's first run asked (CollectionError if it differs)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / COLLECTION
    if path.exists():
        try:
            before = Ask.model_validate_json(path.read_text(encoding="utf-8"))
        except ValueError:
            raise CollectionError(f"{path} is not a collection's record: use another --out folder") from None
        changed = before.differences(ask)
        if changed:
            raise CollectionError(f"{folder} holds a collection asked with other {', '.join(changed)}: "
                                  "use another --out folder, or ask as it was asked")
        return
    aside = path.with_name(f".{COLLECTION}.tmp")
    aside.write_text(ask.model_dump_json(indent=2), encoding="utf-8")
    aside.replace(path)


def rollout_seed(seed: int, task_id: str, sample_index: int) -> int:
    """A sample's seed, the same on every run of the collection: derived from the collection's seed and its place."""
    digest = hashlib.sha256(f"{seed}:{task_id}:{sample_index}".encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") & MAX_SEED


def plan(task_ids: Sequence[str], group_size: int, seed: int,
         curricula: dict[str, dict[str, Any]] | None = None) -> list[RolloutRequest]:
    """group_size samples of each task, a group per task, in the tasks' order."""
    return [RolloutRequest(task_id=task_id, group_id=task_id, sample_index=index,
                           seed=rollout_seed(seed, task_id, index), curriculum=(curricula or {}).get(task_id))
            for task_id in task_ids for index in range(group_size)]


def summarize(records: Iterable[RolloutRecord], asked: int, seconds: float,
              this_run: Sequence[RolloutRecord] = ()) -> dict[str, Any]:
    """What a trainer wants to know of a collection: how many, how many masked and why, the mean reward of the
    scored ones, the groups too thin to compare (fewer than 2 valid samples), and the pace of this run."""
    records = list(records)
    finished = [r for r in records if r.failure_kind != INTERRUPTED]  # an interrupted one runs again next time
    paced = sum(r.steps for r in this_run)
    scored = [r for r in records if not r.mask_sample]
    valid_in_group = Counter(r.group_id for r in scored)
    groups = {r.group_id for r in records}
    return {
        "asked": asked, "rollouts": len(records), "scored": len(scored), "masked": len(records) - len(scored),
        "missing": asked - len(finished),
        "masked_by_kind": dict(sorted(Counter(r.failure_kind for r in records if r.mask_sample).items())),
        "mean_reward": round(sum(r.reward for r in scored) / len(scored), 4) if scored else None,
        "groups": len(groups), "groups_short": sorted(g for g in groups if valid_in_group[g] < 2),
        "steps": sum(r.steps for r in records), "seconds": round(seconds, 1),
        "steps_per_s": round(paced / seconds, 3) if seconds > 0 else None,
        "complete": len(finished) == asked,
    }


def summary_lines(summary: dict[str, Any]) -> list[str]:
    """The summary as the terminal shows it: counts as name=N, never a number before another outcome's word."""
    masked = ", ".join(f"{kind}={count}" for kind, count in summary["masked_by_kind"].items()) or "none"
    reward = "-" if summary["mean_reward"] is None else f"{summary['mean_reward']:.3f}"
    state = "complete" if summary["complete"] else f"incomplete: {summary['missing']} of {summary['asked']} not run " \
                                                   "(run the same command again to finish)"
    return [f"rollouts {state}: rollouts={summary['rollouts']}, scored={summary['scored']}, "
            f"masked={summary['masked']}, mean_reward={reward} (over scored)",
            f"  masked by kind: {masked}",
            f"  groups={summary['groups']}, groups_with_fewer_than_2_valid={len(summary['groups_short'])}, "
            f"steps={summary['steps']}, steps_per_s={summary['steps_per_s']}"]


def write_summary(folder: Path, summary: dict[str, Any]) -> Path:
    path = folder / SUMMARY
    path.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return path


class Progress:
    """One line that says where a collection is: rewritten in place on a terminal, every few seconds in a log."""

    def __init__(self, total: int, done: int = 0, out: TextIO | None = None, every_s: float = 10.0) -> None:
        self.total, self.done, self.out, self.every_s = total, done, out or sys.stderr, every_s
        self.scored = self.masked = 0
        self.rewards = 0.0
        self.began = self.last = time.monotonic()
        self.live = self.out.isatty()

    def add(self, record: RolloutRecord) -> None:
        self.done += 1
        if record.mask_sample:
            self.masked += 1
        else:
            self.scored += 1
            self.rewards += record.reward or 0.0
        now = time.monotonic()
        if self.live or now - self.last >= self.every_s or self.done == self.total:
            self.last = now
            self.show()

    def line(self) -> str:
        mean = f"{self.rewards / self.scored:.3f}" if self.scored else "-"
        rate = self.done / max(time.monotonic() - self.began, 1e-6)
        return (f"rollouts {self.done}/{self.total} | scored={self.scored}, masked={self.masked}, "
                f"mean_reward={mean}, rollouts_per_min={rate * 60:.1f}")

    def show(self) -> None:
        end = "\r" if self.live and self.done < self.total else "\n"
        print(self.line().ljust(100 if self.live else 0), end=end, file=self.out, flush=True)
