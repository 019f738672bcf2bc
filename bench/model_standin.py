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

from webeval.plugin.options import settings
from webeval.plugin.policies import EPISODE_POLICY
from webeval.policy.choice import PolicyChoice
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
        self.task_id = ""

    async def begin(self, task) -> None:
        self.task_id = task.id
        await self.model_policy.begin(task)
        await self.oracle.begin(task)

    async def end(self) -> None:
        await self.model_policy.end()
        await self.oracle.end()

    async def act(self, observation):
        self.timeline.log("step", step=observation.step, task=self.task_id)
        reply, turn = await asyncio.gather(self.model_policy.act(observation), self.oracle.act(observation))
        return replace(turn, usage=reply.usage, retries=reply.retries, latency_s=reply.latency_s)


TIMELINE = pytest.StashKey[Timeline]()


def pytest_configure(config: pytest.Config) -> None:
    folder = os.environ.get(LOG_ENV)
    if not folder or (config.getoption("numprocesses", None) and not hasattr(config, "workerinput")):
        return  # an xdist controller runs no episode: its workers do
    config.stash[TIMELINE] = timeline = Timeline(folder)
    timeline.log("configured")
    ready = Slot.ready

    async def timed_ready(self):
        runtime = await ready(self)
        if not timeline.ready:
            timeline.ready = True
            timeline.log("ready", display_s=runtime.display.started_s, browser_s=runtime.browser.launched_s)
        return runtime

    Slot.ready = timed_ready


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Each episode's policy becomes the stand-in: the session's model policy and the oracle, side by side."""
    config = session.config
    if TIMELINE not in config.stash or EPISODE_POLICY not in config.stash:
        return
    model = config.stash[EPISODE_POLICY]
    oracle = PolicyChoice("oracle").factory(settings(config).screen)
    timeline = config.stash[TIMELINE]

    def stand_in(task_session, prepared):
        return StandIn(model(task_session, prepared), oracle(task_session, prepared), timeline)

    config.stash[EPISODE_POLICY] = stand_in


def pytest_collection_finish(session: pytest.Session) -> None:
    if TIMELINE in session.config.stash:
        session.config.stash[TIMELINE].log("collected")
