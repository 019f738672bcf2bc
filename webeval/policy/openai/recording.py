"""Record and replay: each task's exact requests and replies, kept under its attempt folder and played back offline.

`<attempt>/policy/exchanges.jsonl` holds a header (task, start URL, screen, profile: never a key) and one line per
turn: the request body as sent (chat completions or Responses API), with each image's data URL replaced by a
reference to `images/<sha256>.<png|jpeg|webp>` (the bytes the model received, stored once), and the reply body
exactly as received (or the error that ended the turn).

Replay checks that the request it would send now matches the recorded one, part by part, screenshots aside (pixels
differ between runs for reasons no model sees: a blinking caret). The first difference ends the episode as
`replay_diverged`. Offline sites move to a new port on every run, so the recorded start origin is mapped to the
current one in both requests and replies.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path
from typing import Any

from webeval.outcomes.record import InfraError
from webeval.outcomes.redact import redact
from webeval.models import Exchange, parse_reply
from webeval.policy.openai.transport import Transport

FOLDER = "policy"
EXCHANGES = "exchanges.jsonl"
_DATA_URL = re.compile(r"^data:image/(png|jpeg|webp);base64,")
_STORED = re.compile(r"^images/[0-9a-f]{64}\.(png|jpeg|webp)$")


class ReplayDiverged(Exception):
    """The episode no longer follows its recording; the message says where and how."""


class ReplayMissing(Exception):
    """There is no recording to play back for a task."""


def _origin(url: str) -> str:
    match = re.match(r"^[a-z][a-z0-9+.-]*://[^/?#]+", url, re.I)
    return match[0] if match else url


class Recorder:
    """Writes one task's exchanges; every line passes through `redact` with the secrets it was given."""

    def __init__(self, folder: Path, secrets: tuple[str, ...]) -> None:
        self.folder = folder / FOLDER
        self.images = self.folder / "images"
        self.images.mkdir(parents=True, exist_ok=True)
        self._secrets = secrets
        self._turn = 0

    def _write(self, entry: dict[str, Any]) -> None:
        line = redact(json.dumps(entry, ensure_ascii=False), *self._secrets)
        with open(self.folder / EXCHANGES, "a", encoding="utf-8") as out:
            out.write(line + "\n")

    def header(self, task_id: str, start_url: str, screen: tuple[int, int], profile: dict[str, Any]) -> None:
        self._write({"kind": "header", "task_id": task_id, "start_url": start_url, "screen": list(screen),
                     "profile": profile})

    def _store_images(self, body: dict[str, Any]) -> dict[str, Any]:
        def store(url: str) -> str:
            kind = _DATA_URL.match(url)
            if kind is None:
                return url
            data = base64.b64decode(url[kind.end():])
            name = f"images/{hashlib.sha256(data).hexdigest()}.{kind[1]}"
            target = self.folder / name
            if not target.exists():
                target.write_bytes(data)
            return name

        return _map_strings(json.loads(json.dumps(body)), store)

    def turn(self, body: dict[str, Any], exchange: Exchange | None, error: InfraError | None = None) -> None:
        self._turn += 1
        entry: dict[str, Any] = {"kind": "turn", "turn": self._turn, "request": self._store_images(body)}
        if exchange is not None:
            entry.update(reply=exchange.text, retries=exchange.retries, latency_s=round(exchange.latency_s, 4),
                         errors=exchange.errors)
        if error is not None:
            entry["error"] = {"kind": error.kind, "message": error.message}
        self._write(entry)


class RecordingTransport:
    def __init__(self, inner: Transport, recorder: Recorder) -> None:
        self.inner = inner
        self.recorder = recorder

    async def complete(self, body: dict[str, Any]) -> Exchange:
        try:
            exchange = await self.inner.complete(body)
        except InfraError as exc:
            self.recorder.turn(body, None, exc)
            raise
        self.recorder.turn(body, exchange)
        return exchange

    async def close(self) -> None:
        await self.inner.close()


def _map_strings(value: Any, change: Any) -> Any:
    """Every string of a JSON value passed through `change` (the images of both request formats are strings)."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, list):
        return [_map_strings(item, change) for item in value]
    if isinstance(value, dict):
        return {key: _map_strings(item, change) for key, item in value.items()}
    return value


def expand_request(folder: Path, request: dict[str, Any]) -> dict[str, Any]:
    """A recorded request as it was sent, images put back as data URLs."""
    def expand(text: str) -> str:
        if not _STORED.match(text):
            return text
        mime = "image/" + text.rsplit(".", 1)[1]
        return f"data:{mime};base64," + base64.b64encode((folder / text).read_bytes()).decode("ascii")

    return _map_strings(request, expand)


def find_recording(replay_from: Path, task_id: str) -> Path:
    """The exchanges of a task's latest recorded attempt in a run directory (or in its tasks/ folder)."""
    for base in (replay_from / "tasks" / task_id, replay_from / task_id):
        recorded = [path for path in base.glob(f"attempt-*/{FOLDER}/{EXCHANGES}")
                    if path.parts[-3].removeprefix("attempt-").isdigit()]
        if recorded:
            return max(recorded, key=lambda path: int(path.parts[-3].removeprefix("attempt-")))
    raise ReplayMissing(f"no recording of task {task_id} under {replay_from}")


def read_recording(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not lines or lines[0].get("kind") != "header":
        raise ReplayMissing(f"{path} has no header line")
    return lines[0], [line for line in lines[1:] if line.get("kind") == "turn"]


def canonical(body: dict[str, Any]) -> list[str]:
    """The parts of a request that replay compares: parameters and every message's text, images as <image>."""
    lines = [f"{key}={json.dumps(value, sort_keys=True, ensure_ascii=False)}"
             for key, value in sorted(body.items()) if key not in ("messages", "input")]
    if "input" in body:
        return lines + _input_lines(body["input"])
    for index, message in enumerate(body.get("messages", [])):
        head = f"message {index} ({message.get('role')})"
        content = message.get("content")
        parts = content if isinstance(content, list) else [{"type": "text", "text": content}]
        for part in parts:
            lines.append(f"{head}: <image>" if part.get("type") == "image_url" else f"{head}: {part.get('text')}")
        for call in message.get("tool_calls") or []:
            lines.append(f"{head} calls {call['function']['name']}({call['function']['arguments']})")
        if "tool_call_id" in message:
            lines.append(f"{head} answers {message['tool_call_id']}")
    return lines


def _input_lines(items: Any) -> list[str]:
    """Responses API input: one line per item part, its images as <image>."""
    lines = []
    for index, item in enumerate(items if isinstance(items, list) else [items]):
        if not isinstance(item, dict):
            lines.append(f"item {index}: {item}")
            continue
        head = f"item {index} ({item.get('role') or item.get('type')})"
        content = item.get("content")
        if isinstance(content, list):
            for part in content:
                text = part.get("text") if isinstance(part, dict) else part
                lines.append(f"{head}: <image>" if isinstance(part, dict) and part.get("type") == "input_image"
                             else f"{head}: {text}")
            continue
        shown = _map_strings(item, lambda text: "<image>" if _DATA_URL.match(text) or _STORED.match(text) else text)
        lines.append(f"{head}: {json.dumps(shown, sort_keys=True, ensure_ascii=False)}")
    return lines


class ReplayTransport:
    """Plays a recording back: no network, the recorded replies in order, as long as the requests still match."""

    def __init__(self, path: Path, start_url: str) -> None:
        self.path = path
        self.header, self.turns = read_recording(path)
        old, new = _origin(self.header.get("start_url", "")), _origin(start_url)
        self._moved = (re.compile(re.escape(old) + r"(?![\w.:-])"), new) if old and old != new else None
        self._index = 0

    def _move(self, text: str) -> str:
        return self._moved[0].sub(self._moved[1], text) if self._moved else text

    async def complete(self, body: dict[str, Any]) -> Exchange:
        if self._index >= len(self.turns):
            raise ReplayDiverged(f"the recording ends after {len(self.turns)} turns, and the episode goes on")
        entry = self.turns[self._index]
        self._index += 1
        recorded = [self._move(line) for line in canonical(entry["request"])]
        now = canonical(body)
        for before, after in zip(recorded, now):
            if before != after:
                raise ReplayDiverged(f"turn {self._index}: the request differs from the recording: "
                                     f"recorded {before[:160]!r}, now {after[:160]!r}")
        if len(recorded) != len(now):
            raise ReplayDiverged(f"turn {self._index}: the request has {len(now)} parts, the recording "
                                 f"{len(recorded)}")
        if "error" in entry:
            error = entry["error"]
            raise InfraError(error.get("kind", "policy_unavailable"), f"(recorded) {error.get('message', '')}")
        text = self._move(entry.get("reply", ""))
        reply, unreadable = parse_reply(text)
        return Exchange(text=text, reply=reply, unreadable=unreadable)

    async def close(self) -> None:
        pass
