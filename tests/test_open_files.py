"""File descriptors (RLIMIT_NOFILE), set for real in the subprocess that runs the session, as `ulimit -n` would.

A low soft limit under a high hard one is raised and the run goes on; a hard limit below what the run needs stops it
before any task with one line that says how to raise it; a Chromium that cannot start for want of descriptors says
so in its reason, from its own log.
"""

from __future__ import annotations

import json
import resource
import re
import subprocess
import sys

from tests.conftest import ROOT
from tests.runs import records, run, summary
from webeval.runtime.fd_limits import CHROMIUM

HARD = resource.getrlimit(resource.RLIMIT_NOFILE)[1]


def limited(soft: int, hard: int) -> dict[str, str]:
    """The environment of a subprocess whose pytest starts under `prlimit` (below): `ulimit -n` as a shell sets it."""
    return {"WEBEVAL_TEST_NOFILE": f"{soft}:{hard}"}


def run_limited(args: list[str], run_dir, soft: int, hard: int):
    return run(["-p", "tests.nofile_limit", *args], run_dir, env=limited(soft, hard))


def test_a_low_soft_limit_is_raised_to_the_hard_one_and_the_run_goes_on(tmp_path):
    assert HARD >= 1024, "this test needs a hard limit of at least 1024 to lower the soft one under"
    run_dir = tmp_path / "run"
    job = run_limited(["-n", "2", "suites/local", "-k", "Shop--0 or Shop--3 or News--0", "--run-dir", str(run_dir)],
                      run_dir, soft=64, hard=HARD)
    assert job.proc.returncode == 0, job.output[-4000:]
    assert summary(run_dir)["passed"] == 3
    seen = json.loads((run_dir / "nofile.json").read_text())  # what each process had once the session started
    assert seen and all(soft == hard == HARD for soft, hard in seen.values()), seen


def test_a_hard_limit_too_low_stops_the_session_before_any_task_with_one_line(tmp_path):
    run_dir = tmp_path / "run"
    job = run_limited(["-n", "2", "suites/local", "-k", "Shop--0 or Shop--3", "--run-dir", str(run_dir)],
                      run_dir, soft=128, hard=128)
    assert job.proc.returncode == 3, job.output[-4000:]
    # pytest says an exit's message twice (its `Exit:` line, then its `!` banner): the one line is the first
    lines = [line for line in job.output.splitlines() if line.startswith("Exit: webeval: the open-file limit")]
    assert len(lines) == 1, job.output[-4000:]
    assert f"the open-file limit (RLIMIT_NOFILE) is 128, below the {CHROMIUM} that" in lines[0]
    assert f"`ulimit -n {CHROMIUM}`" in lines[0] and "LimitNOFILE" in lines[0] and "--ulimit nofile" in lines[0]
    assert "Traceback" not in job.output
    assert records(run_dir) == [], "no task was started"


LAUNCH = """
import asyncio, resource
from webeval.runtime.slot import Slot
resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))

async def main():
    slot = Slot(1280, 720)
    try:
        await slot.ready()
        print("started")
    except Exception as exc:
        print(f"{type(exc).__name__}: {exc}")
    finally:
        await slot.close()

asyncio.run(main())
"""


def test_a_chromium_that_cannot_start_keeps_its_own_last_log_lines_in_the_reason():
    done = subprocess.run([sys.executable, "-c", LAUNCH], cwd=ROOT, capture_output=True, text=True, timeout=120)
    said = done.stdout.strip().splitlines()[-1]
    assert said.startswith("InfraError: browser: Chromium failed to start: "), done.stdout + done.stderr
    # Chromium says it in its own words, which vary with where it ran out first ("Too many open files", "FD
    # exhaustion", a helper's broken pipe, a database it could not open): its own log lines, as it wrote them.
    assert re.search(r"; its log: (FATAL|ERROR) \S+\.cc:\d+: \S", said), said
    assert "dbus" not in said  # the noise of a machine without D-Bus is left out
