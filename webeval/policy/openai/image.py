"""The image the model sees (encoded and resized as its profile says), and the exact way back from the model's
coordinates to screen pixels. The full-size lossless screenshot stays the trajectory's, the judge's and the report's.

A resampled image's pixel i covers the screen interval [i * W / w, (i + 1) * W / w); its centre is the point the
model means. So model pixel x maps to screen pixel floor((x + 1/2) * W / w), computed in integers. That is the
identity when the sizes agree, never leaves the screen, and lands within half a model pixel of where the model
pointed.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass

from PIL import Image

from webeval.policy.openai.profile import ImageSpec, Profile

MIME = {"png": "image/png", "jpeg": "image/jpeg", "webp": "image/webp"}
MAX_RATIO = 200  # Qwen2.5-VL's processor refuses a more elongated image


@dataclass(frozen=True)
class Frame:
    """The geometry between the screen and the model: the image it sees, and the space its coordinates are in."""

    screen: tuple[int, int]
    image: tuple[int, int]
    space: tuple[int, int]  # the image's own pixels, unless the profile names a virtual grid such as 1000x1000

    @property
    def identity(self) -> bool:
        return self.space == self.screen

    def to_screen(self, x: int, y: int) -> tuple[int, int]:
        """The screen pixel under the centre of the model's pixel (x, y)."""
        (width, height), (across, down) = self.screen, self.space
        return (2 * x + 1) * width // (2 * across), (2 * y + 1) * height // (2 * down)

    def to_space(self, x: int, y: int) -> tuple[int, int]:
        """The model's pixel that holds the centre of screen pixel (x, y): what a model that is exactly right says."""
        (width, height), (across, down) = self.screen, self.space
        return (2 * x + 1) * across // (2 * width), (2 * y + 1) * down // (2 * height)


def smart_resize(width: int, height: int, factor: int = 1, min_pixels: int | None = None,
                 max_pixels: int | None = None) -> tuple[int, int]:
    """Width and height as multiples of `factor`, the pixel count within the bounds, the aspect ratio kept as
    closely as that allows (the rule of Qwen2.5-VL's image processor)."""
    if max(width, height) / min(width, height) > MAX_RATIO:
        raise ValueError(f"an image of {width}x{height} is more elongated than {MAX_RATIO}:1")
    across = max(factor, round(width / factor) * factor)
    down = max(factor, round(height / factor) * factor)
    if max_pixels is not None and across * down > max_pixels:
        beta = math.sqrt(width * height / max_pixels)
        across = max(factor, math.floor(width / beta / factor) * factor)
        down = max(factor, math.floor(height / beta / factor) * factor)
    elif min_pixels is not None and across * down < min_pixels:
        beta = math.sqrt(min_pixels / (width * height))
        across = math.ceil(width * beta / factor) * factor
        down = math.ceil(height * beta / factor) * factor
    return across, down


def image_size(spec: ImageSpec, screen: tuple[int, int]) -> tuple[int, int]:
    if spec.size is not None:
        return spec.size
    if spec.resizes:
        return smart_resize(screen[0], screen[1], spec.factor, spec.min_pixels, spec.max_pixels)
    return screen


def frame_for(profile: Profile, screen: tuple[int, int]) -> Frame:
    image = image_size(profile.image, screen)
    return Frame(screen=screen, image=image, space=profile.coordinate_space or image)


@dataclass(frozen=True)
class Encoded:
    data: bytes
    mime: str
    size: tuple[int, int]


def encode(png: bytes, spec: ImageSpec, size: tuple[int, int]) -> Encoded:
    """The screenshot as the model receives it. A PNG wanted at its own size is passed on as it is, byte for byte."""
    image = Image.open(io.BytesIO(png))  # reads the header only: the pixels are decoded when needed
    if spec.format == "png" and image.size == size:
        return Encoded(png, MIME["png"], size)
    if image.mode != "RGB":
        image = image.convert("RGB")
    if image.size != size:
        image = image.resize(size, Image.Resampling.BICUBIC)  # the resampling of Qwen's processor
    out = io.BytesIO()
    options = {"compress_level": 1} if spec.format == "png" else {}
    if spec.quality is not None:
        options["quality"] = spec.quality
    image.save(out, format=spec.format.upper(), **options)
    return Encoded(out.getvalue(), MIME[spec.format], size)
