"""Collect a GRPO-style batch from a running `webeval serve`: 8 tasks x a group of 4 rollouts, through POST /run.

    python examples/grpo_batch.py --service http://127.0.0.1:8100 [--group 4] [--out batch.jsonl]

Each rollout is one verify response: the model's response items with their token ids, and either a reward or a
mask. A masked sample (`mask_sample: true`, `reward: null`) is left out of its group: GRPO's advantage of a sample is
its reward minus the mean of its group's valid rewards, over their standard deviation, and a group with fewer than 2
valid samples teaches nothing. The batch goes to --out as JSON lines, with each sample's advantage beside it, and the
service's /aggregate_metrics summarises it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
from pathlib import Path

import httpx

TASKS = ["Dictionary--0", "Dictionary--2", "Flights--0", "News--0", "News--4", "Recipes--0", "Shop--1", "Shop--3"]


async def rollout(client: httpx.AsyncClient, task_id: str, group: int, index: int) -> dict:
    body = {"task_id": task_id, "group_id": f"batch-{group}", "sample_index": index, "seed": group * 4 + index,
            "responses_create_params": {"input": [], "temperature": 1.0}}
    for _ in range(60):  # 429: the service's queue is full; it says when to come back
        answer = await client.post("/run", json=body)
        if answer.status_code != 429:
            break
        await asyncio.sleep(float(answer.headers.get("Retry-After", "1")))
    answer.raise_for_status()
    return answer.json()


def advantages(samples: list[dict]) -> list[float | None]:
    valid = [sample["reward"] for sample in samples if not sample["mask_sample"]]
    if len(valid) < 2:
        return [None] * len(samples)
    mean, spread = statistics.fmean(valid), statistics.pstdev(valid) or 1.0
    return [None if sample["mask_sample"] else (sample["reward"] - mean) / spread for sample in samples]


async def collect(service: str, tasks: list[str], group: int, token: str | None) -> list[list[dict]]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(base_url=service, headers=headers, timeout=900) as client:
        groups = await asyncio.gather(*(asyncio.gather(*(rollout(client, task_id, number, index)
                                                         for index in range(group)))
                                        for number, task_id in enumerate(tasks)))
        metrics = (await client.post("/aggregate_metrics",
                                     json={"verify_responses": [s for g in groups for s in g]})).json()
    print(json.dumps({"aggregate": metrics["agent_metrics"]}, sort_keys=True))
    return groups


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--service", default="http://127.0.0.1:8100")
    parser.add_argument("--group", type=int, default=4)
    parser.add_argument("--token", default=None, help="the service's bearer token, if it asks for one")
    parser.add_argument("--out", type=Path, default=Path("batch.jsonl"))
    args = parser.parse_args()
    groups = asyncio.run(collect(args.service, TASKS, args.group, args.token))
    with open(args.out, "w", encoding="utf-8") as out:
        for samples in groups:
            for sample, advantage in zip(samples, advantages(samples)):
                out.write(json.dumps({**sample, "advantage": advantage}) + "\n")
    for task_id, samples in zip(TASKS, groups):
        shown = ["masked" if s["mask_sample"] else f"{s['reward']:g}" for s in samples]
        print(f"{task_id:14} rewards {' '.join(shown)}")
    masked = sum(s["mask_sample"] for samples in groups for s in samples)
    print(f"{sum(map(len, groups))} rollouts, {masked} masked, written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
