"""What the end of a session could not write into the run directory (a full disk): said at its end, in one line, with
the filesystem and the space it needs, instead of an INTERNALERROR traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from webeval.outcomes.disk import full_disk

UNWRITTEN = pytest.StashKey[tuple[list[str], str]]()  # what the session's end could not write, and why


def unwritten(config: pytest.Config, what: str, error: OSError, run_path: Path) -> None:
    """A file of the session's end that a full disk kept from being written: said at its end, in one line."""
    names, _ = config.stash.get(UNWRITTEN, ([], ""))
    config.stash[UNWRITTEN] = ([*names, what], full_disk(error, run_path).line)


def unwritten_line(config: pytest.Config) -> str | None:
    if UNWRITTEN not in config.stash:
        return None
    names, why = config.stash[UNWRITTEN]
    return f"not written: {', '.join(names)} ({why})"
