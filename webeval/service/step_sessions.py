"""Step sessions: a rollout of the engine whose policy is the client (webeval.agent.client_policy), kept by id.

A session holds a slot from `/seed_session` until its episode ends: by `terminate`, a budget, `/verify` (the agent
stopped without answering), `/close_session`, a dead part of the runtime, or its time to live. Once it has ended its
record is kept for `retain_s`, so `/verify` still answers (masked `session_expired` for an expired one), then it is
forgotten; at most `MAX_REMEMBERED` ended sessions are kept, the oldest forgotten first.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path

from webeval.actions import Observation
from webeval.agent.client_policy import ClientPolicy
from webeval.rollouts import RolloutRecord, RolloutRequest
from webeval.service.refusals import NotFound

MAX_REMEMBERED = 10_000


@dataclass
class StepSession:
    id: str
    request: RolloutRequest
    policy: ClientPolicy
    rollout: asyncio.Future  # the engine's run of it: its RolloutRecord
    opened: float = field(default_factory=time.monotonic)
    ended_at: float | None = None
    busy: bool = False  # a call on it is being answered
    shots: dict[int, str] = field(default_factory=dict)  # step -> sha256 of its screenshot

    @property
    def record(self) -> RolloutRecord | None:
        if not self.rollout.done() or self.rollout.cancelled() or self.rollout.exception() is not None:
            return None
        return self.rollout.result()

    def sha256(self, observation: Observation) -> str:
        if observation.step not in self.shots:
            self.shots[observation.step] = hashlib.sha256(observation.screenshot_png).hexdigest()
        return self.shots[observation.step]

    def screenshot(self, step: int, root: Path) -> bytes | None:
        """The PNG the client was shown at `step`: the latest from memory (its file may still be being written),
        earlier ones from the attempt's folder, which must lie inside `root`."""
        latest = self.policy.latest
        if latest is not None and latest.step == step:
            return latest.screenshot_png
        folder = self.policy.folder
        if folder is None or step < 1:
            return None
        path = (folder / f"step-{step:03d}.png").resolve()
        if not path.is_relative_to(root.resolve()) or not path.is_file():
            return None
        return path.read_bytes()


class SessionTable:
    def __init__(self, retain_s: float) -> None:
        self.retain_s = retain_s
        self._sessions: dict[str, StepSession] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def add(self, session: StepSession) -> None:
        self._sessions[session.id] = session

        def ended(_: asyncio.Future) -> None:
            session.ended_at = time.monotonic()

        session.rollout.add_done_callback(ended)

    def get(self, session_id: str) -> StepSession:
        try:
            return self._sessions[session_id]
        except KeyError:
            raise NotFound(f"session {session_id} is not known here: it was closed, or forgotten "
                           f"{self.retain_s:g} s after it ended") from None

    def known(self, session_id: str) -> bool:
        return session_id in self._sessions

    def drop(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)

    def open_count(self) -> int:
        return sum(not session.rollout.done() for session in list(self._sessions.values()))  # read from any thread

    def running(self) -> list[StepSession]:
        return [session for session in list(self._sessions.values()) if not session.rollout.done()]

    def forget_ended(self, now: float | None = None) -> int:
        """Forget sessions that ended over `retain_s` ago, and the oldest ended ones past MAX_REMEMBERED."""
        now = time.monotonic() if now is None else now
        ended = sorted((s for s in self._sessions.values() if s.ended_at is not None), key=lambda s: s.ended_at)
        over = max(0, len(self._sessions) - MAX_REMEMBERED)
        gone = [s for i, s in enumerate(ended) if i < over or now - s.ended_at > self.retain_s]
        for session in gone:
            self._sessions.pop(session.id, None)
        return len(gone)
