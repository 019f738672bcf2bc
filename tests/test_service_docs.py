"""The request and response examples of docs/training.md ("The rollout service"), replayed in order against a running
service: every documented key must be there and nothing else, and every value as shown, but for values written
"<...>" (any value) and a list whose last element is "<...>" (the elements before it, then any more)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from fixtures.answering_endpoint import answering
from fixtures.openai_stub import OpenAIStub
from tests.conftest import ROOT
from tests.service_lab import cookie_of, local_tasks, serving
from tests.test_service_episodes import policies
from webeval.service import ServiceSettings

pytestmark = pytest.mark.xdist_group("service")

EXAMPLE = re.compile(r"```http\n(?P<request>.*?)```\s*```json\n(?P<response>.*?)```", re.DOTALL)


def examples() -> list[tuple[str, str, Any, Any]]:
    found = []
    for match in EXAMPLE.finditer((ROOT / "docs" / "training.md").read_text(encoding="utf-8")):
        line, _, body = match["request"].partition("\n")
        method, path = line.split()
        found.append((method, path, json.loads(body) if body.strip() else None, json.loads(match["response"])))
    return found


def placeholder(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("<") and value.endswith(">")


def differences(shown: Any, got: Any, where: str = "") -> list[str]:
    if placeholder(shown):
        return []
    if isinstance(shown, dict):
        if not isinstance(got, dict) or set(shown) != set(got):
            return [f"{where}: keys {sorted(shown)} documented, {sorted(got) if isinstance(got, dict) else got!r} "
                    "answered"]
        return [found for key in shown for found in differences(shown[key], got[key], f"{where}.{key}")]
    if isinstance(shown, list):
        open_ended = bool(shown) and placeholder(shown[-1])
        fixed = shown[:-1] if open_ended else shown
        if not isinstance(got, list) or len(got) < len(fixed) or (not open_ended and len(got) != len(fixed)):
            return [f"{where}: {len(shown)} items documented, {got!r} answered"]
        return [found for index, item in enumerate(fixed) for found in differences(item, got[index],
                                                                                    f"{where}[{index}]")]
    if shown != got or type(shown) is not type(got):
        return [f"{where}: {shown!r} documented, {got!r} answered"]
    return []


def test_the_docs_have_examples_of_every_route_a_client_calls():
    documented = {path for _, path, _, _ in examples()}
    assert {"/health", "/seed_session", "/computer", "/terminate", "/verify", "/run", "/aggregate_metrics"} <= documented


async def test_the_documented_examples_replay_against_a_running_service(tmp_path):
    with OpenAIStub(answering()) as stub:
        async with local_tasks() as source:
            async with serving(source, tmp_path, ServiceSettings(slots=2), policies(stub)) as running:
                async with running.client() as client:
                    cookie: dict[str, str] = {}
                    for method, path, body, shown in examples():
                        answer = await client.request(method, path, json=body, headers=cookie)
                        assert answer.status_code == 200, (path, answer.text)
                        if path == "/seed_session":
                            cookie = cookie_of(answer)
                        assert not differences(shown, answer.json(), path), differences(shown, answer.json(), path)
