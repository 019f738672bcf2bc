"""One writer per run directory: a second session that would write a run directory while the first runs stops before
any task with one line naming the first; the lease of a session that was SIGKILLed is taken over at once on its
host, a live one on another host (a shared filesystem) is respected until it lapses; a session whose run ends with
duplicates says so in its last line and exits 13."""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time

import pytest

from tests.runs import Run, run, wait_for
from tests.webvoyager_data import closed_port, records, webvoyager_rows
from webeval.outcomes.lease import write_whole
from webeval.outcomes.writer import WRITER, WriterBusy, claim

SUITE = "suites/webvoyager"


@pytest.fixture
def black_hole():
    """A site that accepts connections and never answers: its check takes the whole --site-timeout."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}/"
    stop.set()
    thread.join()
    for connection in held:
        connection.close()
    server.close()


@pytest.fixture
def started_run(tmp_path):
    """A run directory whose first session found its three tasks' site unreachable: all three remain to be run."""
    tasks = webvoyager_rows(tmp_path / "tasks.jsonl", [(f"ESPN--{n}", f"Who won game {n}?",
                                                        f"http://127.0.0.1:{closed_port()}/") for n in range(3)])
    run_dir = tmp_path / "run"
    first = run([SUITE, "--tasks-file", str(tasks), "--run-dir", str(run_dir), "--policy", "oracle",
                 "--allow-incomplete"], run_dir)
    assert first.proc.returncode == 0, first.output
    assert len(records(run_dir)) == 3 and not (run_dir / WRITER).exists()  # the lease went back at the end
    return tasks, run_dir


def slow_resume(tasks, run_dir, black_hole, *extra: str) -> list[str]:
    return [SUITE, "--tasks-file", str(tasks), "--resume", str(run_dir), "--policy", "oracle", "--site-map",
            f"ESPN={black_hole}", "--site-timeout", "25", "--allow-incomplete", *extra]


def test_a_second_session_on_a_run_directory_stops_before_any_task_naming_the_first(started_run, black_hole):
    tasks, run_dir = started_run
    first = Run(slow_resume(tasks, run_dir, black_hole), run_dir)
    lease = wait_for(lambda: json.loads((run_dir / WRITER).read_text()) if (run_dir / WRITER).exists() else None,
                     what="the first session's writer lease")
    second = run(slow_resume(tasks, run_dir, black_hole), run_dir, timeout=120)
    assert second.proc.returncode == 4, second.output
    assert first.proc.poll() is None, "the first session should still be running"
    said = [line for line in second.output.splitlines() if "is being written by" in line]
    assert len(said) == 1, second.output
    assert said[0].startswith(f"ERROR: {run_dir} is being written by session")
    assert (f"{run_dir} is being written by session {lease['session']} (host {socket.gethostname()}, process "
            f"{first.proc.pid}, since ") in said[0]
    assert "passed" not in second.output and "skipped" not in second.output
    assert first.wait(timeout=300) == 0, first.output
    written = records(run_dir)
    assert len(written) == 6 and {r["session"] for r in written[3:]} == {lease["session"]}  # nothing of the second
    sessions = [json.loads(line)["session"] for line in (run_dir / "sessions.jsonl").read_text().splitlines()]
    assert len(sessions) == 2 and sessions[-1] == lease["session"]
    assert json.loads((run_dir / "summary.json").read_text())["duplicates"] == []


def test_the_lease_of_a_sigkilled_session_is_taken_over_at_once(started_run, black_hole):
    tasks, run_dir = started_run
    killed = Run(slow_resume(tasks, run_dir, black_hole), run_dir)
    lease = wait_for(lambda: json.loads((run_dir / WRITER).read_text()) if (run_dir / WRITER).exists() else None,
                     what="the writer lease")
    os.killpg(killed.proc.pid, signal.SIGKILL)
    killed.wait(timeout=60)
    began = time.monotonic()
    after = run([SUITE, "--tasks-file", str(tasks), "--resume", str(run_dir), "--policy", "oracle",
                 "--allow-incomplete"], run_dir, timeout=300)
    assert after.proc.returncode == 0, after.output
    assert time.monotonic() - began < 60  # not a lease's TTL of waiting
    said = [line.strip() for line in after.output.splitlines() if "took the run directory over" in line]
    assert said == [f"writer: took the run directory over from session {lease['session']} (host "
                    f"{socket.gethostname()}, process {killed.proc.pid}, since {said[0].split('since ')[1]}"]
    assert said[0].endswith(f"its process {killed.proc.pid} is no longer running")
    session = json.loads((run_dir / "sessions.jsonl").read_text().splitlines()[-1])
    assert session["took_over"]["session"] == lease["session"]
    assert len(records(run_dir)) == 6 and not (run_dir / WRITER).exists()


def other_host_lease(run_dir, expires_in: float) -> dict:
    now = time.time()
    data = {"session": "elsewhere1", "host": "node-7.cluster.example", "pid": 4242, "since": now - 600,
            "ttl_s": 60.0, "expires": now + expires_in}
    run_dir.mkdir(parents=True, exist_ok=True)
    write_whole(run_dir / WRITER, data)
    return data


def test_a_live_lease_of_another_host_is_respected_and_a_lapsed_one_taken_over(tmp_path):
    run_dir = tmp_path / "run"
    other_host_lease(run_dir, expires_in=30)
    with pytest.raises(WriterBusy) as busy:
        claim(run_dir, "mine")
    assert str(busy.value).startswith(f"{run_dir} is being written by session elsewhere1 (host "
                                      "node-7.cluster.example, process 4242, since ")
    assert str(busy.value).endswith(", renewed 30 s ago): wait for it to end, or write a new run directory")
    lapsed = other_host_lease(run_dir, expires_in=-5)
    lease = claim(run_dir, "mine")
    assert lease.taken_over == lapsed and lease.why == "it was not renewed for 65 s"
    assert json.loads((run_dir / WRITER).read_text())["session"] == "mine"
    lease.release()
    assert not (run_dir / WRITER).exists()


def test_a_holder_that_lapsed_and_was_taken_over_knows_it_lost_the_lease(tmp_path):
    run_dir = tmp_path / "run"
    first = claim(run_dir, "first", ttl_s=0.2)
    data = json.loads((run_dir / WRITER).read_text())
    write_whole(run_dir / WRITER, {**data, "host": "node-7.cluster.example"})  # as if it held it from elsewhere
    time.sleep(0.4)
    second = claim(run_dir, "second")
    assert second.taken_over["session"] == "first"
    assert first.renew() is False and first.lost
    first.release()  # gives back nothing that is not its own
    assert json.loads((run_dir / WRITER).read_text())["session"] == "second"
    renewed = claim(tmp_path / "other", "third", ttl_s=0.6).keep_renewing()
    before = json.loads((tmp_path / "other" / WRITER).read_text())["expires"]
    time.sleep(0.9)
    assert json.loads((tmp_path / "other" / WRITER).read_text())["expires"] > before  # the heartbeat renews it
    renewed.release()


def test_a_session_whose_run_ends_with_duplicates_says_so_last_and_exits_13(tmp_path):
    run_dir = tmp_path / "run"
    args = ["suites/local", "--run-dir", str(run_dir), "-k", "Shop--0", "-p", "no:xdist"]
    first = run(args, run_dir, timeout=300)
    assert first.proc.returncode == 0, first.output
    again = run(args, run_dir, timeout=300)  # the same task again, into the same directory, by another session
    assert again.proc.returncode == 13, again.output
    assert again.output.splitlines()[-1] == ("webeval: exit 13: the run holds 1 duplicate (tasks with valid results "
                                             "from two sessions: Shop--0); its score is not one run's: see "
                                             "summary.md")
    assert json.loads((run_dir / "summary.json").read_text())["duplicates"] == ["Shop--0"]
