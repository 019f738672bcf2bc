"""Model families as the scripted OpenAI-compatible server plays them: each family's exact reply format for a click,
typing, a key, or the final answer, with coordinates in the family's own space (pixels of the resized image it was
sent, or a 1000x1000 grid), and reading the image a request carries as the model would receive it."""

from __future__ import annotations

import base64
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image, ImageChops

from fixtures.openai_stub import Reply, call, computer_call, text
from tests.conftest import ROOT
from webeval.policy.openai import Profile, ProfileError, load_profile

PROFILES = ROOT / "docs" / "profiles"
FAMILIES = {  # family -> its documented profile
    "qwen2.5-vl": "vllm-qwen2.5-vl.toml",
    "qwen3-vl": "vllm-qwen3-vl.toml",
    "ui-tars": "vllm-ui-tars-1.5.toml",
    "computer-use": "openai-computer-use.toml",
    "reasoning": "vllm-qwen3-vl-thinking.toml",
}
THOUGHT = "The target is in front of me; I act on it."


def family_profile(family: str, base_url: str) -> Profile:
    return load_profile(PROFILES / FAMILIES[family], {"base_url": base_url})


def profile_problem(folder: Path, fields: dict[str, Any]) -> tuple[Path, str]:
    """A JSON profile with these fields loaded for real: its path, and the one-line error it gave."""
    path = folder / "p.json"
    path.write_text(json.dumps({"base_url": "http://127.0.0.1:9/v1", "model": "m", **fields}))
    try:
        load_profile(str(path), {})
    except ProfileError as exc:
        assert "\n" not in str(exc)
        return path, str(exc)
    raise AssertionError(f"{fields} loaded without an error")


def _images(value: Any) -> list[str]:
    """Every image data URL of a request, in order (chat parts, Responses input images and computer call outputs)."""
    if isinstance(value, str):
        return [value] if value.startswith("data:image/") else []
    if isinstance(value, list):
        return [url for item in value for url in _images(item)]
    if isinstance(value, dict):
        return [url for item in value.values() for url in _images(item)]
    return []


def latest_image(request: dict[str, Any]) -> tuple[Image.Image, str]:
    """The newest image of the request, decoded, and its MIME type: what the model looks at now."""
    url = _images(request.get("messages") or request.get("input"))[-1]
    head, data = url.split(",", 1)
    return Image.open(io.BytesIO(base64.b64decode(data))), head.removeprefix("data:").removesuffix(";base64")


@dataclass(frozen=True)
class Act:
    """One move of a model, coordinates in its own space."""

    kind: str  # click | type | key | answer | wait
    x: int = 0
    y: int = 0
    text: str = ""
    keys: tuple[str, ...] = ()


def reply(family: str, act: Act) -> Reply:
    """The family's reply, in its own format, for one move."""
    if family == "ui-tars":
        return text(f"Thought: {THOUGHT}\nAction: {_ui_tars(act)}")
    if family == "computer-use":
        if act.kind == "answer":
            return Reply(content=act.text, reasoning="The task is done.")
        return Reply(reasoning=THOUGHT, items=[computer_call(_computer(act))])
    tool = {"click": lambda: call("computer", {"action": "click", "x": act.x, "y": act.y}),
            "type": lambda: call("computer", {"action": "type", "text": act.text}),
            "key": lambda: call("computer", {"action": "key", "keys": list(act.keys)}),
            "wait": lambda: call("computer", {"action": "wait", "seconds": 1}),
            "answer": lambda: call("terminate", {"status": "success", "answer": act.text})}[act.kind]()
    if family == "reasoning":
        tool.reasoning, tool.reasoning_tokens = f"<reasoning of the {act.kind}> {THOUGHT}", 42
    return tool


def _quote(value: str) -> str:
    return value.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")


def _ui_tars(act: Act) -> str:
    return {"click": f"click(start_box='({act.x},{act.y})')", "type": f"type(content='{_quote(act.text)}')",
            "key": f"hotkey(key='{' '.join(act.keys)}')", "wait": "wait()",
            "answer": f"finished(content='{_quote(act.text)}')"}[act.kind]


def _computer(act: Act) -> dict[str, Any]:
    return {"click": {"type": "click", "button": "left", "x": act.x, "y": act.y},
            "type": {"type": "type", "text": act.text},
            "key": {"type": "keypress", "keys": [key.upper() for key in act.keys]},
            "wait": {"type": "wait"}}[act.kind]


def red_centre(image: Image.Image) -> tuple[float, float] | None:
    """The centroid of the red target in the image (pixel centres at integer coordinates), or None without one."""
    rgb = image.convert("RGB")
    red, green, blue = rgb.split()
    mask = ImageChops.multiply(ImageChops.multiply(red.point(lambda v: 255 if v > 180 else 0),
                                                   green.point(lambda v: 255 if v < 90 else 0)),
                               blue.point(lambda v: 255 if v < 90 else 0))
    box = mask.getbbox()
    if box is None:
        return None
    left, top, right, _ = box
    crop = rgb.crop((left - 2, top - 2, right + 2, box[3] + 2))  # the resampled edge's pink pixels count too
    data = crop.tobytes()
    weights = [max(0.0, data[i] - (data[i + 1] + data[i + 2]) / 2) for i in range(0, len(data), 3)]
    total, width = sum(weights), crop.width
    cx = sum(w * (i % width) for i, w in enumerate(weights)) / total + left - 2
    cy = sum(w * (i // width) for i, w in enumerate(weights)) / total + top - 2
    return cx, cy


def in_space(profile: Profile, image: Image.Image, centre: tuple[float, float]) -> tuple[int, int]:
    """Where a model that sees `centre` in the image points, in its coordinate space."""
    width, height = image.size
    if profile.coordinate_space is None:
        return round(centre[0]), round(centre[1])
    across, down = profile.coordinate_space
    return int((centre[0] + 0.5) * across / width), int((centre[1] + 0.5) * down / height)
