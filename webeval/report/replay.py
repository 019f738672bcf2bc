"""Pictures of an episode: a screenshot with the click point marked, and an animated replay of all its steps.

Both are made when the report is built (webeval.report.pictures), for thousands of steps at a time, so each
encoding is the cheapest that still reads well: PNG without row filters, an integer downscale, WebP method 0.
"""

from __future__ import annotations

import functools
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


def has_points(actions: list[dict[str, Any]]) -> bool:
    return any(points(action) for action in actions)


def draw_marks(image: Image.Image, actions: list[dict[str, Any]], scale: float = 1.0) -> None:
    """Every point the actions aimed at, drawn onto the image itself (scaled to a downscaled screenshot)."""
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


@dataclass
class Frame:
    screenshot: Path
    step: int
    actions: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None


def load(path: Path) -> Image.Image | None:
    """The screenshot as RGB; None when it was never written or cannot be read."""
    try:
        with Image.open(path) as original:
            return original.convert("RGB")
    except (OSError, ValueError, Image.DecompressionBombError):
        return None


@functools.cache
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


def _downscaled(image: Image.Image, width: int) -> Image.Image:
    """A new image at most `width` wide: reduce() (box average) for an integer ratio, the common 1280 -> 640, is
    several times faster than resampling and as sharp at half size."""
    if image.width <= width:
        return image.copy()
    factor = image.width / width
    if factor.is_integer():
        return image.reduce(int(factor))
    return image.resize((width, round(image.height * width / image.width)), Image.BILINEAR)


def replay_frame(image: Image.Image, frame: Frame, width: int = REPLAY_WIDTH) -> Image.Image:
    """One frame of the replay: the screenshot downscaled and marked, under a caption; `image` is left as it was."""
    page = _downscaled(image, width)
    draw_marks(page, frame.actions, page.width / image.width)
    # The caption goes on a bar above the page, so that it hides nothing the agent saw.
    font = _font(14)
    caption = _caption(frame)
    bar = ImageDraw.Draw(page).textbbox((6, 4), caption, font=font)[3] + 5
    framed = Image.new("RGB", (page.width, page.height + bar), (20, 20, 20))
    framed.paste(page, (0, bar))
    ImageDraw.Draw(framed).text((6, 4), caption, fill=(255, 255, 255), font=font)
    return framed


def animate(images: list[Image.Image]) -> bytes | None:
    """The frames as an animated WebP that lingers on the last one; None without a frame."""
    if not images:
        return None
    out = io.BytesIO()
    durations = [FRAME_MS] * (len(images) - 1) + [LAST_FRAME_MS]
    # method 0: the fastest WebP encoder; about half the time of method 4, a file about a third larger.
    images[0].save(out, "WEBP", save_all=True, append_images=images[1:], duration=durations, loop=0,
                   quality=55, method=0)
    return out.getvalue()

