"""A real Ray cluster on this machine for the tests: `ray start --head` on 127.0.0.1 and more nodes joined to it with
`ray start --address`, each with its `browser` resource. Ray's own footprint is kept small (no dashboard, CPUs set,
a small object store, no idle workers started in advance), and the cluster is stopped by the ids of the processes it
started: `ray stop` would end every Ray process of the machine."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil

RAY = str(Path(sys.executable).with_name("ray"))
STOP_GRACE_S = 3.0  # raylets drain for about 12 s on SIGTERM and the GCS ignores it: a test cluster keeps nothing
STOP_WAIT_S = 15.0
START_TIMEOUT_S = 180
# Ray starts a worker per CPU when a driver connects, before anything asks for one: 80 MB and a second of CPU each.
ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_prestart_worker_first_driver": "0"}


def gone_within(pids: list[int], seconds: float) -> list[int]:
    """The processes among `pids` still alive after `seconds`."""
    processes = []
    for pid in pids:
        try:
            processes.append(psutil.Process(pid))
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(processes, timeout=seconds)
    return [process.pid for process in alive if process.status() != psutil.STATUS_ZOMBIE]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class RayCluster:
    def __init__(self) -> None:
        self.temp = tempfile.mkdtemp(prefix="wr", dir="/tmp")  # short: Ray's socket paths live under it
        self.address = f"127.0.0.1:{free_port()}"

    def start_head(self, browsers: int, cpus: int = 2) -> str:
        self._ray("start", "--head", "--node-ip-address", "127.0.0.1", "--port", self.address.rpartition(":")[2],
                  "--num-cpus", str(cpus), "--include-dashboard=false", "--object-store-memory", str(128 << 20),
                  "--temp-dir", self.temp, *self._browsers(browsers))
        return self.address

    def add_node(self, browsers: int) -> None:
        """Another node (a raylet of its own) joined to the head, with no CPU of its own for Ray to hand out."""
        self._ray("start", "--address", self.address, "--num-cpus", "0", "--object-store-memory", str(96 << 20),
                  *self._browsers(browsers))

    def kill_node(self, node_id: str) -> None:
        """The node gone at once, as a machine that loses power: its raylet and everything it started (the workers,
        their Xvfb and Chromium) killed with SIGKILL."""
        (raylet,) = [process for process in self.processes() if f"--node_id={node_id}" in _cmdline(process)]
        doomed = [raylet, *raylet.children(recursive=True)]
        for process in doomed:
            _signal(process, "kill")
        psutil.wait_procs(doomed, timeout=STOP_WAIT_S)

    def processes(self) -> list[psutil.Process]:
        """The processes `ray start` left running for this cluster (they name its folder) and all they started."""
        roots = [process for process in psutil.process_iter(["cmdline"])
                 if any(self.temp in part for part in process.info["cmdline"] or ())]
        found = {process.pid: process for process in roots}
        for root in roots:
            try:
                found.update({child.pid: child for child in root.children(recursive=True)})
            except psutil.NoSuchProcess:
                pass
        return list(found.values())

    def stop(self) -> None:
        processes = self.processes()
        for process in processes:
            _signal(process, "terminate")
        _, alive = psutil.wait_procs(processes, timeout=STOP_GRACE_S)
        for process in alive:
            _signal(process, "kill")
        psutil.wait_procs(alive, timeout=STOP_WAIT_S)
        shutil.rmtree(self.temp, ignore_errors=True)  # the cluster's sessions: logs and sockets

    def _ray(self, *args: str) -> None:
        done = subprocess.run([RAY, *args, "--disable-usage-stats"], env={**os.environ, **ENV},
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=START_TIMEOUT_S)
        assert done.returncode == 0, done.stdout[-3000:]

    @staticmethod
    def _browsers(units: int) -> tuple[str, str]:
        return "--resources", json.dumps({"browser": units})


def _cmdline(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except psutil.NoSuchProcess:
        return []


def _signal(process: psutil.Process, how: str) -> None:
    try:
        getattr(process, how)()
    except psutil.NoSuchProcess:
        pass
