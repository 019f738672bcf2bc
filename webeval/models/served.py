"""What a vLLM server reports about the model it serves: its model list (`GET /v1/models`: the id, the `root` its
weights were loaded from, `max_model_len`), its version (`GET /version`) and its tokenizer at work (`POST /tokenize`
of a fixed probe text). The files it loaded (tokenizer, chat template, processor, parser plugins) are not served:
those can only be pinned and recorded, not checked from outside.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from webeval.models.endpoint import Endpoint, http_library
from webeval.models.preflight import PREFLIGHT_TIMEOUT_S, PreflightError

# Mixed scripts, digits, markup and an emoji: tokenizers that differ anywhere tend to differ here.
PROBE_TEXT = 'webeval tokenizer probe: Zürich, 東京, 1920x1080 <tool_call>{"x": 12, "y": 7}</tool_call> 🙂 done.'


@dataclass
class ServedFacts:
    model: str
    listed: list[str] = field(default_factory=list)
    root: str | None = None
    max_model_len: int | None = None
    version: str | None = None
    tokenizer_probe: str | None = None  # sha256 of the probe's token ids
    unread: dict[str, str] = field(default_factory=dict)  # a fact the server did not give, and why


def server_root(base_url: str) -> str:
    """vLLM serves /version and /tokenize beside /v1, not under it."""
    base = base_url.rstrip("/")
    return base[:-3] if base.endswith("/v1") else base


def probe_digest(tokens: list[int]) -> str:
    return hashlib.sha256(json.dumps(tokens).encode()).hexdigest()


def _json(response: Any) -> dict[str, Any] | None:
    try:
        body = response.json()
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def served_facts(endpoint: Endpoint) -> ServedFacts:
    """Everything the server tells about `endpoint.model`; an unreachable server or a refused key is PreflightError.
    What one route does not give (an older vLLM, another server) is noted in `unread`, not an error."""
    http = http_library()
    facts = ServedFacts(endpoint.model)
    where = f"the served endpoint {endpoint.base_url}"
    with endpoint.blocking_client(min(endpoint.timeout_s, PREFLIGHT_TIMEOUT_S)) as client:
        def get(method: str, url: str, **kwargs: Any) -> Any:
            try:
                response = client.request(method, url, **kwargs)
            except (http.TimeoutException, http.TransportError) as exc:
                raise PreflightError(endpoint.redact(f"{where} is unreachable: {exc}")) from None
            if response.status_code in (401, 403):
                variable = f" from ${endpoint.api_key_env}" if endpoint.api_key_env else ""
                raise PreflightError(f"{where} refused the API key{variable}: HTTP {response.status_code}")
            return response

        _models(facts, get("GET", "models"))
        root = server_root(endpoint.base_url)
        _version(facts, get("GET", f"{root}/version"))
        _probe(facts, get("POST", f"{root}/tokenize", json={"model": endpoint.model, "prompt": PROBE_TEXT,
                                                            "add_special_tokens": False}))
    return facts


def _models(facts: ServedFacts, response: Any) -> None:
    data = (_json(response) or {}).get("data") if response.status_code == 200 else None
    if not isinstance(data, list):
        facts.unread["model list"] = f"GET /v1/models answered HTTP {response.status_code} without a model list"
        return
    entries = [entry for entry in data if isinstance(entry, dict)]
    facts.listed = [str(entry.get("id")) for entry in entries]
    mine = next((entry for entry in entries if entry.get("id") == facts.model), None)
    if mine is None:
        return
    facts.root = str(mine["root"]) if mine.get("root") else None
    facts.max_model_len = mine.get("max_model_len") if isinstance(mine.get("max_model_len"), int) else None
    for name, value in (("served_root", facts.root), ("max_model_len", facts.max_model_len)):
        if value is None:
            facts.unread[name] = f"/v1/models does not give the model's {name.removeprefix('served_')}"


def _version(facts: ServedFacts, response: Any) -> None:
    body = _json(response) if response.status_code == 200 else None
    if body is None or not isinstance(body.get("version"), str):
        facts.unread["vllm_version"] = f"GET /version answered HTTP {response.status_code} without a version"
        return
    facts.version = body["version"]


def _probe(facts: ServedFacts, response: Any) -> None:
    body = _json(response) if response.status_code == 200 else None
    tokens = body.get("tokens") if body is not None else None
    if not isinstance(tokens, list) or not all(isinstance(t, int) for t in tokens):
        facts.unread["tokenizer_probe"] = f"POST /tokenize answered HTTP {response.status_code} without token ids"
        return
    facts.tokenizer_probe = probe_digest(tokens)
