"""The rollout service's cost: the same rollouts through `POST /run` as through the engine in this process, and a
burst of step sessions against four slots.

- service_over_inprocess (>= 0.9): rollouts per second through a running `webeval serve` (the real command, its
  own process), each request a `POST /run` and all of them sent at once, over rollouts per second of the engine in
  this process on the same requests (the offline suite's answer tasks x a group, 4 slots, the scripted policy
  endpoint in its own process with a fixed latency per reply). The modes alternate A B B A (a drifting load favours
  neither), four times each by default; the figure is the ratio of their total throughputs.
- service_seed_burst_errors (<= 0): 200 `POST /seed_session` at once on 4 slots: the answers other than 200 and 429
  (and requests that failed outright).
- service_health_p99_ms (<= 50): the 99th percentile of `GET /health`, probed every 10 ms by another process, over
  the probes sent while the burst lands and the admitted sessions open their pages; the same before the burst (the
  machine's own noise) is in the details, and so is machine_stall_p99_ms: over the same moments, how much longer
  than asked a 10 ms sleep of a third process took (the time no process on this machine got a core).

    .venv/bin/python -m bench.service [--tasks N] [--group N] [--rounds N] [--json]
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench.common import ROOT, Figure, cli, loadavg
from fixtures.answering_endpoint import answer_tasks
from tests.service_lab import local_tasks
from webeval.policy.openai import Profile
from webeval.rollouts import EngineSettings, RolloutEngine, RolloutRequest, collect
from webeval.rollouts.model_policies import ModelPolicies

SLOTS = 4
REPLY_S = 0.3  # the scripted endpoint's latency per reply
BURST = 200
PROBE_EVERY_S = 0.01
QUIET_S = 3.0


def started(command: list[str], prefix: str, log: Path) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=open(log, "w"), text=True,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
    line = process.stdout.readline()
    if not line.startswith(prefix):
        process.kill()
        raise RuntimeError(f"{command[0]} did not start: {log.read_text()[-1500:]}")
    return process, line


def stop(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=120)


def serve(folder: Path, *options: str) -> tuple[subprocess.Popen, str]:
    folder.mkdir(parents=True, exist_ok=True)
    process, line = started([str(Path(sys.executable).with_name("webeval")), "serve", "--suite", "local", "--slots",
                             str(SLOTS), "--port", "0", "--out", str(folder / "collection"), *options],
                            "webeval serve: listening on ", folder / "service.log")
    return process, line.split()[4]


def requests_for(task_ids: list[str], group: int) -> list[RolloutRequest]:
    return [RolloutRequest(task_id=task_id, group_id=task_id, sample_index=index, seed=index)
            for task_id in task_ids for index in range(group)]


async def in_process(requests: list[RolloutRequest], base_url: str, folder: Path) -> dict:
    profile = Profile(base_url=base_url, model="stub-model", retries=0, timeout_s=60)
    async with local_tasks() as source:
        async with RolloutEngine(source, folder, ModelPolicies(profile, (1280, 720)),
                                 EngineSettings(slots=SLOTS, history="append-only")) as engine:
            began = time.monotonic()
            batch = await collect(engine, requests)
            wall = time.monotonic() - began
    return {"rollouts": len(batch.records), "scored": sum(not r.mask_sample for r in batch.records), "wall_s": wall}


async def through_service(requests: list[RolloutRequest], url: str) -> dict:
    limits = httpx.Limits(max_connections=len(requests) + 8, max_keepalive_connections=len(requests) + 8)
    async with httpx.AsyncClient(base_url=url, timeout=900, limits=limits) as client:
        began = time.monotonic()
        answers = await asyncio.gather(*(client.post("/run", json={
            "task_id": r.task_id, "group_id": r.group_id, "sample_index": r.sample_index, "seed": r.seed,
            "responses_create_params": {"input": []}}) for r in requests))
        wall = time.monotonic() - began
    bodies = [answer.json() for answer in answers if answer.status_code == 200]
    return {"rollouts": len(bodies), "scored": sum(not b["mask_sample"] for b in bodies), "wall_s": wall,
            "statuses": sorted({answer.status_code for answer in answers})}


def service_run(requests: list[RolloutRequest], base_url: str, folder: Path) -> dict:
    server, url = serve(folder, "--policy", "openai", "--policy-base-url", base_url, "--policy-model", "stub-model")
    try:
        return asyncio.run(through_service(requests, url))
    finally:
        stop(server)


def throughput(requests: list[RolloutRequest], base_url: str, rounds: int, scratch: Path) -> dict:
    """The modes in the order A B B A A B ...: a machine whose load drifts during the run favours neither."""
    runs = {"inprocess": [], "service": []}
    for round_number in range(rounds):
        order = ("inprocess", "service") if round_number % 2 == 0 else ("service", "inprocess")
        for mode in order:
            folder = scratch / f"{mode}-{round_number}"
            runs[mode].append(asyncio.run(in_process(requests, base_url, folder)) if mode == "inprocess"
                              else service_run(requests, base_url, folder))
    for mode in runs.values():
        for run in mode:
            run["rollouts_per_s"] = round(run["rollouts"] / run["wall_s"], 4)
            run["wall_s"] = round(run["wall_s"], 2)
    return runs


def probe_health(url: str, seconds: float, results) -> None:
    """In its own process: GET /health every PROBE_EVERY_S for `seconds` on one kept-alive connection, written and
    read as bytes (an HTTP client library would take a good part of a core at this rate, on the same two cores as
    the service); (wall-clock time sent, latency in seconds or None for a failure) of each."""
    address = httpx.URL(url)
    request = b"GET /health HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (address.host.encode(), address.port)
    probes = []
    connection = socket.create_connection((address.host, address.port), timeout=10)
    connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    answers = connection.makefile("rb")
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sent, began = time.time(), time.perf_counter()
        try:
            connection.sendall(request)
            ok = answers.readline().split()[1] == b"200"
            length = 0
            while (line := answers.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            answers.read(length)
        except (OSError, IndexError):
            ok = False
        probes.append((sent, time.perf_counter() - began if ok else None))
        time.sleep(PROBE_EVERY_S)
    connection.close()
    results.put(probes)


def oversleep(seconds: float, results) -> None:
    """In its own process, touching no service: sleep PROBE_EVERY_S again and again for `seconds`; (wall-clock time,
    how much longer than asked each sleep took). Its 99th percentile during the burst is the machine's own stall: no
    process here, the service or any other, can answer faster than it is given a core."""
    stalls = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        at, began = time.time(), time.perf_counter()
        time.sleep(PROBE_EVERY_S)
        stalls.append((at, time.perf_counter() - began - PROBE_EVERY_S))
    results.put(stalls)


def p99_ms(latencies: list[float | None]) -> float | None:
    """The 99th percentile in ms; None when there is none, or when a probe failed (a failure is no latency)."""
    if not latencies or any(latency is None for latency in latencies):
        return None
    ordered = sorted(latencies)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 1)


async def seed_raw(host: str, port: int, body: bytes) -> tuple[int, str | None] | str:
    """One `POST /seed_session` on a connection of its own, written and read as bytes: (status, session cookie), or
    the error's name. A load generator on the same two cores as the service must cost it little: httpx spends about
    8 ms of CPU per request of the burst, this a tenth of that."""
    try:
        reader, writer = await asyncio.open_connection(host, port)
    except OSError as exc:
        return type(exc).__name__
    try:
        writer.write(b"POST /seed_session HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (host.encode(), port, len(body), body))
        head = await reader.readuntil(b"\r\n\r\n")
        await reader.read()
    except (OSError, asyncio.IncompleteReadError) as exc:
        return type(exc).__name__
    finally:
        writer.close()
    lines = head.decode("latin-1").split("\r\n")
    cookie = next((line.split(":", 1)[1].strip().split(";")[0].split("=", 1)[1] for line in lines
                   if line.lower().startswith("set-cookie:") and "webeval_session=" in line), None)
    return int(lines[0].split()[1]), cookie


async def burst(url: str) -> dict:
    address = httpx.URL(url)
    body = json.dumps({"task_id": "Dictionary--2"}).encode()
    began = time.monotonic()
    answers = await asyncio.gather(*(seed_raw(address.host, address.port, body) for _ in range(BURST)))
    wall = time.monotonic() - began
    cookies = [answer[1] for answer in answers if isinstance(answer, tuple) and answer[0] == 200]
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:
        for cookie in cookies:
            await client.post("/close_session", headers={"Cookie": f"webeval_session={cookie}"})
    statuses = [answer[0] if isinstance(answer, tuple) else answer for answer in answers]
    counts = {str(status): statuses.count(status) for status in set(statuses)}
    return {"counts": counts, "errors": sum(status not in (200, 429) for status in statuses),
            "admitted": len(cookies), "wall_s": round(wall, 2)}


def seed_burst(scratch: Path) -> dict:
    """The burst while another process probes /health: QUIET_S before it (the machine's own noise), then through
    the burst and the admitted sessions opening their pages. The figure is over the probes sent during the burst."""
    server, url = serve(scratch / "burst")
    try:
        context = multiprocessing.get_context("spawn")
        results = context.Queue()
        stalled = context.Queue()
        prober = context.Process(target=probe_health, args=(url, QUIET_S + 7.0, results))
        sleeper = context.Process(target=oversleep, args=(QUIET_S + 7.0, stalled))
        prober.start()
        sleeper.start()
        time.sleep(QUIET_S + 1.0)  # the prober's own start-up, then the quiet probes
        began = time.time()
        landed = asyncio.run(burst(url))
        ended = began + landed["wall_s"]
        probes, stalls = results.get(timeout=60), stalled.get(timeout=60)
        prober.join(timeout=30)
        sleeper.join(timeout=30)
    finally:
        stop(server)
    during = [latency for sent, latency in probes if began <= sent <= ended]
    quiet = [latency for sent, latency in probes if sent < began]
    return {**landed, "probes_during": len(during), "probe_failures": sum(l is None for _, l in probes),
            "health_p99_ms": p99_ms(during), "health_quiet_p99_ms": p99_ms(quiet),
            "machine_stall_p99_ms": p99_ms([stall for at, stall in stalls if began <= at <= ended]),
            "health_median_ms": round(statistics.median(l for l in during if l is not None) * 1000, 1)
            if any(l is not None for l in during) else None}


def measure(tasks: int, group: int, rounds: int) -> list[Figure]:
    load = loadavg()
    task_ids = sorted(answer_tasks())[:tasks]
    requests = requests_for(task_ids, group)
    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        endpoint, line = started([sys.executable, "-m", "fixtures.answering_endpoint", "--port", "0", "--delay",
                                  str(REPLY_S)], "answering endpoint: ", scratch / "endpoint.log")
        try:
            runs = throughput(requests, line.split()[2], rounds, scratch)
        finally:
            stop(endpoint)
        landed = seed_burst(scratch)
    total = {mode: sum(r["rollouts"] for r in runs[mode]) / sum(r["wall_s"] for r in runs[mode]) for mode in runs}
    complete = all(r["scored"] == len(requests) for mode in runs.values() for r in mode)
    details = {"runs": runs, "requests": len(requests), "tasks": len(task_ids), "group": group, "slots": SLOTS,
               "reply_s": REPLY_S, "complete": complete, "load_before": load, "load_after": loadavg()}
    ratio = round(total["service"] / total["inprocess"], 3) if complete else None
    burst_details = {**landed, "slots": SLOTS, "burst": BURST, "probe_every_ms": PROBE_EVERY_S * 1000,
                     "load_before": load, "load_after": loadavg()}
    return [
        Figure("service_over_inprocess", ratio, 0.9, "x", ">=", details),
        Figure("service_seed_burst_errors", landed["errors"], 0, "errors", "<=", burst_details),
        Figure("service_health_p99_ms", landed["health_p99_ms"], 50, "ms", "<=", burst_details),
    ]


def options(parser) -> None:
    parser.add_argument("--tasks", type=int, default=12, help="answer tasks of the offline suite (default 12)")
    parser.add_argument("--group", type=int, default=2, help="rollouts per task (default 2)")
    parser.add_argument("--rounds", type=int, default=4, help="rounds of each mode, alternating (default 4)")


if __name__ == "__main__":
    cli(__doc__, measure, options)
