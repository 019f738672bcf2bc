"""Each rollout's policy: the engine's model profile, with the request's endpoint, sampling parameters and seed on
top; token ids and log-probabilities asked for, and the prompt kept append-only, unless the collection says not.

Model calls are bounded per endpoint (a semaphore for each base URL), so that many slots do not overrun one server
and one slow endpoint does not hold up the calls to another.
"""

from __future__ import annotations

import asyncio
from typing import Any

from webeval.models import Exchange
from webeval.policy.choice import PolicyChoice, PolicyFactory
from webeval.policy.openai import Profile, Transport
from webeval.profiles import ProfileError, validate
from webeval.rollouts.requests import RequestError, RolloutRequest

DEFAULT_ENDPOINT_CONCURRENCY = 64  # NeMo Gym's GRPO batches run 64 rollouts at once against one server


class BoundedTransport:
    """A transport whose calls wait for their endpoint's turn."""

    def __init__(self, inner: Transport, limit: asyncio.Semaphore) -> None:
        self.inner, self.limit = inner, limit

    async def complete(self, body: dict[str, Any]) -> Exchange:
        async with self.limit:
            return await self.inner.complete(body)

    async def close(self) -> None:
        await self.inner.close()


class ModelPolicies:
    def __init__(self, profile: Profile, screen: tuple[int, int], *, token_ids: bool = True,
                 history: str = "append-only", concurrency: int = DEFAULT_ENDPOINT_CONCURRENCY,
                 record: bool = False) -> None:
        self.profile = profile.model_copy(update={"token_ids": token_ids, "history": history})
        self.screen = screen
        self.concurrency = concurrency
        self.record = record
        self._limits: dict[str, asyncio.Semaphore] = {}

    def profile_for(self, request: RolloutRequest) -> Profile:
        endpoint = request.policy
        fields = self.profile.model_dump()
        fields.update({k: v for k, v in (("base_url", endpoint.base_url), ("model", endpoint.model)) if v})
        sampling = endpoint.sampling.given()
        for name in ("temperature", "top_p", "max_tokens"):
            if name in sampling:
                fields[name] = sampling.pop(name)
        fields["extra_body"] = {**fields["extra_body"], **sampling, "seed": request.seed}
        try:
            return validate(Profile, fields, f"rollout {request.id}")
        except ProfileError as exc:
            raise RequestError(str(exc)) from None

    def __call__(self, request: RolloutRequest) -> PolicyFactory:
        profile = self.profile_for(request)
        limit = self._limits.setdefault(profile.base_url, asyncio.Semaphore(self.concurrency))
        choice = PolicyChoice("openai", profile=profile, record=self.record)
        return choice.factory(self.screen, lambda transport: BoundedTransport(transport, limit))
