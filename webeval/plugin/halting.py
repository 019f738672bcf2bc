"""A session that stops starting tasks, and why (a signal, a full disk): kept on the config, passed from each xdist
worker to the controller, said at the end in the exit-12 line (webeval.plugin.session_summary)."""

from __future__ import annotations

from typing import NamedTuple

import pytest


class Halt(NamedTuple):
    kind: str  # interrupted (a signal) | disk
    why: str  # one line: "stopped by SIGTERM", or the full disk's filesystem and the space a task needs


HALT = pytest.StashKey[Halt]()  # why the session stopped starting tasks (the first reason given)
HALT_OUTPUT = "webeval_halt"  # a worker's Halt, in its workeroutput, for the controller


def halt(config: pytest.Config, kind: str, why: str, session: pytest.Session | None = None) -> None:
    """Start no more tasks in this session, and say why at its end (exit 12): the first reason given is kept."""
    if HALT not in config.stash:
        config.stash[HALT] = Halt(kind, why)
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput.setdefault(HALT_OUTPUT, [kind, why])
    if session is not None and not session.shouldstop:
        session.shouldstop = why
    dsession = config.pluginmanager.get_plugin("dsession")  # the xdist controller's loop
    if dsession is not None and not getattr(dsession, "shouldstop", False):
        dsession.shouldstop = why


def halted(config: pytest.Config) -> Halt | None:
    return config.stash.get(HALT, None)
