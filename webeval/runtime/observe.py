"""The observation: a grab of the X display itself, so its pixels are screen pixels whatever window is in front."""

from __future__ import annotations

import asyncio
import io

from PIL import Image, ImageGrab

from webeval.outcomes.record import InfraError
from webeval.runtime.display import Display


def grab(display: Display) -> Image.Image:
    try:
        return ImageGrab.grab(bbox=(0, 0, display.width, display.height), xdisplay=display.name)
    except OSError as exc:
        raise InfraError("display", f"cannot read the screen of {display.name}: {exc}") from None


def encode_png(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG", compress_level=1)  # level 1: a third of the time of the default, nearly its size
    return out.getvalue()


async def screenshot_png(display: Display) -> bytes:
    """Grab and encode off the event loop: both are CPU work that would stall every other coroutine."""
    if not display.alive:
        raise InfraError("display", f"the X display {display.name} is gone")
    return await asyncio.to_thread(lambda: encode_png(grab(display)))
