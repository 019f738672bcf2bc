"""Browsers from elsewhere (--browser cdp=URL, playwright=WS): the local suite through each, an endpoint that dies
mid-run or cannot be reached, and leases reaped after their holder died or hung."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter

import pytest

from tests.browsers import cdp_chromium, playwright_server, stop
from tests.conftest import ROOT
from tests.runs import Run, records, run, summary, wait_for
from webeval.report.run_environment import read_environment
from webeval.runtime.leases import Leases
from webeval.runtime.providers import INPUT_PATHS, Provider
from webeval.runtime.remote import RemoteBrowser, RemoteSlot

SMALL = ["-k", "Shop"]


# Every offline site through the server: all of the shop's tasks (downloads, dialogs, new tabs) and each other site's
# first. The local path runs all 45 in the other tests; this one is about the remote path.
EVERY_SITE = "Shop or Dictionary--0 or Flights--0 or News--0 or Recipes--0"


def test_every_site_through_a_playwright_server_passes_and_records_its_input_path(tmp_path):
    run_dir = tmp_path / "run"
    with playwright_server(tmp_path) as (_, url):
        job = run(["-n", "2", "suites/local", "-k", EVERY_SITE, "--browser", f"playwright={url}", "--run-dir",
                   str(run_dir)], run_dir)
    assert job.proc.returncode == 0, job.output[-3000:]
    total = summary(run_dir)
    assert (total["n"], total["passed"], total["failed"], total["masked"]) == (45, 13, 0, {}), total
    assert {site for site, rate in total["per_site"].items() if rate["passed"]} == {
        "Dictionary", "Flights", "News", "Recipes", "Shop"}
    environment = read_environment(run_dir / "allure-results")
    assert (environment["browser"], environment["input"]) == ("playwright", INPUT_PATHS["playwright"])
    port = url.rsplit(":", 1)[1].strip("/")
    assert port not in (run_dir / "allure-results" / "environment.properties").read_text()  # no endpoint
    assert not list((run_dir / "leases").glob("*.lease"))  # every session's lease was released


def test_a_chromium_devtools_endpoint_runs_the_local_suite(tmp_path):
    run_dir = tmp_path / "run"
    with cdp_chromium(tmp_path) as (_, endpoint):
        job = run(["-n", "2", "suites/local", *SMALL, "--browser", f"cdp={endpoint}", "--run-dir", str(run_dir)],
                  run_dir)
    assert job.proc.returncode == 0, job.output[-3000:]
    outcomes = Counter(r["outcome"] for r in records(run_dir))
    assert outcomes == {"passed": 9}, outcomes
    assert read_environment(run_dir / "allure-results")["input"] == INPUT_PATHS["cdp"]


def _in_flight(run_dir, finished: int) -> list[str]:
    """Once `finished` tasks have a record: the tasks that took a step and have none yet."""
    done = {r["task_id"] for r in records(run_dir)}
    stepping = {shot.parts[-3] for shot in (run_dir / "tasks").glob("*/*/step-001.png")}
    return sorted(stepping - done) if len(done) >= finished else []


def test_a_playwright_server_killed_mid_run_masks_its_tasks_and_fails_none(tmp_path):
    run_dir = tmp_path / "run"
    with playwright_server(tmp_path) as (server, url):
        job = Run(["-n", "2", "suites/local", "-k", "Shop or News or Flights", "--browser", f"playwright={url}",
                   "--run-dir", str(run_dir)], run_dir)
        wait_for(lambda: _in_flight(run_dir, finished=3), timeout=300, what="three tasks done and one stepping")
        stop(server)
        status = job.wait(timeout=300)  # a worker waiting on the dead server would end this test here, failed
    outcomes = Counter(r["outcome"] for r in records(run_dir))
    assert set(outcomes) <= {"passed", "infra_error", "not_run"} and outcomes["infra_error"] >= 1, outcomes
    assert {r["kind"] for r in records(run_dir) if r["outcome"] == "infra_error"} <= {"browser",
                                                                                       "browser_unresponsive"}
    assert status == 12 and " failed" not in job.output.splitlines()[-1], job.output[-3000:]
    assert "xfailed" in job.output.splitlines()[-1]


@pytest.mark.parametrize("spec, line", [
    ("playwright=ws://127.0.0.1:9/", "webeval: the playwright browser endpoint at 127.0.0.1:9 cannot be reached"),
    ("cdp=http://127.0.0.1:9", "webeval: the cdp browser endpoint at 127.0.0.1:9 cannot be reached"),
])
def test_an_unreachable_endpoint_stops_the_session_in_one_line(tmp_path, spec, line):
    run_dir = tmp_path / "run"
    job = run(["-n", "2", "suites/local", "--browser", spec, "--run-dir", str(run_dir)], run_dir)
    assert job.proc.returncode == 3, job.output[-2000:]
    # pytest.exit's own rendering: the line, echoed once in the terminal's closing line; no worker was started.
    assert job.output.count(f"Exit: {line} (Connection refused); check --browser\n") == 1, job.output[-2000:]
    assert "Traceback" not in job.output and "bringing up nodes" not in job.output
    assert not (run_dir / "results.jsonl").exists()


@pytest.mark.parametrize("spec, message", [
    ("firefox", "--browser 'firefox': expected local, cdp=URL or playwright=WS"),
    ("playwright=http://127.0.0.1:3000", "--browser playwright=...: expected a ws:// or wss:// URL with a host"),
    ("cdp=127.0.0.1:9222", "--browser cdp=...: expected a http:// or https:// or ws:// or wss:// URL with a host"),
])
def test_a_malformed_browser_option_is_a_usage_error(tmp_path, spec, message):
    run_dir = tmp_path / "run"
    job = run(["-p", "no:xdist", "suites/local", "-k", "Shop--1", "--browser", spec, "--run-dir", str(run_dir)],
              run_dir)
    assert job.proc.returncode == 4 and f"ERROR: {message}" in job.output, job.output[-2000:]
    assert not (run_dir / "results.jsonl").exists()


HOLDER = textwrap.dedent("""
    import asyncio, sys
    from pathlib import Path
    from webeval.runtime.leases import Leases
    from webeval.runtime.providers import Provider
    from webeval.runtime.remote import RemoteSlot

    async def hold(endpoint, folder):
        runtime = await RemoteSlot(640, 480, Provider("cdp", endpoint), Leases(Path(folder), 3.0)).ready()
        await runtime.browser.new_session(Path(folder) / "attempt")
        await asyncio.sleep(3600)

    asyncio.run(hold(sys.argv[1], sys.argv[2]))
""")


async def _contexts(browser: RemoteBrowser) -> list[str]:
    cdp = await browser._browser.new_browser_cdp_session()
    return (await cdp.send("Target.getBrowserContexts"))["browserContextIds"]


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGSTOP], ids=["killed", "hung"])
async def test_a_lease_whose_holder_died_or_hangs_is_reaped_once_its_ttl_ran_out(tmp_path, how):
    leases = Leases(tmp_path / "leases", ttl_s=3.0)
    with cdp_chromium(tmp_path) as (_, endpoint):
        holder = subprocess.Popen([sys.executable, "-c", HOLDER, endpoint, str(leases.folder)], cwd=ROOT,
                                  start_new_session=True)
        runtime = await RemoteSlot(640, 480, Provider("cdp", endpoint), leases).ready()
        reaper = runtime.browser
        try:
            await asyncio.to_thread(wait_for, leases.held, 60, "the holder's lease")
            os.killpg(holder.pid, how)
            stopped_at = time.time()
            (lease,) = leases.held()
            assert lease["pid"] == holder.pid and lease["expires"] <= stopped_at + leases.ttl_s
            if how == signal.SIGSTOP:  # a hung holder keeps its connection, and with it its context
                assert lease["context"] in await _contexts(reaper)
            assert time.time() >= lease["expires"] or await reaper.reap() == []  # not before its TTL ran out
            await asyncio.sleep(max(0.0, lease["expires"] - time.time()) + 0.1)
            reaped = await reaper.reap()
            assert [r["context"] for r in reaped] == [lease["context"]] and leases.held() == []
            assert lease["context"] not in await _contexts(reaper)
        finally:
            os.killpg(holder.pid, signal.SIGKILL)
            holder.wait(timeout=30)
            await runtime.close()


async def test_a_reaped_lease_is_lost_to_its_holder_and_others_endpoints_are_left_alone(tmp_path):
    leases = Leases(tmp_path, ttl_s=0.05)
    ours, theirs = leases.acquire("ws://a:1/", context="x"), leases.acquire("ws://b:1/", context="y")
    await asyncio.sleep(0.1)
    closed = []

    async def close(lease):
        closed.append(lease["context"])

    assert [r["context"] for r in await leases.reap("ws://a:1/", close)] == closed == ["x"]
    assert not ours.renew() and ours.lost  # the holder learns at its next heartbeat
    assert [r["context"] for r in leases.held()] == ["y"] and theirs.renew()
    with pytest.raises(ValueError, match="TTL must be positive"):
        Leases(tmp_path, ttl_s=0)
