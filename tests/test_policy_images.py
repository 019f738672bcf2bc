"""The image the model sees: Qwen2.5-VL's resize rule, the encodings, the exact way back from the model's pixels to
the screen's, the profile's image and recipe rules, and --dump-observation writing exactly what was sent."""

from __future__ import annotations

import base64
import io
import json

import pytest
from PIL import Image, ImageDraw

from fixtures.openai_stub import OpenAIStub, call
from tests.conftest import ROOT
from tests.families import FAMILIES, family_profile, profile_problem
from webeval.actions import Observation
from webeval.policy.openai import HttpTransport, OpenAIPolicy, make_adapter
from webeval.policy.openai.image import Frame, encode, frame_for, smart_resize
from webeval.policy.openai.profile import ImageSpec, make_profile
from webeval.report.run_environment import environment
from webeval.tasks import Population, Task

SIZES = [(1280, 720), (1920, 1080), (1366, 768)]


@pytest.mark.parametrize("size, bounds, expected", [
    ((1280, 720), (28, 3136, 1003520), (1288, 728)),  # both sides rounded to 28: 45.7 -> 46, 25.7 -> 26
    ((1920, 1080), (28, 3136, 1003520), (1316, 728)),  # over the budget: scaled by sqrt, floored to 28
    ((1366, 768), (28, 3136, 1003520), (1316, 728)),
    ((1920, 1080), (28, 78400, 12845056), (1932, 1092)),  # UI-TARS's bounds: only rounded
    ((1280, 720), (32, 65536, 1310720), (1280, 704)),  # 22.5 rounds to 22, as Python's round does
    ((100, 50), (28, 12544, None), (168, 84)),  # under min_pixels: scaled up, ceiled to 28
    ((1280, 720), (1, None, None), (1280, 720)),
])
def test_smart_resize_follows_qwen_processors_rule(size, bounds, expected):
    factor, low, high = bounds
    assert smart_resize(*size, factor, low, high) == expected


def test_an_image_too_elongated_is_refused():
    with pytest.raises(ValueError, match="an image of 4020x20 is more elongated than 200:1"):
        smart_resize(4020, 20, 28)


@pytest.mark.parametrize("screen", SIZES)
@pytest.mark.parametrize("space", [(1288, 728), (1316, 728), (1000, 1000), (1932, 1092), (1280, 720)])
def test_every_model_pixel_maps_inside_the_screen_within_half_a_model_pixel(screen, space):
    frame = Frame(screen, space, space)
    for axis in (0, 1):
        size, across = screen[axis], space[axis]
        mapped = [frame.to_screen(v, v)[axis] for v in range(across)]
        assert mapped[0] >= 0 and mapped[-1] < size and mapped == sorted(mapped)
        # The screen pixel holds the centre of the model's pixel: |(v + 1/2) * S / s - (p + 1/2)| <= 1/2.
        assert all(abs((v + 0.5) * size / across - (p + 0.5)) <= 0.5 for v, p in enumerate(mapped))
        back = [frame.to_space(p, p)[axis] for p in range(size)]
        assert all(abs(frame.to_screen(b, b)[axis] - p) <= max(1, size // across) for p, b in enumerate(back))


def test_the_same_size_is_the_identity():
    frame = Frame((1366, 768), (1366, 768), (1366, 768))
    assert frame.identity and all(frame.to_screen(x, x) == (x, x) for x in range(768))


@pytest.mark.parametrize("family", list(FAMILIES))
@pytest.mark.parametrize("screen", SIZES)
def test_a_dot_found_in_the_image_sent_maps_back_onto_itself(family, screen):
    """Draw a dot on the screen, encode as the family's profile does, find the dot in the image as a model would,
    point at it in the model's space: the point maps back within one pixel."""
    profile = family_profile(family, "http://127.0.0.1:9/v1")
    frame = frame_for(profile, screen)
    for x, y in [(screen[0] // 3 + 1, screen[1] // 2 + 3), (screen[0] - 6, screen[1] - 6), (5, 7)]:
        shot = Image.new("RGB", screen, "white")
        ImageDraw.Draw(shot).rectangle([x - 2, y - 2, x + 2, y + 2], fill="black")
        out = io.BytesIO()
        shot.save(out, format="PNG")
        sent = Image.open(io.BytesIO(encode(out.getvalue(), profile.image, frame.image).data)).convert("L")
        assert sent.size == frame.image
        left, top, right, bottom = sent.point(lambda v: 255 if v < 250 else 0).getbbox()
        dot = sent.crop((left, top, right, bottom))
        weights = [(255 - v, left + i % dot.width, top + i // dot.width) for i, v in enumerate(dot.tobytes())]
        total = sum(w for w, _, _ in weights)
        cx, cy = (sum(w * px for w, px, _ in weights) / total, sum(w * py for w, _, py in weights) / total)
        across, down = frame.space
        point = (int((cx + 0.5) * across / sent.width), int((cy + 0.5) * down / sent.height))
        landed = frame.to_screen(*point)
        assert abs(landed[0] - x) <= 1 and abs(landed[1] - y) <= 1, (point, landed, (x, y))


def shot(size: tuple[int, int] = (1280, 720)) -> bytes:
    image = Image.new("RGB", size, "white")
    ImageDraw.Draw(image).text((40, 40), "Pour-Over Kettle $34.99", fill="black")
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def test_a_screen_size_png_goes_out_byte_for_byte():
    original = shot()
    assert encode(original, ImageSpec(), (1280, 720)).data == original


@pytest.mark.parametrize("spec, kind", [
    (ImageSpec(format="jpeg", quality=90, max_pixels=500000, factor=28), "JPEG"),
    (ImageSpec(format="webp", quality=80, size=(640, 360)), "WEBP"),
    (ImageSpec(format="png", size=(640, 360)), "PNG"),
])
def test_other_encodings_and_sizes(spec, kind):
    size = smart_resize(1280, 720, 28, None, 500000) if spec.max_pixels else spec.size
    encoded = encode(shot(), spec, size)
    image = Image.open(io.BytesIO(encoded.data))
    assert (image.format, image.size, encoded.mime) == (kind, size, f"image/{kind.lower()}")


def test_quality_is_the_quality_asked_for():
    low = encode(shot(), ImageSpec(format="jpeg", quality=20), (1280, 720)).data
    high = encode(shot(), ImageSpec(format="jpeg", quality=95), (1280, 720)).data
    assert len(low) < len(high)


@pytest.mark.parametrize("fields, message", [
    ({"image": {"format": "png", "quality": 80}}, "image: quality applies to jpeg and webp, not png"),
    ({"image": {"size": [640, 360], "max_pixels": 1000}}, "image: give either a fixed size or max_pixels"),
    ({"image": {"min_pixels": 5000, "max_pixels": 1000}}, "image: min_pixels 5000 is above max_pixels 1000"),
    ({"image": {"format": "gif"}}, "image.format: Input should be 'png', 'jpeg' or 'webp'"),
    ({"image": {"size": [0, 360]}}, "image.size: size [0, 360] must be a positive width and height"),
    ({"image": {"max_pixels": 2000000}, "recipe": {"image_limits": {"max_pixels": 1003520}}},
     "image sends up to 2000000 px, more than the server's recipe.image_limits.max_pixels 1003520"),
    ({"recipe": {"image_limits": {"max_pixels": 1003520}}}, "image sends screen-size images, more than the server's"),
    ({"screenshots": 5, "recipe": {"image_limits": {"per_prompt": 3}}},
     "screenshots 5 is more than the server takes per prompt (recipe.image_limits.per_prompt 3)"),
    ({"recipe": {"tool_parser": "hermes"}}, "has unknown key 'recipe.tool_parser'"),
    ({"coordinate_space": [1, 1000]}, "coordinate_space: coordinate_space [1, 1000] must be at least 2x2"),
])
def test_image_and_recipe_rules_are_one_line_errors(tmp_path, fields, message):
    path, problem = profile_problem(tmp_path, fields)
    assert problem.startswith(f"profile {path}") and message in problem


def test_the_recipe_goes_into_the_run_environment():
    profile = family_profile("reasoning", "http://127.0.0.1:9/v1")
    env = environment(Population(name="local", ids=["A--1"], sha256="0" * 64), [], policy="openai",
                      model=profile.model, chromium=None, root=ROOT, recipe=profile.recipe.values())
    assert env["recipe.reasoning_parser"] == "qwen3" and env["recipe.tool_call_parser"] == "hermes"
    assert env["recipe.image_limits.per_prompt"] == "3" and env["recipe.model_revision"] == "main"


async def test_dump_observation_writes_exactly_what_the_model_received(tmp_path):
    with OpenAIStub([call("computer", {"action": "wait", "seconds": 0})]) as stub:
        profile = make_profile({"base_url": stub.base_url, "model": "stub-model",
                                "image": {"format": "webp", "quality": 70, "factor": 28, "max_pixels": 500000}})
        policy = OpenAIPolicy(profile, make_adapter(profile, (1280, 720), None),
                              lambda: HttpTransport(profile, "key"), dump=tmp_path / "model-input")
        await policy.begin(Task(id="T--1", site="T", goal="g", start_url="http://127.0.0.1:9/"))
        for step in (1, 2):
            await policy.act(Observation(step=step, screenshot_png=shot(), size=(1280, 720),
                                         url="http://127.0.0.1:9/", title="Kettle"))
        await policy.end()
    sent = stub.requests[1]["messages"][-1]["content"][1]["image_url"]["url"]
    dumped = (tmp_path / "model-input" / "step-002.webp").read_bytes()
    assert sent == "data:image/webp;base64," + base64.b64encode(dumped).decode("ascii")
    facts = json.loads((tmp_path / "model-input" / "step-002.json").read_text())
    assert facts == {"step": 2, "screen": [1280, 720], "image": [924, 504], "coordinates": [924, 504],
                     "encoding": "webp quality 70, smart_resize factor 28, max_pixels 500000",
                     "bytes": len(dumped), "text": "Step 2. URL: http://127.0.0.1:9/\nTitle: Kettle"}
    assert sorted(p.name for p in (tmp_path / "model-input").iterdir()) == [
        "step-001.json", "step-001.webp", "step-002.json", "step-002.webp"]
