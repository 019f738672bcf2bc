"""`webeval profile check NAME|PATH [--served [URL]]`: validate a model profile and print one request exactly as the
policy would send it for a first step (images elided, described by their type, size and bytes). The API key is never
shown; only whether its variable is set. With `--served`, the profile's recipe lock is compared with what its vLLM
server reports (webeval.policy.openai.recipe_check)."""

from __future__ import annotations

import argparse
import asyncio
import base64
import io
import json
import os
import re
from pathlib import Path
from typing import Any

from PIL import Image

from webeval.actions import Observation
from webeval.cli import CommandError
from webeval.models import PreflightError
from webeval.models.endpoint import read_key
from webeval.models.served import served_facts
from webeval.policy.openai import OpenAIPolicy, ProfileError, load_profile, make_adapter
from webeval.policy.openai.recipe_check import check_recipe
from webeval.policy.openai.transport import policy_endpoint
from webeval.policy.openai.image import frame_for
from webeval.policy.openai.profile import Profile
from webeval.policy.openai.set_of_marks import Mark
from webeval.tasks import Task

_DATA_URL = re.compile(r"^data:(image/[a-z]+);base64,")
SAMPLE_URL = "https://example.test/"


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("profile", help="check a model profile")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    check = actions.add_parser("check", help="validate a policy profile; print one request as it would be sent")
    check.add_argument("profile", metavar="NAME|PATH", help="a .toml or .json file, or a name in policy-profiles.toml")
    check.add_argument("--screen", default="1280x720", metavar="WxH", help="the screen to show (default 1280x720)")
    check.add_argument("--served", nargs="?", const="", default=None, metavar="URL",
                       help="compare the profile's recipe lock with what its vLLM server reports (at URL, else at "
                            "the profile's base_url): exit 1 when a pin differs")
    check.set_defaults(func=run)


def _screen(text: str) -> tuple[int, int]:
    match = re.fullmatch(r"(\d+)x(\d+)", text)
    if match is None or min(int(match[1]), int(match[2])) < 1:
        raise CommandError(f"--screen {text!r}: expected WIDTHxHEIGHT, e.g. 1280x720")
    return int(match[1]), int(match[2])


def _blank(screen: tuple[int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", screen, "white").save(out, format="PNG", compress_level=1)
    return out.getvalue()


async def first_request(profile: Profile, screen: tuple[int, int]) -> dict[str, Any]:
    """The body of the first request of an episode on a blank page, as the policy builds it."""
    async def no_marks() -> list[Mark]:
        return []

    policy = OpenAIPolicy(profile, make_adapter(profile, screen, no_marks), transport=lambda: None)
    policy.start(Task(id="check--1", site="check", goal="(the task's goal)", start_url=SAMPLE_URL))
    return await policy.request(Observation(step=1, screenshot_png=_blank(screen), size=screen, url=SAMPLE_URL,
                                            title="Example"))


def elide_images(value: Any) -> Any:
    """Every image data URL replaced by `<image/jpeg 1288x728, 41234 bytes>`."""
    if isinstance(value, str) and (kind := _DATA_URL.match(value)):
        data = base64.b64decode(value[kind.end():])
        width, height = Image.open(io.BytesIO(data)).size
        return f"<{kind[1]} {width}x{height}, {len(data)} bytes>"
    if isinstance(value, list):
        return [elide_images(item) for item in value]
    if isinstance(value, dict):
        return {key: elide_images(item) for key, item in value.items()}
    return value


def summary(profile: Profile, screen: tuple[int, int]) -> list[str]:
    frame = frame_for(profile, screen)
    key = "set; never shown" if os.environ.get(profile.api_key_env) else "not set: no key is sent"
    space = "pixels of that image" if frame.space == frame.image else f"a {frame.space[0]}x{frame.space[1]} grid"
    if profile.adapter in ("grid-1", "grid-999", "webvoyager"):
        space = {"grid-1": "fractions 0..1 of the screen", "grid-999": "a 0..999 grid over the screen",
                 "webvoyager": "element labels (set-of-marks)"}[profile.adapter]
    lines = [f"model {profile.model} at {profile.base_url} (api {profile.api}, adapter {profile.adapter})",
             f"key: ${profile.api_key_env} ({key})",
             f"image: a {screen[0]}x{screen[1]} screen is sent as {frame.image[0]}x{frame.image[1]} "
             f"({profile.image.describe()}); the model's coordinates are {space}"]
    if profile.recipe is not None:
        lines.append(f"serving recipe: {profile.recipe.describe()}")
    return lines


def run(args: argparse.Namespace) -> int:
    screen = _screen(args.screen)
    try:
        profile = load_profile(args.profile, {}, Path.cwd())
    except ProfileError as exc:
        raise CommandError(str(exc)) from None
    body = asyncio.run(first_request(profile, screen))
    path = "responses" if profile.api == "responses" else "chat/completions"
    print(f"profile {args.profile}: valid")
    for line in summary(profile, screen):
        print(f"  {line}")
    print(f"POST {profile.base_url}/{path}")
    print(json.dumps(elide_images(body), indent=2, ensure_ascii=False))
    return 0 if args.served is None else served_check(profile, args.served or profile.base_url)


def served_check(profile: Profile, url: str) -> int:
    """The recipe lock against the server at `url`: one line per pin; 1 when one differs or the model is not
    served, else 0."""
    endpoint = policy_endpoint(profile.model_copy(update={"base_url": url.rstrip("/")}),
                               read_key(os.environ, profile.api_key_env))
    try:
        facts = served_facts(endpoint)
    except PreflightError as exc:
        raise CommandError(str(exc)) from None
    lock = profile.recipe.lock if profile.recipe is not None else None
    if facts.model not in facts.listed:
        listed = ", ".join(facts.listed) or "nothing"
        print(f"served: {endpoint.base_url} does not serve model {facts.model!r} (it serves {listed})")
        return 1
    print(f"served: {endpoint.base_url} serves model {facts.model}; its recipe lock "
          + ("pins " + ", ".join(lock.pinned()) if lock is not None and lock.pinned() else "pins nothing"))
    findings = check_recipe(lock, facts)
    for finding in findings:
        print(f"  {finding.line}")
    return 1 if any(finding.state == "differs" for finding in findings) else 0
