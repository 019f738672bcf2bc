"""A real Ray cluster on this machine for the tests: `ray start --head` on 127.0.0.1 with a `browser` resource, kept
small (no dashboard, two CPUs, a small object store), and stopped by the ids of the processes it started: `ray stop`
would end every Ray process of the machine."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import psutil

RAY = str(Path(sys.executable).with_name("ray"))
STOP_WAIT_S = 15.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def ray_head(browsers: int = 4, cpus: int = 2) -> Iterator[str]:
    """The head's address (HOST:PORT) while the cluster runs."""
    temp = tempfile.mkdtemp(prefix="wr", dir="/tmp")  # short: Ray's socket paths live under it
    port = free_port()
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_prestart_worker_first_driver": "0"}
    started = subprocess.run(
        [RAY, "start", "--head", "--node-ip-address", "127.0.0.1", "--port", str(port), "--num-cpus", str(cpus),
         "--resources", json.dumps({"browser": browsers}), "--include-dashboard=false", "--disable-usage-stats",
         "--object-store-memory", str(128 << 20), "--temp-dir", temp],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=180)
    try:
        assert started.returncode == 0, started.stdout[-3000:]
        yield f"127.0.0.1:{port}"
    finally:
        stop_cluster(temp)


def cluster_processes(temp: str) -> list[psutil.Process]:
    """The processes `ray start` left running for this cluster (they name its folder) and all they started."""
    roots = []
    for process in psutil.process_iter(["cmdline"]):
        if any(temp in part for part in process.info["cmdline"] or ()):
            roots.append(process)
    found = {process.pid: process for process in roots}
    for root in roots:
        try:
            found.update({child.pid: child for child in root.children(recursive=True)})
        except psutil.NoSuchProcess:
            pass
    return list(found.values())


def stop_cluster(temp: str) -> None:
    processes = cluster_processes(temp)
    for process in processes:
        try:
            process.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(processes, timeout=STOP_WAIT_S)
    for process in alive:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=STOP_WAIT_S)
