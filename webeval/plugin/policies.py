"""Choosing the policy that acts: `--policy NAME`."""

from __future__ import annotations

import pytest

from webeval.agent.environment import Prepared
from webeval.policy.base import Policy
from webeval.policy.oracle import Box, OraclePolicy
from webeval.runtime.session import TaskSession

POLICIES = ("oracle",)


def describe(name: str | None) -> str:
    if name == "oracle":
        return "policy: oracle -- the tasks' built-in solutions are acting, not a model"
    if name is None:
        return "policy: none chosen (pass --policy)"
    return f"policy: {name}"


def check_policy(name: str | None) -> None:
    if name is None:
        raise pytest.UsageError(f"no policy: pass --policy, one of {', '.join(POLICIES)}")
    if name not in POLICIES:
        raise pytest.UsageError(f"--policy {name!r} is unknown: use one of {', '.join(POLICIES)}")


def make_policy(settings, session: TaskSession, prepared: Prepared) -> Policy:
    if settings.policy == "oracle":
        async def locate(selector: str) -> Box | None:
            box = await session.locate(selector)
            return Box(**box) if box else None

        return OraclePolicy(locate, prepared.rewrite_url)
    check_policy(settings.policy)
    raise AssertionError("unreachable")
