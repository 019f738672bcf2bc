"""Secrets never leave a run: the pytest side of webeval.outcomes.redact.

`--secret-env NAME` declares one more secret (a site password a task has the agent type, say); credentials written
into URL options (`--site-map`, `--site-proxy`, the endpoints' base URLs) are declared as the options are read, the
keys where they are read. The one redactor is then applied wherever text leaves the process: to every log record as
it is made, to everything the terminal reporter writes, and, once the session is over, to every text file of the
run directory, the Allure results and the JUnit XML, whoever wrote them.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any, Callable, TextIO
from urllib.parse import unquote, urlsplit

import pytest

from webeval.outcomes.disk import disk_error, full_disk
from webeval.outcomes.redact import SECRETS, declare, redact, redact_log_records, scrub
from webeval.plugin.keys import RUN_DIR

URL_OPTIONS = ("site_map", "site_proxy", "policy_base_url", "judge_base_url")
_FACTORY = pytest.StashKey[Callable[..., logging.LogRecord]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("webeval").addoption(
        "--secret-env", action="append", default=[], metavar="NAME",
        help="an environment variable holding a secret to mask in every artifact, report and log line (a site "
             "password a task types, say); repeat it for several. Model, judge and proxy keys are masked anyway")


def url_credentials(value: str) -> list[str]:
    """The user and password written into a URL option's value (`NAME=URL` or a bare URL), as they are and decoded."""
    url = value.partition("=")[2] if "=" in value.split("://", 1)[0] else value
    try:
        parts = urlsplit(url.strip())
        found = [parts.username, parts.password]
    except ValueError:
        return []
    return [form for secret in found if secret for form in (secret, unquote(secret))]


def _declare_options(config: pytest.Config) -> None:
    for name in config.option.secret_env:
        if not os.environ.get(name):
            raise pytest.UsageError(f"--secret-env {name}: ${name} is not set")
        declare(os.environ[name])
    for option in URL_OPTIONS:
        values = getattr(config.option, option, None) or []
        for value in [values] if isinstance(values, str) else values:
            declare(*url_credentials(value))


class _MaskedFile:
    """A terminal's file whose every write is redacted first."""

    def __init__(self, file: TextIO) -> None:
        self._file = file

    def write(self, text: str) -> int:
        return self._file.write(redact(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._file, name)


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    _declare_options(config)
    config.stash[_FACTORY] = redact_log_records()  # put back at the session's end
    writer = config.get_terminal_writer() if config.pluginmanager.has_plugin("terminalreporter") else None
    if writer is not None and not isinstance(writer._file, _MaskedFile):
        writer._file = _MaskedFile(writer._file)  # pytest has no public way to filter what its terminal writes


def _written(config: pytest.Config) -> list[Path]:
    """What this session wrote files into: the run directory, the Allure results, the JUnit XML, the log file."""
    found = []
    run_dir = config.stash.get(RUN_DIR, None)
    if run_dir is not None:
        found.append(run_dir.path)
    for name in ("allure_report_dir", "xmlpath", "log_file"):
        value = getattr(config.option, name, None)
        if value:
            found.append(Path(value))
    return found


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    made = config.stash.get(_FACTORY, None)
    if made is not None:
        logging.setLogRecordFactory(made)
    if SECRETS and not hasattr(config, "workerinput"):  # once, when every worker is done writing
        for root in dict.fromkeys(_written(config)):
            try:
                scrub(root)
            except OSError as exc:
                if disk_error(exc) is None:
                    raise
                # A file whose secrets could not be masked must not go unnoticed: say so, and what to do.
                sys.stderr.write(f"webeval: a secret under {root} may be unmasked: "
                                 f"{full_disk(disk_error(exc), root).line}; free space there, then resume the run "
                                 "with the same secrets (a session masks every file it wrote into at its end)\n")
