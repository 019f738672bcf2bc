"""The HTTP face of the rollout service (FastAPI): NeMo Gym's resources-server routes for step sessions, its
agent-server `/run` for whole episodes, health, metrics and the sessions' screenshots.

Every response body passes through the one redactor (webeval.outcomes.redact); every refusal is a status and one
line. Routes and fields: docs/training.md, "The rollout service".
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Callable

from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from webeval.actions import Observation as Seen
from webeval.actions import tool_schemas
from webeval.outcomes.redact import redact
from webeval.service.access import COOKIE, BearerToken, BodyCap, CookieSigner, refuse
from webeval.service.aggregate_metrics import MetricsError, aggregate
from webeval.service.http_thread import EngineBridge
from webeval.service.gym_shapes import (AggregateMetrics, AggregateMetricsRequest, CloseSessionResponse, Health,
                                        Observation, RunRequest, Screenshot, SeedSessionRequest, SeedSessionResponse,
                                        Tab, VerifyRequest, VerifyResponse)
from webeval.service.refusals import Forbidden, NotFound, ServiceError, Unauthorized, Unprocessable
from webeval.service.rollout_service import RolloutService, verify_response
from webeval.service.service_metrics import CONTENT_TYPE
from webeval.service.step_sessions import StepSession

TOOL_ROUTES = {"/computer": "computer", "/navigate": "navigate", "/tabs": "tabs", "/tab": "tabs",
               "/terminate": "terminate"}  # /tab: the name the issue gives the tabs tool's route
STEP_ROUTES = frozenset({"/seed_session", "/verify", "/close_session", *TOOL_ROUTES})  # and /sessions/...


class RedactedJSON(JSONResponse):
    def render(self, content: Any) -> bytes:
        text = json.dumps(content, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        return redact(text).encode("utf-8")


def _refusal(status: int, detail: str, headers: dict[str, str] | None = None) -> RedactedJSON:
    return RedactedJSON({"detail": " ".join(str(detail).split())}, status_code=status, headers=headers)


def _first_error(exc: RequestValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error.get("loc", ()))
    return f"{where}: {error.get('msg', 'invalid')}" if where else str(error.get("msg", "invalid"))


def screenshot_url(session_id: str, step: int) -> str:
    return f"/sessions/{session_id}/steps/{step}/screenshot.png"


def observed(session: StepSession, seen: Seen | None) -> dict[str, Any]:
    """An observation as the step routes answer it: the screen by URL, or `done` once the episode has ended."""
    if seen is None:
        record = session.record
        latest = session.policy.latest
        why = f" ({record.failure_kind})" if record is not None and record.failure_kind else ""
        return Observation(session_id=session.id, step=latest.step if latest else 0, done=True,
                           text=f"the episode ended{why}: POST /verify for its reward").model_dump()
    shot = Screenshot(url=screenshot_url(session.id, seen.step), width=seen.size[0], height=seen.size[1],
                      sha256=session.sha256(seen))
    tabs = [Tab(id=tab.id, url=tab.url, title=tab.title, active=tab.active) for tab in seen.tabs]
    return Observation(session_id=session.id, step=seen.step, screenshot=shot, url=seen.url, title=seen.title,
                       tabs=tabs, last_result=seen.last_result,
                       text="call a tool: computer, navigate, tabs or terminate").model_dump()


class SessionShedding:
    """While no slot is free, `POST /seed_session` is refused before its body is read, parsed or validated: under a
    burst of sessions the refusals cost as little as they can, and the other routes keep answering. A service with
    no step sessions at all (its rollouts on Ray) refuses every step route so, whatever the request carries."""

    def __init__(self, app: ASGIApp, service: RolloutService) -> None:
        self.app, self.service = app, service

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refusal = self._refusal(scope["path"], scope.get("method")) if scope["type"] == "http" else None
        if refusal is not None:
            await refuse(send, refusal.status, refusal.detail, refusal.headers)
            return
        await self.app(scope, receive, send)

    def _refusal(self, path: str, method: str | None) -> ServiceError | None:
        if path in STEP_ROUTES or path.startswith("/sessions/"):
            refused = self.service.steps_refusal()
            if refused is not None:
                return refused
        if method == "POST" and path == "/seed_session":
            return self.service.session_refusal()
        return None


async def _gone(request: Request) -> None:
    """Returns when the client has disconnected (the body was read already: what is left is the disconnect)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


def build_app(service: RolloutService, *, token: str | None, max_body: int,
              signer: CookieSigner | None = None) -> FastAPI:
    """The service's app; built on the engine's loop, which every route that needs the engine is bridged to (the
    app may be served from another thread's loop: webeval.service.http_thread)."""
    signer = signer or CookieSigner()
    bridge = EngineBridge(asyncio.get_running_loop())
    app = FastAPI(title="webeval rollout service", docs_url=None, redoc_url=None,
                  default_response_class=RedactedJSON)
    app.add_middleware(SessionShedding, service=service)
    app.add_middleware(BodyCap, limit=max_body)
    if token is not None:
        app.add_middleware(BearerToken, token=token)  # outermost: nothing is read before the token is checked
    app.state.service = service
    _handlers(app)

    def session_of(request: Request) -> StepSession:
        cookie = request.cookies.get(COOKIE)
        if not cookie:
            raise Unauthorized(f"no session cookie: POST /seed_session first and send its {COOKIE} cookie back")
        session_id = signer.session_of(cookie)
        if session_id is None:
            raise Forbidden("the session cookie was not made by this service")
        return service.sessions.get(session_id)

    _session_routes(app, service, bridge, signer, session_of)
    _episode_routes(app, service, bridge)
    return app


def _handlers(app: FastAPI) -> None:
    @app.exception_handler(ServiceError)
    async def refused(request: Request, exc: ServiceError) -> RedactedJSON:
        return _refusal(exc.status, exc.detail, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> RedactedJSON:
        return _refusal(422, _first_error(exc))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> RedactedJSON:
        return _refusal(exc.status_code, str(exc.detail), getattr(exc, "headers", None))


def _session_routes(app: FastAPI, service: RolloutService, bridge: EngineBridge, signer: CookieSigner,
                    session_of: Callable[[Request], StepSession]) -> None:
    @app.post("/seed_session", response_model=SeedSessionResponse)
    async def seed_session(body: SeedSessionRequest, response: Response) -> dict[str, Any]:
        session, first = await bridge.call(service.seed(body))
        response.set_cookie(COOKIE, signer.cookie(session.id), httponly=True, samesite="strict")
        task = session.policy.task or service.source.task(session.request.task_id)  # the page may make it up
        return {**observed(session, first), "rollout_id": session.request.id, "task_id": session.request.task_id,
                "goal": task.goal, "tools": tool_schemas()}

    def tool_route(tool: str):
        async def call(request: Request) -> dict[str, Any]:
            session = session_of(request)
            arguments = (await request.body()).decode("utf-8", errors="replace")
            session, seen = await bridge.call(service.step(session.id, tool, arguments))
            return observed(session, seen)

        return call

    for path, tool in TOOL_ROUTES.items():
        app.add_api_route(path, tool_route(tool), methods=["POST"], response_model=Observation,
                          include_in_schema=path != "/tab", name=path.strip("/"))

    @app.post("/verify", response_model=VerifyResponse)
    async def verify(request: Request, body: VerifyRequest | None = None) -> VerifyResponse:
        record = await bridge.call(service.verify(session_of(request).id))
        body = body or VerifyRequest()
        return verify_response(record, body.responses_create_params, body.response)

    @app.post("/close_session", response_model=CloseSessionResponse)
    async def close_session(request: Request, response: Response) -> CloseSessionResponse:
        session = session_of(request)
        record = await bridge.call(service.close_session(session.id))
        response.delete_cookie(COOKIE)
        return CloseSessionResponse(session_id=session.id, **verify_response(record).model_dump())

    @app.get("/sessions/{session_id}/steps/{step}/screenshot.png")
    async def screenshot(session_id: str, step: int, request: Request) -> Response:
        session = session_of(request)
        if session.id != session_id:
            raise Forbidden("this session cookie belongs to another session")
        png = await asyncio.to_thread(session.screenshot, step, service.out)
        if png is None:
            raise NotFound(f"session {session_id} has no screenshot of step {step}")
        return Response(png, media_type="image/png")


def _episode_routes(app: FastAPI, service: RolloutService, bridge: EngineBridge) -> None:
    @app.post("/run", response_model=VerifyResponse)
    async def run(body: RunRequest, request: Request) -> Any:
        work = asyncio.ensure_future(bridge.call(service.run(body)))
        gone = asyncio.ensure_future(_gone(request))
        try:
            done, _ = await asyncio.wait({work, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
        if work in done:
            return work.result()
        work.cancel()  # the client went away: its rollout ends (masked interrupted), its slot is freed
        return Response(status_code=499)  # no one is left to read it

    @app.post("/aggregate_metrics", response_model=AggregateMetrics)
    async def aggregate_metrics(body: AggregateMetricsRequest) -> AggregateMetrics:
        try:
            return aggregate(body.verify_responses)
        except MetricsError as exc:
            raise Unprocessable(str(exc)) from None

    @app.get("/health", response_model=Health)
    async def health(response: Response) -> Health:
        live = service.live()
        stopped = service.engine.stopped
        if stopped:
            response.status_code = 503
        return Health(status="stopped" if stopped else "ok", suite=service.settings.suite, stopped=stopped, **live)

    @app.get("/metrics")
    async def metrics() -> Response:
        return Response(redact(service.metrics.render().decode("utf-8")), media_type=CONTENT_TYPE)
