"""The rollout service without its HTTP: one engine, step sessions over it, whole episodes, and who gets a slot.

Every rollout, stepped or whole, is a rollout of the engine (webeval.rollouts): the evaluation's settling,
observation, budgets, watched slot, evidence, judge and masks, one record in rollouts.jsonl. A step session's policy
is its client (webeval.agent.client_policy); a whole episode's is the policy the service was started with.

Admission: a step session needs a slot now (it holds it while its client thinks), so when none is free it is refused
with 429 and a Retry-After; a whole episode may wait for one, up to `run_queue` of them, then it is refused the same
way. Nothing waits unbounded: a session's wait for its client is its time to live, an episode's steps have their
budgets, and a client that disconnects from `/run` ends its rollout (masked `interrupted`, or never started).
"""

from __future__ import annotations

import asyncio
import math
import secrets
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from webeval.actions import Observation, TOOL_NAMES
from webeval.agent.client_policy import ClientPolicy, NotAwaitingCall
from webeval.agent.evaluate import AnySlot, PolicyFactory
from webeval.agent.loop import Budgets
from webeval.run_settings import Settings
from webeval.runtime.downloads import DEFAULT_MAX_BYTES
from webeval.rollouts import (EngineSettings, EngineStopped, RequestError, RolloutEngine, RolloutRecord,
                              RolloutRequest, parse_request)
from webeval.rollouts.batch import INTERRUPT_GRACE_S
from webeval.rollouts.engine import INTERRUPTED, TaskSource
from webeval.rollouts.records import CUT
from webeval.service.gym_shapes import RunRequest, TaskReference, VerifyResponse
from webeval.service.refusals import (Busy, Conflict, Forbidden, Late, NotFound, ServiceError, Unavailable,
                                      Unprocessable)
from webeval.service.response_items import attempt_steps, episode_response
from webeval.service.service_metrics import ServiceMetrics
from webeval.service.step_sessions import SessionTable, StepSession

if TYPE_CHECKING:  # Ray is optional: webeval.service.ray_episodes is imported only by `webeval serve --ray`
    from webeval.service.ray_episodes import PopulationTasks, RayEpisodes

STEP_MARGIN_S = 30.0  # beyond a session's time to live: settling, executing and observing one step
FIRST_OBSERVATION_S = 120.0  # a slot's context opened, the start page loaded and settled
VERIFY_S = 600.0  # judging an ended episode (a model judge's own retries are inside this)
RunPolicy = Callable[[RolloutRequest], PolicyFactory]


@dataclass(frozen=True)
class ServiceSettings:
    suite: str = "local"
    slots: int = 4
    session_ttl_s: float = 120.0
    run_queue: int = 256  # whole episodes that may wait for a slot before /run answers 429
    run_timeout_s: float = 3600.0  # a whole episode, queue included, before it is cut
    allow_request_endpoint: bool = False
    screen: tuple[int, int] = (1280, 720)
    browser_path: str | None = None
    history: str | None = "append-only"  # how the /run policy keeps its prompt (None: no model)
    budgets: Budgets = field(default_factory=Budgets)
    settle_cap_s: float = 3.0
    infra_retries: int = 0
    download_max_bytes: int = DEFAULT_MAX_BYTES

    @classmethod
    def of(cls, runtime: Settings, **fields: Any) -> "ServiceSettings":
        """The service's settings over the run options' (webeval.run_settings: slots, screen, budgets, ...)."""
        return cls(slots=runtime.slots, screen=runtime.screen, browser_path=runtime.browser_path,
                   budgets=runtime.budgets, settle_cap_s=runtime.settle_cap_s, infra_retries=runtime.infra_retries,
                   download_max_bytes=runtime.download_max_bytes, **fields)

    def engine(self) -> EngineSettings:
        """The engine's settings; a step's bound is raised past the session's time to live, so that a silent
        client's session expires (masked session_expired) before the step times out."""
        step = max(self.budgets.step_timeout_s, self.session_ttl_s + STEP_MARGIN_S)
        return EngineSettings(slots=self.slots, screen=self.screen, browser_path=self.browser_path,
                              budgets=replace(self.budgets, step_timeout_s=step), settle_cap_s=self.settle_cap_s,
                              infra_retries=self.infra_retries, download_max_bytes=self.download_max_bytes,
                              history=self.history)


class RolloutService:
    """The service over its own engine and slots; or, given `remote` (webeval.service.ray_episodes), whole episodes
    on a Ray cluster's actors, `source` then the head's population only, and the step routes refused."""

    def __init__(self, source: TaskSource | PopulationTasks, out: Path, settings: ServiceSettings,
                 run_policy: RunPolicy | None, slots: list[AnySlot] | None = None, *,
                 remote: RayEpisodes | None = None) -> None:
        self.source, self.settings, self.run_policy, self.remote = source, settings, run_policy, remote
        self.out = Path(out)
        self.engine: RolloutEngine | RayEpisodes = remote or RolloutEngine(source, self.out, self._policy_for,
                                                                          settings.engine(), slots)
        self.sessions = SessionTable(retain_s=max(settings.session_ttl_s, 300.0))
        self._step_bound = settings.engine().budgets.step_timeout_s + STEP_MARGIN_S
        self.metrics = ServiceMetrics(self.live)
        self._clients: dict[str, PolicyFactory] = {}  # rollout id -> its step session's policy
        self._starting = 0  # rollouts handed to the engine that have not asked it for a slot yet
        self._running: dict[str, asyncio.Future] = {}  # rollout id -> its run, until it has ended
        self._reaper: asyncio.Task | None = None

    async def start(self) -> None:
        await self.engine.start()
        self._reaper = asyncio.ensure_future(self._reap())

    async def close(self) -> None:
        """Every rollout still running is masked `interrupted` (one waiting for a slot never starts), then the
        slots are closed."""
        if self._reaper is not None:
            self._reaper.cancel()
        running = dict(self._running)
        for rollout_id, rollout in running.items():
            self._cancel(rollout_id, rollout)
        if running:
            await asyncio.wait(running.values(), timeout=INTERRUPT_GRACE_S)
        await self.engine.close()

    # -- admission ------------------------------------------------------------------------------------------------
    def live(self) -> dict[str, int]:
        return {"slots": len(self.engine.slots), "free_slots": self.engine.free_slots(),
                "sessions": self.sessions.open_count(), "in_flight": self.engine.stats.in_flight}

    def _waiting(self) -> int:
        # A snapshot: the HTTP thread asks too (webeval.service.http_thread), while the engine's loop changes them.
        return self._starting + sum(flight.slot is None for flight in list(self.engine.flights.values()))

    def _retry_after(self) -> dict[str, str]:
        stats = self.engine.stats
        done = sum(list(stats.outcomes.values()))
        held = sum(list(self.engine.pool.busy_s.values())) / done if done else 10.0
        return {"Retry-After": str(min(60, max(1, math.ceil(held / max(1, len(self.engine.slots))))))}

    def steps_refusal(self) -> ServiceError | None:
        """Why this service has no step sessions at all: its rollouts run on a Ray cluster, and a step session needs
        a slot here, held while its client thinks. None when it has its own slots."""
        if self.remote is None:
            return None
        return Conflict(f"this service runs whole episodes (POST /run) on {self.remote.where}: the step routes need "
                        "a slot of the service's own, so start another `webeval serve` without --ray for them")

    def session_refusal(self) -> ServiceError | None:
        """Why a new step session cannot have a slot now (counted), or None."""
        refused = self.steps_refusal()
        if refused is not None:
            return refused
        if self.engine.stopped:
            return Unavailable(f"the engine stopped: {self.engine.stopped}")
        if self.engine.free_slots() - self._waiting() <= 0:
            self.metrics.refused.labels("no_free_slot").inc()
            return Busy(f"all {len(self.engine.slots)} slots are taken: retry later, or close a session",
                        self._retry_after())
        return None

    def _admit_run(self) -> None:
        if self.engine.stopped:
            raise Unavailable(f"the engine stopped: {self.engine.stopped}")
        if self._waiting() - self.engine.free_slots() >= self.settings.run_queue:
            self.metrics.refused.labels("run_queue_full").inc()
            raise Busy(f"{self.settings.run_queue} episodes already wait for a slot (--run-queue): retry later",
                       self._retry_after())

    # -- rollouts -------------------------------------------------------------------------------------------------
    def _policy_for(self, request: RolloutRequest) -> PolicyFactory:
        client = self._clients.get(request.id)
        if client is not None:
            return client
        if self.run_policy is None:
            raise RequestError("this service was started without a policy for whole episodes: pass --policy")
        return self.run_policy(request)

    def _task_or_404(self, task_id: str) -> None:
        try:
            self.source.task(task_id)
        except KeyError:
            raise NotFound(f"task {task_id!r} is not in this service's population ({self.settings.suite})") from None

    def _request(self, reference: TaskReference, rollout_id: str, policy: dict[str, Any] | None = None
                 ) -> RolloutRequest:
        if rollout_id in self.engine.flights or self.sessions.known(rollout_id):
            raise Conflict(f"rollout {rollout_id} is already running or recorded here: give each rollout its own id")
        data = {"task_id": reference.task_id, "group_id": reference.group_id or reference.task_id,
                "sample_index": reference.sample_index, "seed": reference.seed,
                "policy_version": reference.policy_version, "rollout_id": rollout_id}
        try:
            return parse_request({**data, **({"policy": policy} if policy else {})})
        except RequestError as exc:
            raise Unprocessable(str(exc)) from None

    def _start(self, request: RolloutRequest, layer: str) -> asyncio.Future:
        """The rollout handed to the engine; `_starting` counts it until the engine has it (then its flight says
        whether it holds a slot or waits for one)."""
        self._starting += 1
        began = False

        async def run() -> RolloutRecord:
            nonlocal began
            began = True
            self._starting -= 1
            try:
                record = await self.engine.run(request)
            finally:
                self._clients.pop(request.id, None)
            self.metrics.count(record, layer)
            return record

        rollout = asyncio.ensure_future(run())
        self._running[request.id] = rollout
        rollout.add_done_callback(lambda _: self._ended(request.id, began))  # `began` as it is by then
        return rollout

    def _ended(self, rollout_id: str, began: bool) -> None:
        self._running.pop(rollout_id, None)
        if not began:
            self._starting -= 1

    def _cancel(self, rollout_id: str, rollout: asyncio.Future, why: str = INTERRUPTED) -> None:
        flight = self.engine.flights.get(rollout_id)
        if flight is not None:
            flight.why = why
        rollout.cancel()

    async def _record(self, rollout: asyncio.Future, bound: float) -> RolloutRecord:
        try:
            return await asyncio.wait_for(asyncio.shield(rollout), bound)
        except TimeoutError:
            raise Late(f"the rollout has no record after {bound:g} s: ask again") from None
        except EngineStopped as exc:
            raise Unavailable(f"the engine stopped before the rollout started: {exc}") from None
        except RequestError as exc:  # the policy could not be made for it (a sampling value its profile refuses)
            raise Unprocessable(str(exc)) from None
        except asyncio.CancelledError:
            if rollout.cancelled():  # cancelled before it held a slot: nothing ran
                raise Conflict("the rollout was stopped before it started: it has no record") from None
            raise

    # -- step sessions --------------------------------------------------------------------------------------------
    async def seed(self, reference: TaskReference) -> tuple[StepSession, Observation | None]:
        self._task_or_404(reference.task_id)
        session_id = reference.rollout_id or f"s{secrets.token_hex(8)}"
        request = self._request(reference, session_id)
        refusal = self.session_refusal()
        if refusal is not None:
            raise refusal
        policy = ClientPolicy(self.settings.session_ttl_s)
        self._clients[request.id] = policy.factory()
        session = StepSession(session_id, request, policy, self._start(request, "session"))
        self.sessions.add(session)
        first = await self._next(session, 0, FIRST_OBSERVATION_S)
        return session, first

    async def _next(self, session: StepSession, after: int, bound: float) -> Observation | None:
        """The observation after step `after`, or None when the episode has ended."""
        waiter = asyncio.ensure_future(session.policy.observation_after(after))
        try:
            done, _ = await asyncio.wait({waiter, session.rollout}, timeout=bound,
                                         return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
        if waiter in done:
            return waiter.result()
        if session.rollout in done:
            return None
        self._cancel(session.request.id, session.rollout)
        raise Late(f"no observation within {bound:g} s: the session was ended (masked interrupted)")

    def _guarded(self, session_id: str) -> StepSession:
        session = self.sessions.get(session_id)
        if session.busy:
            raise Conflict(f"a call on session {session_id} is still being answered: wait for it")
        return session

    async def step(self, session_id: str, tool: str, arguments: str) -> tuple[StepSession, Observation | None]:
        session = self._guarded(session_id)
        session.busy = True
        try:
            if session.rollout.done():
                return session, None
            began = time.monotonic()
            try:
                step = session.policy.call(tool, arguments)
            except NotAwaitingCall:  # expired or ending: it will end within a step's budget
                step = session.policy.latest.step if session.policy.latest else 0
            observation = await self._next(session, step, self._step_bound)
            if observation is not None:
                self.metrics.step_latency.labels("session").observe(time.monotonic() - began)
            return session, observation
        finally:
            session.busy = False

    async def verify(self, session_id: str) -> RolloutRecord:
        """The session's record; a session still waiting for a call ends as the agent's failure to answer."""
        session = self._guarded(session_id)
        session.busy = True
        try:
            if not session.rollout.done() and session.policy.awaiting_call:
                session.policy.stop("the client asked for the verdict without calling terminate")
            return await self._record(session.rollout, VERIFY_S)
        finally:
            session.busy = False

    async def close_session(self, session_id: str) -> RolloutRecord:
        """End the session (masked `interrupted` if its episode was still running) and forget it."""
        session = self.sessions.get(session_id)
        if not session.rollout.done():
            self._cancel(session.request.id, session.rollout)
        try:
            return await self._record(session.rollout, VERIFY_S)
        finally:
            self.sessions.drop(session_id)

    async def _reap(self) -> None:
        while True:
            await asyncio.sleep(min(5.0, self.settings.session_ttl_s))
            self.sessions.forget_ended()

    # -- whole episodes -------------------------------------------------------------------------------------------
    def _run_request(self, body: RunRequest) -> RolloutRequest:
        self._task_or_404(body.task_id)
        if body.policy_base_url is not None and not self.settings.allow_request_endpoint:
            raise Forbidden("this service runs episodes against its own policy endpoint: start it with "
                            "--allow-request-endpoint to let a request name one")
        params = body.responses_create_params
        for tool in params.tools:
            name = tool.get("name") or (tool.get("function") or {}).get("name")
            if name not in TOOL_NAMES:
                raise Unprocessable(f"responses_create_params.tools: {name!r} is not a tool of the action contract "
                                    f"({', '.join(TOOL_NAMES)})")
        sampling = {k: v for k, v in (("temperature", params.temperature), ("top_p", params.top_p),
                                      ("max_tokens", params.max_output_tokens)) if v is not None}
        policy = {"base_url": body.policy_base_url, "model": params.model, "sampling": sampling}
        return self._request(body, body.rollout_id or f"r{secrets.token_hex(8)}", policy)

    async def run(self, body: RunRequest) -> VerifyResponse:
        """The whole episode to its verify response. Cancelled (its client went away), the rollout ends masked
        `interrupted`, or never starts if it was still waiting for a slot; past `run_timeout_s` it is cut."""
        request = self._run_request(body)
        if self.run_policy is None:
            raise Conflict("this service was started without a policy for whole episodes: pass --policy")
        self._admit_run()
        rollout = self._start(request, "run")
        try:
            record = await self._episode(request, rollout)
        finally:  # a node sends the trajectory with the record: taken whatever became of the request
            steps = self.remote.take_steps(request.id) if self.remote is not None else None
        if steps is None:
            steps = attempt_steps(self.out / record.attempt_path if record.attempt_path else None)
        params = body.responses_create_params
        response = episode_response(steps, record.rollout_id, params.model or self._model_of(request), params.tools)
        return verify_response(record, params.model_dump(mode="json", exclude_unset=True), response)

    async def _episode(self, request: RolloutRequest, rollout: asyncio.Future) -> RolloutRecord:
        try:
            done, _ = await asyncio.wait({rollout}, timeout=self.settings.run_timeout_s)
        except asyncio.CancelledError:
            self._cancel(request.id, rollout, INTERRUPTED)
            await asyncio.wait({rollout}, timeout=VERIFY_S)
            raise
        if not done:
            self._cancel(request.id, rollout, CUT)
            await asyncio.wait({rollout}, timeout=VERIFY_S)
        return await self._record(rollout, VERIFY_S)

    def _model_of(self, request: RolloutRequest) -> str | None:
        profile_for = getattr(self.run_policy, "profile_for", None)  # a model policy: the profile it calls with
        return profile_for(request).model if profile_for is not None else None


def verify_response(record: RolloutRecord, params: dict[str, Any] | None = None,
                    response: dict[str, Any] | None = None) -> VerifyResponse:
    fields = record.model_dump(include=set(VerifyResponse.model_fields) - {"responses_create_params", "response"})
    return VerifyResponse(responses_create_params=params, response=response, **fields)
