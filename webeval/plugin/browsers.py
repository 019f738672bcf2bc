"""`--browser`: where each worker's browser comes from (webeval.runtime.providers), checked once before any worker
starts. An endpoint that cannot be reached stops the session with one line and exit status 3."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from webeval.plugin.keys import RUN_DIR
from webeval.plugin.options import Settings
from webeval.plugin.policies import STOP_EXIT_CODE
from webeval.runtime.fd_limits import raise_soft_limit, too_few
from webeval.runtime.leases import DEFAULT_TTL_S, Leases
from webeval.runtime.providers import Provider, parse_provider, unreachable
from webeval.runtime.remote import RemoteSlot
from webeval.runtime.slot import Slot

LEASES = "leases"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("webeval")
    group.addoption("--browser", default="local", metavar="PROVIDER",
                    help="where browsers come from: local (default: Chromium on the worker's own Xvfb), cdp=URL "
                         "(a Chromium's --remote-debugging-port, browserless, Selenium Grid) or playwright=WS "
                         "(playwright run-server); see docs/scale.md")
    group.addoption("--browser-leases", default=None, metavar="DIR",
                    help="shared directory of the remote sessions' leases (default: leases/ in the run directory)")
    group.addoption("--browser-lease-ttl", type=float, default=DEFAULT_TTL_S, metavar="S",
                    help=f"a remote session whose holder stopped renewing it for S seconds is reaped "
                         f"(default {DEFAULT_TTL_S:g})")


def provider(config: pytest.Config) -> Provider:
    try:
        return parse_provider(config.option.browser)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_configure(config: pytest.Config) -> None:
    provider(config)
    if config.option.browser_lease_ttl <= 0:
        raise pytest.UsageError("--browser-lease-ttl must be positive")


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Once, on the xdist controller, before any worker starts: a remote endpoint nobody can reach, or an open-file
    limit too low for a browser, would make every task fail the same way. Every process raises its soft open-file
    limit to the hard one (a process with several slots needs more than a shell's default 1024 may leave)."""
    config = session.config
    raise_soft_limit()
    if config.option.help or hasattr(config, "workerinput") or config.option.collectonly:
        return
    chosen = provider(config)
    workers = getattr(config.option, "numprocesses", None)
    workers = workers if isinstance(workers, int) else (os.cpu_count() or 1) if workers else 0
    too_low = too_few(slots=getattr(config.option, "slots", None) or 1, workers=workers,
                      local_browser=not chosen.remote)
    if too_low is not None:
        pytest.exit(f"webeval: {too_low}", returncode=STOP_EXIT_CODE)
    problem = unreachable(chosen)
    if problem is not None:
        pytest.exit(f"webeval: {problem}; check --browser", returncode=STOP_EXIT_CODE)


def make_runtime(config: pytest.Config, settings: Settings) -> Slot | RemoteSlot:
    width, height = settings.screen
    chosen = provider(config)
    if not chosen.remote:
        return Slot(width, height, settings.browser_path)
    folder = config.option.browser_leases or config.stash[RUN_DIR].path / LEASES
    return RemoteSlot(width, height, chosen, Leases(Path(folder), config.option.browser_lease_ttl),
                         settings.browser_path)
