"""One session writes a run directory at a time: the xdist controller (or the only process) takes the directory's
writer lease at session start, before any task or worker, renews it while the session runs and gives it back at the
end. A second session that would write the same directory stops at once with one line naming the first (exit 4, as
for any option that cannot be used now)."""

from __future__ import annotations

import pytest

from webeval.outcomes.writer import WriterBusy, WriterLease, claim
from webeval.plugin.keys import RUN_DIR, SESSION_ID, dry_run

WRITER_LEASE = pytest.StashKey[WriterLease]()


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Before the other start checks (their endpoints' preflights take seconds): a busy directory stops at once."""
    config = session.config
    run_dir = config.stash.get(RUN_DIR, None)
    if run_dir is None or config.option.help or hasattr(config, "workerinput") or dry_run(config):
        return
    try:
        lease = claim(run_dir.path, config.stash[SESSION_ID])
    except WriterBusy as exc:
        del config.stash[RUN_DIR]  # not this session's to write: nothing of it reaches the directory
        raise pytest.UsageError(str(exc)) from None
    except OSError as exc:
        raise pytest.UsageError(f"{run_dir.path}: cannot write the run there ({exc.strerror or exc})") from None
    config.stash[WRITER_LEASE] = lease.keep_renewing()


def writer_lease(config: pytest.Config) -> WriterLease | None:
    return config.stash.get(WRITER_LEASE, None)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    lease = config.stash.get(WRITER_LEASE, None)
    if lease is not None:
        lease.release()
        del config.stash[WRITER_LEASE]
