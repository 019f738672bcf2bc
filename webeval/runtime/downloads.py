"""Downloads: each one kept in the attempt folder's `downloads/`, or stopped as soon as it grows past the cap.

Playwright tells a download's end, not its progress. Chromium writes the download into Playwright's artifact file
(with `.crdownload` appended until it is complete); watching that file's size is what lets a 1 GB download be
stopped at the cap instead of filling the disk first.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace
from pathlib import Path
from typing import Callable

from playwright.async_api import Download
from playwright.async_api import Error as PlaywrightError

from webeval.outcomes.disk import (FLOOR_BYTES, PROFILE_BYTES, DiskFull, disk_error, free_bytes, full_at, full_disk,
                                   short_of_space, space_of)

DEFAULT_MAX_MB = 100.0
DEFAULT_MAX_BYTES = int(DEFAULT_MAX_MB * (1 << 20))
WATCH_EVERY_S = 0.05
FOLDER = "downloads"


def megabytes(size: float) -> str:
    return f"{size / (1 << 20):.1f}".removesuffix(".0") + " MB"


def safe_name(suggested: str) -> str:
    """The server's file name, as one plain path segment."""
    name = Path(suggested.replace("\\", "/")).name.strip().lstrip(".")
    return name[:120] or "download"


def free_path(folder: Path, name: str) -> Path:
    """`name` in `folder`, or `stem-2.ext`, `stem-3.ext`... when a download of that name is there already."""
    target = folder / name
    number = 1
    while target.exists():
        number += 1
        target = folder / f"{Path(name).stem}-{number}{Path(name).suffix}"
    return target


def _partial_file(download: Download) -> Path | None:
    """Where Chromium writes the download while it lasts: Playwright's artifact file (not part of its public API,
    so None when a Playwright version keeps it elsewhere; the cap then holds only once the download ended)."""
    try:
        return Path(download._impl_obj._artifact._initializer["absolutePath"])
    except (AttributeError, KeyError, TypeError):
        return None


def _size(partial: Path) -> int:
    for candidate in (partial.with_name(partial.name + ".crdownload"), partial):
        try:
            return candidate.stat().st_size
        except OSError:
            continue
    return 0


async def _past(partial: Path, max_bytes: int, lowest: list[int]) -> int:
    """Returns the size once the file grew past `max_bytes` (it never returns for a download that stays under). It
    also keeps in `lowest` the least room its filesystem had left meanwhile, the free space less what the download
    would take before the next look: Chromium removes a download that met a full disk, and says only "canceled"."""
    last = 0
    while (size := _size(partial)) <= max_bytes:
        with contextlib.suppress(OSError):
            lowest[0] = min(lowest[0], free_bytes(partial.parent) - 2 * (size - last))
        last = size
        await asyncio.sleep(WATCH_EVERY_S)
    return size


def _disk_full(exc: BaseException, folder: Path, max_bytes: int, partial: Path | None,
               lowest: int) -> DiskFull | None:
    """A download that failed on a full disk (the attempt's, or the temporary directory Chromium writes it into). A
    failed download where one of the cap's size cannot fit is taken for one: that filesystem is too small for the
    run as configured (`--download-max-mb`), and the line says how much a task needs there."""
    error = disk_error(exc)
    if error is not None:
        return full_disk(error, folder, PROFILE_BYTES + max_bytes)
    if partial is None:
        return short_of_space(folder, PROFILE_BYTES + max_bytes)
    space = space_of(partial.parent)
    # Seen running out of room; or failed (too fast to be seen) where a download of the cap's size cannot fit.
    if lowest < FLOOR_BYTES or space.free < max_bytes + FLOOR_BYTES:
        return full_at(replace(space, free=max(0, min(lowest, space.free))), folder, PROFILE_BYTES + max_bytes)
    return short_of_space(folder, PROFILE_BYTES + max_bytes)


async def keep(download: Download, folder: Path, max_bytes: int, note: Callable[[str], None],
               full: Callable[[DiskFull], None] = lambda _: None) -> None:
    """Save a download into `folder/downloads/`, or stop it past `max_bytes`; `note` tells the agent which. A
    download that met a full disk is also given to `full`: the attempt ends as infrastructure."""
    name = safe_name(download.suggested_filename)
    cap = f"the {megabytes(max_bytes)} cap (--download-max-mb)"
    ended = asyncio.ensure_future(download.path())
    partial = _partial_file(download)
    lowest = [1 << 62]
    grown = asyncio.ensure_future(_past(partial, max_bytes, lowest)) if partial is not None else None
    try:
        await asyncio.wait([f for f in (ended, grown) if f is not None], return_when=asyncio.FIRST_COMPLETED)
        if grown is not None and grown.done():
            await download.cancel()
            note(f"the download of {name} was stopped at {megabytes(grown.result())}: larger than {cap}")
            return
        size = ended.result().stat().st_size
        if size > max_bytes:
            note(f"the download of {name} was not kept: {megabytes(size)} is larger than {cap}")
            return
        target = free_path(folder / FOLDER, name)
        target.parent.mkdir(parents=True, exist_ok=True)
        await download.save_as(target)
        note(f"downloaded {target.name} ({size} bytes)")
    except (PlaywrightError, OSError) as exc:
        note(f"the download of {name} failed: {str(exc).splitlines()[0]}")
        disk = _disk_full(exc, folder, max_bytes, partial, lowest[0])
        if disk is not None:
            full(disk)
    finally:
        for future in filter(None, (ended, grown)):
            future.cancel()  # nothing left running, and no error left unread
            with contextlib.suppress(asyncio.CancelledError, PlaywrightError, OSError):
                await future
