"""Pictures of an episode: a screenshot with the click point marked, and an animated replay of all its steps."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw, ImageFont

from webeval.report.steps import describe, points

MARK = (230, 20, 60)
HALO = (255, 255, 255)
REPLAY_WIDTH = 640  # half of a 1280 px screen: the page stays readable and a frame stays a few tens of kB
FRAME_MS = 1200
LAST_FRAME_MS = 3000


def _draw_marks(image: Image.Image, actions: list[dict[str, Any]], scale: float = 1.0) -> None:
    draw = ImageDraw.Draw(image)
    radius = max(7, round(16 * scale))
    for action in actions:
        spots = [(round(x * scale), round(y * scale)) for x, y in points(action)]
        if len(spots) == 2:  # a drag: where it went
            draw.line([spots[0], spots[1]], fill=HALO, width=max(3, round(5 * scale)))
            draw.line([spots[0], spots[1]], fill=MARK, width=max(1, round(3 * scale)))
        for x, y in spots:
            # A ring with a white halo reads on light and dark pages alike; the dot is the exact pixel.
            draw.ellipse([x - radius - 2, y - radius - 2, x + radius + 2, y + radius + 2], outline=HALO,
                         width=max(3, round(8 * scale)))
            draw.ellipse([x - radius, y - radius, x + radius, y + radius], outline=MARK, width=max(2, round(4 * scale)))
            dot = max(1, round(2 * scale))
            draw.ellipse([x - dot, y - dot, x + dot, y + dot], fill=MARK)


def marked_png(png: bytes, actions: list[dict[str, Any]]) -> bytes | None:
    """A copy of the screenshot with every point the actions aimed at marked; None when there is no point."""
    if not any(points(action) for action in actions):
        return None
    with Image.open(io.BytesIO(png)) as original:
        image = original.convert("RGB")
    _draw_marks(image, actions)
    out = io.BytesIO()
    image.save(out, "PNG", compress_level=3)  # 3: half the time of 6, a few % larger
    return out.getvalue()


@dataclass
class Frame:
    screenshot: Path
    step: int
    actions: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None


def _font(size: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow without FreeType: the bitmap font has one size
        return ImageFont.load_default()


def _caption(frame: Frame) -> str:
    if frame.error is not None:
        return f"step {frame.step}: invalid reply"
    what = "; ".join(describe(a) for a in frame.actions) or "no action"
    return f"step {frame.step}: {what}"


def replay_webp(frames: list[Frame], width: int = REPLAY_WIDTH) -> bytes | None:
    """An animated WebP of the steps, downscaled, each frame captioned and marked; None with no screenshot."""
    images: list[Image.Image] = []
    font = _font(14)
    for frame in frames:
        try:
            with Image.open(frame.screenshot) as original:
                image = original.convert("RGB")
        except (OSError, ValueError):
            continue  # a screenshot that was never written: the replay shows the steps that have one
        scale = min(1.0, width / image.width)
        if scale < 1.0:
            image = image.resize((round(image.width * scale), round(image.height * scale)), Image.LANCZOS)
        _draw_marks(image, frame.actions, scale)
        # The caption goes on a bar above the page, so that it hides nothing the agent saw.
        caption = _caption(frame)
        bar = ImageDraw.Draw(image).textbbox((6, 4), caption, font=font)[3] + 5
        framed = Image.new("RGB", (image.width, image.height + bar), (20, 20, 20))
        framed.paste(image, (0, bar))
        ImageDraw.Draw(framed).text((6, 4), caption, fill=(255, 255, 255), font=font)
        images.append(framed)
    if not images:
        return None
    out = io.BytesIO()
    durations = [FRAME_MS] * (len(images) - 1) + [LAST_FRAME_MS]
    images[0].save(out, "WEBP", save_all=True, append_images=images[1:], duration=durations, loop=0,
                   quality=55, method=4)
    return out.getvalue()
