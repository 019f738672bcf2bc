"""A pytest plugin for the scaling benchmark: a model stand-in that is the real OpenAI policy plus the oracle.

Load it with `-p bench.model_standin` next to `--policy openai --policy-base-url <stub> --policy-model <name>`. Each
turn makes the real model request (the adapter's encoding, the conversation, the HTTP client) to the OpenAI stub,
which answers after its delay (1.0 s: a model's thinking time), while the oracle works out the task's own next
action; the turn acts out the oracle's action, so episodes take the oracle's steps and the tasks pass.

Each worker logs its timeline (configured, collected, runtime ready, every step) as JSON lines to
$WEBEVAL_BENCH_LOG/<worker>.jsonl.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from dataclasses import replace

import pytest

import webeval.plugin.episode as episode_plugin
from webeval.runtime.slot import Slot

LOG_ENV = "WEBEVAL_BENCH_LOG"


class Timeline:
    def __init__(self, folder: str) -> None:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        self._out = open(os.path.join(folder, f"{worker}.jsonl"), "a", encoding="utf-8", buffering=1)
        self.ready = False

    def log(self, event: str, **fields) -> None:
        self._out.write(json.dumps({"ev": event, "t": time.time(), **fields}) + "\n")


class StandIn:
    def __init__(self, model, oracle, timeline: Timeline) -> None:
        self.model_policy, self.oracle, self.timeline = model, oracle, timeline
        self.name, self.model = model.name, model.model

    async def begin(self, task) -> None:
        await self.model_policy.begin(task)
        await self.oracle.begin(task)

    async def end(self) -> None:
        await self.model_policy.end()
        await self.oracle.end()

    async def act(self, observation):
        self.timeline.log("step", step=observation.step)
        reply, turn = await asyncio.gather(self.model_policy.act(observation), self.oracle.act(observation))
        return replace(turn, usage=reply.usage, retries=reply.retries, latency_s=reply.latency_s)


_TIMELINE: Timeline | None = None


def pytest_configure(config: pytest.Config) -> None:
    global _TIMELINE
    folder = os.environ.get(LOG_ENV)
    if not folder or not hasattr(config, "workerinput"):
        return  # only xdist workers run episodes
    _TIMELINE = timeline = Timeline(folder)
    timeline.log("configured")
    make_policy = episode_plugin.make_policy

    def stand_in(settings, session, prepared):
        model = make_policy(settings, session, prepared)
        oracle = make_policy(replace(settings, policy="oracle"), session, prepared)
        return StandIn(model, oracle, timeline)

    episode_plugin.make_policy = stand_in
    ready = Slot.ready

    async def timed_ready(self):
        runtime = await ready(self)
        if not timeline.ready:
            timeline.ready = True
            timeline.log("ready", display_s=runtime.display.started_s, browser_s=runtime.browser.launched_s)
        return runtime

    Slot.ready = timed_ready


def pytest_collection_finish(session: pytest.Session) -> None:
    if _TIMELINE is not None:
        _TIMELINE.log("collected")
