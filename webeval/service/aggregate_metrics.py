"""`/aggregate_metrics`: NeMo Gym's per-task and overall figures over a batch of verify responses, with the masked
samples counted by kind and left out of every reward figure (a masked sample has no reward to average)."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from typing import Any

from webeval.service.gym_shapes import AggregateMetrics

TASK_INDEX = "_ng_task_index"  # NeMo Gym's task key in a verify response, when its collection put one there


class MetricsError(ValueError):
    """A verify response that cannot be counted; one line naming it."""


def _reward_of(index: int, response: dict[str, Any]) -> float | None:
    masked = response.get("mask_sample")
    if not isinstance(masked, bool):
        raise MetricsError(f"verify_responses[{index}]: mask_sample must be true or false")
    reward = response.get("reward")
    if masked:
        return None
    if isinstance(reward, bool) or not isinstance(reward, (int, float)) or not math.isfinite(reward):
        raise MetricsError(f"verify_responses[{index}]: an unmasked sample needs a finite number as its reward")
    return float(reward)


def _figures(rewards: list[float]) -> dict[str, float]:
    if not rewards:
        return {}
    return {"mean/reward": statistics.fmean(rewards), "min/reward": min(rewards), "max/reward": max(rewards),
            "std/reward": statistics.pstdev(rewards)}


def aggregate(responses: list[dict[str, Any]]) -> AggregateMetrics:
    if not responses:
        return AggregateMetrics()
    groups: dict[Any, list[float | None]] = {}
    masked_by_kind: Counter[str] = Counter()
    for index, response in enumerate(responses):
        if not isinstance(response, dict):
            raise MetricsError(f"verify_responses[{index}]: expected an object")
        reward = _reward_of(index, response)
        key = response.get(TASK_INDEX, response.get("task_id", "unknown"))
        groups.setdefault(key if isinstance(key, (int, str)) else str(key), []).append(reward)
        if reward is None:
            masked_by_kind[str(response.get("failure_kind") or "unknown")] += 1
    per_task = []
    for key, rewards in groups.items():
        valid = [reward for reward in rewards if reward is not None]
        name = TASK_INDEX if any(TASK_INDEX in r for r in responses) else "task_id"
        per_task.append({name: key, "rollouts": len(rewards), "valid_rollouts": len(valid),
                         "masked_rollouts": len(rewards) - len(valid), **_figures(valid)})
    valid = [reward for rewards in groups.values() for reward in rewards if reward is not None]
    overall = {"rollouts": len(responses), "valid_rollouts": len(valid), "masked_rollouts": len(responses) - len(valid),
               **{f"masked/{kind}": count for kind, count in sorted(masked_by_kind.items())},
               "tasks": len(groups),
               "tasks_with_fewer_than_2_valid": sum(sum(r is not None for r in rs) < 2 for rs in groups.values()),
               **_figures(valid)}
    key = {"masked_fraction": overall["masked_rollouts"] / len(responses)}
    if "mean/reward" in overall:
        key["mean/reward"] = overall["mean/reward"]
    return AggregateMetrics(group_level_metrics=per_task, agent_metrics=overall, key_metrics=key)
