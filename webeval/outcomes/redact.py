"""Secrets never leave the process: one redactor, built from every secret the harness was configured with.

Secrets are read from the environment in several rooms (the policy's key, the judge's key, a proxy's credentials,
credentials in a `--site-map` URL, any variable named with `--secret-env`). Whatever reads one declares it here, to
the process's one `SECRETS`, and everything that writes text for a person or a file passes it through `redact`: the
records, trajectories, recordings, reports, log lines and the terminal. A credential written into a URL
(`scheme://user:password@host`) is masked too, declared or not.

`EMPTY`, the placeholder key sent to endpoints that need none, is not a secret. A value shorter than MIN_LENGTH
cannot be told apart from ordinary text and is not masked (a key or password is longer).
"""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path
from typing import Any, Callable, Iterable
from urllib.parse import quote

MASK = "***"
PLACEHOLDER = "EMPTY"
MIN_LENGTH = 4
_URL_CREDENTIALS = re.compile(r"\b([a-z][a-z0-9+.-]*://)[^/\s@?#]+@", re.IGNORECASE)


def _forms(secret: str) -> set[str]:
    """The secret as it may appear in text: itself, URL-quoted (in a URL), JSON-escaped (inside a JSON string)."""
    return {form for form in (secret, quote(secret, safe=""), json.dumps(secret)[1:-1]) if len(form) >= MIN_LENGTH}


class Secret(str):
    """A secret that is still the string it is (for the client that sends it), but whose repr never shows it."""

    def __repr__(self) -> str:
        return repr(MASK)


class Redactor:
    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        self._forms: list[str] = []
        self.add(*secrets)

    def add(self, *secrets: str | None) -> None:
        """Declare secrets; None, the empty string, the placeholder and too short a value are not secrets."""
        found = set(self._forms)
        for secret in secrets:
            if secret and secret != PLACEHOLDER and len(secret) >= MIN_LENGTH:
                found |= _forms(str(secret))
        self._forms = sorted(found, key=len, reverse=True)  # a longer secret that holds a shorter one goes first

    def __bool__(self) -> bool:
        return bool(self._forms)

    def __repr__(self) -> str:
        return f"Redactor({len(self._forms)} forms of secrets)"

    def __call__(self, text: str) -> str:
        for form in self._forms:
            if form in text:
                text = text.replace(form, MASK)
        return _URL_CREDENTIALS.sub(rf"\1{MASK}@", text) if "@" in text else text

    def in_bytes(self, data: bytes) -> bytes:
        """A file's bytes with every secret masked (URL credentials aside: those need a text's word boundaries)."""
        for form in self._forms:
            encoded = form.encode("utf-8")
            if encoded in data:
                data = data.replace(encoded, MASK.encode())
        return data

    def found_in(self, data: bytes) -> bool:
        return any(form.encode("utf-8") in data for form in self._forms)


SECRETS = Redactor()  # this process's secrets: every part that reads one from the environment declares it


def declare(*secrets: str | None) -> None:
    SECRETS.add(*secrets)


def redact(text: str, *also: str | None) -> str:
    """`text` with every declared secret (and the ones in `also`) masked, and credentials in URLs."""
    return Redactor(also)(SECRETS(text)) if any(also) else SECRETS(text)


def redact_log_records() -> Callable[..., logging.LogRecord]:
    """From now on every log record is redacted as it is made, so whichever handler shows it (the terminal, a log
    file, a test report's captured log, uvicorn's access log) shows no secret; the record factory it wraps is
    returned, to be put back."""
    made = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = made(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad format is the logging module's to report, not ours
            return record
        masked = redact(message)
        if masked != message:
            record.msg, record.args = masked, ()
        if record.exc_info and record.exc_info[0] is not None:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        return record

    logging.setLogRecordFactory(factory)
    return made


TEXT_SUFFIXES = frozenset({".json", ".jsonl", ".md", ".txt", ".xml", ".html", ".htm", ".log", ".csv", ".properties",
                           ".yaml", ".yml", ".js", ".css", ".svg"})


def scrub(root: Path, redactor: Redactor = SECRETS) -> list[Path]:
    """Mask the secrets in every text file under `root` (or in `root` itself), in place; the files it changed.

    What the harness writes is redacted as it is written; this also reaches what other plugins wrote (Allure's
    results, pytest's JUnit XML). A link is never followed: a file outside `root` is not this run's to rewrite.
    """
    if not redactor or not root.exists() or root.is_symlink():
        return []
    files = [root] if root.is_file() else [Path(top) / name for top, _, names in os.walk(root) for name in names]
    changed = []
    for path in files:
        if path.suffix.lower() not in TEXT_SUFFIXES or path.is_symlink() or not path.is_file():
            continue
        data = path.read_bytes()
        if redactor.found_in(data):
            aside = path.with_name(f".{path.name}.redacting")
            aside.write_bytes(redactor.in_bytes(data))
            os.replace(aside, path)
            changed.append(path)
    return changed
