"""The observation: a grab of the X display itself, so its pixels are screen pixels whatever window is in front."""

from __future__ import annotations

import asyncio
import ctypes
import struct
import weakref
import zlib

from isal import isal_zlib
from PIL import Image

from webeval.outcomes.record import InfraError
from webeval.runtime.display import Display, x_client

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_READERS: weakref.WeakKeyDictionary[Display, object] = weakref.WeakKeyDictionary()


def _keep_buffers_mapped() -> None:
    """Let freed screen-sized buffers be reused instead of returned to the kernel.

    glibc serves each allocation over 128 kB with a fresh mmap and returns it on free, so each of the few 3-4 MB
    buffers of an observation (pixels, RGB rows, PNG rows) is faulted in page by page again: that was half the
    observation's CPU. Raising the thresholds keeps them on the heap: a few tens of MB held per worker, at most.
    """
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt(-3, 64 << 20)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, 256 << 20)  # M_TRIM_THRESHOLD
    except (OSError, AttributeError):
        pass  # not glibc: slower, not wrong


def _reader(display: Display):
    """One connection per display, kept open: the screen is read through shared memory (MIT-SHM).

    XGetImage, what PIL's ImageGrab does, sends the 3.7 MB of a 1280x720 screen through the X socket: 8-11 ms of CPU
    here. XShmGetImage lets the server write them into memory this process maps: under 1 ms. mss falls back to
    XGetImage by itself where shared memory is unavailable.
    """
    reader = _READERS.get(display)
    if reader is None:
        import mss

        _keep_buffers_mapped()
        with x_client(display.env()):
            reader = mss.MSS(display=display.name)
        _READERS[display] = reader
        weakref.finalize(display, reader.close)  # a replaced display takes its connection with it
    return reader


def _bgrx(display: Display) -> bytearray:
    """The screen's pixels as the X server keeps them: blue, green, red and a padding byte each."""
    if not display.alive:
        raise InfraError("display", f"the X display {display.name} is gone")
    try:
        shot = _reader(display).grab({"left": 0, "top": 0, "width": display.width, "height": display.height})
    except Exception as exc:
        if display.alive:
            raise  # the X server runs: a failure to read it is ours to fix, not infrastructure
        raise InfraError("display", f"cannot read the screen of {display.name}: {exc}") from None
    return shot.raw


def grab(display: Display) -> Image.Image:
    """The screen as an RGB image."""
    return Image.frombuffer("RGB", (display.width, display.height), _bgrx(display), "raw", "BGRX", 0, 1)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _png(rgb: bytes, width: int, height: int) -> bytes:
    """A lossless PNG, written for speed: no row filter, then deflate with ISA-L at its level 1.

    Pillow tries every PNG filter on every row (adaptive filtering): on a 1280x720 screenshot that alone costs more
    than deflating, and on flat web pages it makes the file larger, not smaller. Unfiltered rows deflated by zlib at
    level 1 are 3-5x faster than Pillow; ISA-L's deflate (the same zlib stream) is 3-4x faster again, about 2 ms,
    as cheap as a JPEG of the same screen, for files 5-10% larger (measured on the offline sites).
    """
    stride = width * 3
    rows = b"".join(b"\x00" + rgb[y * stride:(y + 1) * stride] for y in range(height))  # filter type 0 per row
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB, deflate, no interlace
    return _SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", isal_zlib.compress(rows, 1)) + _chunk(b"IEND", b"")


def encode_png(image: Image.Image) -> bytes:
    if image.mode != "RGB":
        image = image.convert("RGB")
    return _png(image.tobytes(), *image.size)


def screen_png(display: Display) -> bytes:
    """The screen as a PNG, with one pass from the server's pixels to RGB rows."""
    size = (display.width, display.height)
    # A view, not a copy: its channels keep the server's order, so its "R" is blue and packing it as BGR gives RGB.
    view = Image.frombuffer("RGBX", size, _bgrx(display), "raw", "RGBX", 0, 1)
    return _png(view.tobytes("raw", "BGR"), *size)


GRAB_S = 10.0  # a grab and its encoding take 5-20 ms; an X server that takes this long is stuck


async def screenshot_png(display: Display) -> bytes:
    """Grab and encode off the event loop: both are CPU work that would stall every other coroutine."""
    try:
        return await asyncio.wait_for(asyncio.to_thread(screen_png, display), GRAB_S)
    except asyncio.TimeoutError:
        raise InfraError("display", f"the screen of {display.name} could not be read within {GRAB_S:g} s") from None
