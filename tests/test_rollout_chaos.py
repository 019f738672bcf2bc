"""Parts of the slots killed under the rollout engine at random moments (`webeval rollouts collect`, a subprocess):
every rollout ends with a record, the killed ones masked (never reward 0, never a harness error), the engine never
hangs, and the slots start again what died."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

from tests.runs import ROOT, browser_main_pids, driver_pids, processes_with, xvfb_pids
from tests.test_chaos import kill_at_random

pytestmark = pytest.mark.xdist_group("rollouts")


class Collection:
    """`webeval rollouts collect` in its own process group, tagged so that every process it starts can be found."""

    def __init__(self, out: Path, tasks: int) -> None:
        self.tag = f"WEBEVAL_TEST_RUN={uuid.uuid4().hex}"
        name, value = self.tag.split("=")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "webeval.cli", "rollouts", "collect", "--suite", "local", "--tasks", str(tasks),
             "--group-size", "2", "--slots", "2", "--out", str(out)],
            cwd=ROOT, env={**os.environ, name: value}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True)

    def processes(self) -> list[int]:
        return [pid for pid in processes_with(self.tag) if pid != self.proc.pid]


def either(*finders):
    return lambda job: [pid for find in finders for pid in find(job)]


@pytest.mark.parametrize("find, kills, tasks", [(browser_main_pids, 20, 15), (either(xvfb_pids, driver_pids), 6, 8)],
                         ids=["chromium-20", "xvfb-and-driver-6"])
def test_parts_killed_under_the_engine_leave_every_rollout_a_record_and_none_a_zero(tmp_path, find, kills, tasks):
    out = tmp_path / "rollouts"
    job = Collection(out, tasks)
    deadline = time.monotonic() + 120
    while not (out / "rollouts.jsonl").exists():  # from the first record on: the slots have started
        assert job.proc.poll() is None and time.monotonic() < deadline, job.proc.communicate()[0][-3000:]
        time.sleep(0.1)
    killed = kill_at_random(job, find, kills, seed=kills)
    output, _ = job.proc.communicate(timeout=600)  # an engine that waited forever would end the test here, failed
    assert killed >= kills * 0.8, f"only {killed} kills landed before the collection ended:\n{output[-3000:]}"
    lines = [json.loads(line) for line in (out / "rollouts.jsonl").read_text().splitlines()]
    final = {line["rollout_id"]: line for line in lines}  # a masked rollout's later record replaces it
    assert len(final) == tasks * 2, output[-3000:]
    kinds = Counter(line["failure_kind"] if line["mask_sample"] else line["reward"] for line in lines)
    assert all(line["reward"] is None for line in lines if line["mask_sample"]), kinds
    assert not [line for line in lines if line["reward"] == 0 or line["outcome"] == "harness_error"], kinds
    assert all(str(kind).startswith("infra_error[") for kind in kinds if kind != 1.0), kinds
    assert kinds[1.0] > 0 and sum(kinds.values()) - kinds[1.0] >= 1, kinds  # the kills cost rollouts, not the run
    assert job.proc.returncode == 0, output[-3000:]
    assert not job.processes()  # nothing left running
