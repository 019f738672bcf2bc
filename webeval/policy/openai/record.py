"""Record and replay: each task's exact requests and replies, kept under its attempt folder and played back offline.

`<attempt>/policy/exchanges.jsonl` holds a header (task, start URL, screen, profile: never a key) and one line per
turn: the request body as sent, with each screenshot's data URL replaced by a reference to `images/<sha256>.png`
(lossless, stored once), and the reply body exactly as received (or the error that ended the turn).

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
from webeval.policy.openai.client import Exchange, Transport, parse_reply, redact

FOLDER = "policy"
EXCHANGES = "exchanges.jsonl"
_DATA_URL = "data:image/png;base64,"


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
        line = redact(json.dumps(entry, ensure_ascii=False), self._secrets)
        with open(self.folder / EXCHANGES, "a", encoding="utf-8") as out:
            out.write(line + "\n")

    def header(self, task_id: str, start_url: str, screen: tuple[int, int], profile: dict[str, Any]) -> None:
        self._write({"kind": "header", "task_id": task_id, "start_url": start_url, "screen": list(screen),
                     "profile": profile})

    def _store_images(self, body: dict[str, Any]) -> dict[str, Any]:
        stored = json.loads(json.dumps(body))
        for message in stored.get("messages", []):
            for part in message.get("content") if isinstance(message.get("content"), list) else []:
                url = (part.get("image_url") or {}).get("url", "") if isinstance(part, dict) else ""
                if url.startswith(_DATA_URL):
                    data = base64.b64decode(url[len(_DATA_URL):])
                    name = f"images/{hashlib.sha256(data).hexdigest()}.png"
                    target = self.folder / name
                    if not target.exists():
                        target.write_bytes(data)
                    part["image_url"]["url"] = name
        return stored

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


def expand_request(folder: Path, request: dict[str, Any]) -> dict[str, Any]:
    """A recorded request as it was sent, screenshots put back as data URLs."""
    body = json.loads(json.dumps(request))
    for message in body.get("messages", []):
        for part in message.get("content") if isinstance(message.get("content"), list) else []:
            url = (part.get("image_url") or {}).get("url", "") if isinstance(part, dict) else ""
            if url.startswith("images/"):
                part["image_url"]["url"] = _DATA_URL + base64.b64encode((folder / url).read_bytes()).decode("ascii")
    return body


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
    """The parts of a request that replay compares: parameters and every message's text, screenshots as <image>."""
    lines = [f"{key}={json.dumps(value, sort_keys=True, ensure_ascii=False)}"
             for key, value in sorted(body.items()) if key != "messages"]
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
