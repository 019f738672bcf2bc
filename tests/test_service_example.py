"""examples/grpo_batch.py, run as docs/training.md shows it: the scripted policy endpoint, `webeval serve` on the
offline suite with four slots, and the example collecting 8 tasks x a group of 4 through /run (ports aside: the
test takes free ones)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.xdist_group("service")


def started(command: list[str], prefix: str, log: Path) -> tuple[subprocess.Popen, str]:
    """A process started with its stderr to a file, and the first stdout line that starts with `prefix`."""
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=open(log, "w"), text=True,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
    line = process.stdout.readline()
    assert line.startswith(prefix), (line, log.read_text()[-2000:])
    return process, line


def stop(process: subprocess.Popen) -> int:
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=90)
    return process.returncode


def test_the_grpo_example_collects_8_tasks_by_a_group_of_4_from_a_running_service(tmp_path):
    endpoint, line = started([sys.executable, "-m", "fixtures.answering_endpoint", "--port", "0"],
                             "answering endpoint: ", tmp_path / "endpoint.log")
    base_url = line.split()[2]
    try:
        service, line = started([str(Path(sys.executable).with_name("webeval")), "serve", "--suite", "local",
                                 "--slots", "4", "--port", "0", "--out", str(tmp_path / "collection"),
                                 "--policy", "openai", "--policy-base-url", base_url, "--policy-model", "stub-model"],
                                "webeval serve: listening on ", tmp_path / "service.log")
        url = line.split()[4]
        try:
            done = subprocess.run([sys.executable, "examples/grpo_batch.py", "--service", url, "--out",
                                   str(tmp_path / "batch.jsonl")], cwd=ROOT, capture_output=True, text=True,
                                  timeout=900)
        finally:
            assert stop(service) == 0
    finally:
        stop(endpoint)
    assert done.returncode == 0, done.stderr
    batch = [json.loads(line) for line in (tmp_path / "batch.jsonl").read_text().splitlines()]
    assert len(batch) == 32 and len({sample["group_id"] for sample in batch}) == 8
    for group in {sample["group_id"] for sample in batch}:
        samples = sorted((s for s in batch if s["group_id"] == group), key=lambda s: s["sample_index"])
        assert [(s["reward"], s["mask_sample"]) for s in samples] == [(1.0, False)] * 3 + [(0.0, False)], samples
        assert sum(s["advantage"] for s in samples) == pytest.approx(0.0)
        assert all(item.get("generation_token_ids") for s in samples for item in s["response"]["output"]
                   if item["type"] == "function_call")
    assert "32 rollouts, 0 masked" in done.stdout
    aggregate = json.loads(done.stdout.splitlines()[0])["aggregate"]
    assert aggregate["mean/reward"] == 0.75 and aggregate["rollouts"] == 32
    assert len((tmp_path / "collection" / "rollouts.jsonl").read_text().splitlines()) == 32
