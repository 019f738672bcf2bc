"""The rollout engine meets the same limits as a pytest session, for real: a full disk under the collection's folder
(a small tmpfs), and SIGTERM to a process that runs `collect()` with the engine room's signal handlers.

A rollout that met the full disk is masked `infra_error[disk]` (reward null, never 0), the engine starts no more,
every line of rollouts.jsonl parses, and a collection resumed after space is freed completes. SIGTERM masks the
rollouts in flight `interrupted`, writes their records, and leaves no process behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.conftest import ROOT, processes_with
from tests.runs import wait_for
from tests.small_fs import fill, small_filesystem
from tests.test_rollouts import local_tasks, requests_for, short_tasks  # noqa: F401 - the fixture, shared
from webeval.policy.oracle import oracle
from webeval.rollouts import EngineSettings, RolloutEngine, RolloutStore, collect

pytestmark = pytest.mark.xdist_group("rollouts")
MB = 1 << 20


def lines_of(path: Path) -> list[dict]:
    data = path.read_bytes() if path.exists() else b""
    assert not data or data.endswith(b"\n"), f"{path} ends in a torn line"
    return [json.loads(line) for line in data.decode("utf-8").splitlines()]


async def test_a_full_disk_masks_rollouts_as_disk_and_a_resumed_collection_completes(
        local_tasks, tmp_path):  # noqa: F811
    # Two long rollouts start together with a little more than the floor free (neither is refused), and together
    # write more than that: one of them at least meets the full disk. The short ones after them are not started.
    requests = requests_for(["Flights--7"], group=2) + requests_for(short_tasks(local_tasks, 4), group=1)
    with small_filesystem(tmp_path / "small", 16 * MB) as small:
        out = small / "collection"
        ballast = fill(small, leave_bytes=int(1.3 * MB))
        async with RolloutEngine(local_tasks, out, lambda request: oracle, EngineSettings(slots=2)) as engine:
            batch = await collect(engine, requests)
        assert batch.stopped is not None and batch.stopped.startswith("the disk is full: "), batch.stopped
        assert f"{small} (tmpfs, the run directory)" in batch.stopped
        masked = [r for r in batch.records if r.mask_sample]
        assert masked and {r.failure_kind for r in masked} == {"infra_error[disk]"}, batch.records
        assert all(r.reward is None for r in masked) and all(r.reward == 1.0 for r in batch.records
                                                               if not r.mask_sample)
        assert batch.not_started, "the engine started no rollout after the disk was full"
        stored = lines_of(out / "rollouts.jsonl")
        assert {r["rollout_id"] for r in stored} <= {r.rollout_id for r in batch.records}

        ballast.unlink()
        kept = {r["rollout_id"] for r in stored if not r["mask_sample"]}
        async with RolloutEngine(local_tasks, out, lambda request: oracle, EngineSettings(slots=2)) as engine:
            again = await collect(engine, [r for r in requests if r.id not in kept])
        assert again.stopped is None and not again.not_started
        final = {r["rollout_id"]: r for r in lines_of(out / "rollouts.jsonl")}
        assert all(final[r.id]["reward"] == 1.0 for r in requests if r.id in final and not final[r.id]["mask_sample"])
        assert {r.id for r in requests} <= {i for i, r in final.items() if not r["mask_sample"]}


COLLECT = """
import asyncio, sys
from pathlib import Path
from webeval.benchmarks.local import local_population
from webeval.benchmarks.local.offline_sites import OfflineSites
from webeval.benchmarks.local.site_server import SiteServer
from webeval.judges.verifier import verifier_judge
from webeval.policy.oracle import oracle
from webeval.rollouts import EngineSettings, RolloutEngine, RolloutRequest, collect
from webeval.rollouts.interrupts import stop_on_signals
from tests.test_rollouts import LocalTasks

async def main(out: Path) -> None:
    _, tasks = local_population()
    with SiteServer() as server:
        source = LocalTasks(OfflineSites(server), verifier_judge, {task.id: task for task in tasks})
        requests = [RolloutRequest(task_id=task.id, group_id=task.id, sample_index=0, seed=1) for task in tasks[:12]]
        interrupted = asyncio.Event()
        restore = stop_on_signals(interrupted)
        try:
            async with RolloutEngine(source, out, lambda request: oracle, EngineSettings(slots=2)) as engine:
                print("started", flush=True)
                batch = await collect(engine, requests, interrupted=interrupted)
        finally:
            restore()
    print(f"records {len(batch.records)} not_started {len(batch.not_started)}", flush=True)

asyncio.run(main(Path(sys.argv[1])))
"""


@pytest.mark.parametrize("seed", [1, 2])
def test_sigterm_to_a_collecting_process_masks_rollouts_in_flight_and_leaves_nothing_running(tmp_path, seed):
    import random

    out = tmp_path / "collection"
    tag = uuid.uuid4().hex
    job = subprocess.Popen([sys.executable, "-c", COLLECT, str(out)], cwd=ROOT, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, env={**os.environ, "WEBEVAL_TEST_RUN": tag})
    try:
        wait_for(lambda: list(out.glob("tasks/*/attempt-1/step-001.png")), timeout=180, what="a rollout's first step")
        time.sleep(random.Random(seed).uniform(0.0, 4.0))
        job.send_signal(signal.SIGTERM)
        began = time.monotonic()
        output, _ = job.communicate(timeout=60)
    finally:
        job.kill()
    took = time.monotonic() - began
    assert job.returncode == 0 and "records " in output, output[-4000:]
    assert took < 30, f"the collection took {took:.1f} s to stop"
    stored = lines_of(out / "rollouts.jsonl")
    kinds = [r["failure_kind"] for r in stored if r["mask_sample"]]
    assert kinds and set(kinds) == {"interrupted"}, stored
    assert all(r["reward"] is None for r in stored if r["mask_sample"])
    assert all(r["reward"] == 1.0 for r in stored if not r["mask_sample"])
    wait_for(lambda: not [pid for pid in processes_with(f"WEBEVAL_TEST_RUN={tag}") if pid != job.pid],
             timeout=30, what="every process of the collection to end")
    assert len({r["rollout_id"] for r in stored}) == len(stored), "each rollout recorded once"
    interrupted = {r["rollout_id"] for r in stored if r["failure_kind"] == "interrupted"}
    assert not interrupted & RolloutStore(out).done(), "an interrupted rollout runs again in the next collection"
