"""A policy whose turns come from outside the process: each observation is handed to whoever steps the episode (the
rollout service's step routes), and the episode waits for their next tool call.

The episode is the evaluation's own loop: settling, the observation, validation of the call against the action
contract (an invalid one is the next observation's error text), budgets, the watched slot and the evidence. The
wait for a call is bounded by `ttl_s`: a client that goes silent ends the episode as infrastructure
(`session_expired`), so its slot is freed and the rollout masked, never scored.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from webeval.actions import Observation
from webeval.outcomes.record import FailureClass, InfraError
from webeval.policy.base import PolicyTurn, ToolCall
from webeval.tasks import Task

SESSION_EXPIRED = "session_expired"


class NotAwaitingCall(RuntimeError):
    """A tool call came while the episode was not waiting for one (a step in progress, or the episode over)."""


class ClientPolicy:
    name = "client"
    model = None

    def __init__(self, ttl_s: float) -> None:
        if ttl_s <= 0:
            raise ValueError("a session's time to live must be positive")
        self.ttl_s = ttl_s
        self.task: Task | None = None
        self.folder: Path | None = None  # the attempt's folder, where the steps' screenshots are written
        self.latest: Observation | None = None
        self.ended = False
        self._call: asyncio.Future[PolicyTurn] | None = None
        self._changed = asyncio.Event()

    def factory(self):
        """The engine's PolicyFactory: this policy, told where its episode writes."""

        def made(session, prepared) -> "ClientPolicy":
            self.folder = session.folder
            return self

        return made

    async def begin(self, task: Task) -> None:
        self.task = task

    async def act(self, observation: Observation) -> PolicyTurn:
        self._call = asyncio.get_running_loop().create_future()
        self.latest = observation
        self._notify()
        try:
            return await asyncio.wait_for(self._call, self.ttl_s)
        except TimeoutError:
            raise InfraError(SESSION_EXPIRED, f"no tool call within {self.ttl_s:g} s of observation "
                                              f"{observation.step}: the session was closed") from None
        finally:
            self._call = None

    async def end(self) -> None:
        self.ended = True
        self._notify()

    # -- the client's side ----------------------------------------------------------------------------------------
    @property
    def awaiting_call(self) -> bool:
        return self._call is not None and not self._call.done()

    def call(self, name: str, arguments: str) -> int:
        """Hand the episode its next tool call (arguments as the client sent them: validating them is the loop's
        part); returns the step the call answers."""
        if not self.awaiting_call or self.latest is None:
            raise NotAwaitingCall("the episode is not waiting for a tool call")
        raw = json.dumps({"tool": name, "arguments": arguments}, ensure_ascii=False)
        self._call.set_result(PolicyTurn(calls=[ToolCall(name, arguments)], raw=raw))
        return self.latest.step

    def stop(self, reason: str) -> None:
        """End the episode at its next turn as the agent's failure to answer (the client asked for a verdict
        without terminating)."""
        if not self.awaiting_call:
            raise NotAwaitingCall("the episode is not waiting for a tool call")
        self._call.set_result(PolicyTurn(calls=[], raw=None, end=(FailureClass.no_answer, reason)))

    async def observation_after(self, step: int) -> Observation | None:
        """The first observation after `step`, or None once the episode has ended. Unbounded here: the caller
        bounds it (the episode's own step budget bounds it too)."""
        while True:
            changed = self._changed
            if self.latest is not None and self.latest.step > step and self.awaiting_call:
                return self.latest
            if self.ended:
                return None
            await changed.wait()

    def _notify(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()
