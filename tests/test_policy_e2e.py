"""`pytest suites/local --policy openai ...` end to end, in a subprocess, against the scripted OpenAI-compatible stub:
each adapter solves a local task by acting on the page, and every failure of the issue's list ends in the outcome
the design names (results.jsonl: outcome, failure_class, kind). The grid adapters run the same episode in this
process's browser, which spares two pytest and Chromium start-ups."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import pytest

from fixtures.openai_stub import OpenAIStub, Reply, call, error, text
from webeval.agent.episode import Episode
from webeval.agent.loop import AgentLoop, Budgets
from webeval.benchmarks.local import local_population
from webeval.benchmarks.local.offline_sites import OfflineSites
from webeval.benchmarks.local.site_server import SiteServer
from webeval.judges.verifier import verifier_judge
from webeval.policy.openai import HttpTransport, OpenAIPolicy, make_adapter
from webeval.policy.openai.profile import make_profile

ROOT = Path(__file__).resolve().parents[1]
KEY = "sk-e2e-5ecret-7c1d9a4b2e"
KEY_ENV = "WEBEVAL_E2E_KEY"
_, TASKS = local_population()
ID_OF_GOAL = {task.goal: task.id for task in TASKS}
W, H = 1280, 720


def run_suite(run_dir: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """pytest on suites/local in a process of its own, as a user runs it (no state of this test run leaks in)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_") and k != KEY_ENV}
    clean.update(env or {})
    command = [sys.executable, "-m", "pytest", "suites/local", "--run-dir", str(run_dir), "-q", "-rA", *args]
    return subprocess.run(command, cwd=ROOT, env=clean, capture_output=True, text=True, timeout=600)


def results(run_dir: Path) -> dict[str, dict[str, Any]]:
    path = run_dir / "results.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return {record["task_id"]: record for record in map(json.loads, lines)}


def outcomes(run_dir: Path) -> dict[str, tuple]:
    return {tid: (r["outcome"], r["failure_class"], r["kind"]) for tid, r in results(run_dir).items()}


def goal_of(request: dict[str, Any]) -> str:
    return request["messages"][1]["content"][0]["text"].removeprefix("Task: ").split("\n(Steps", 1)[0]


def latest(request: dict[str, Any]) -> str:
    """The text of the newest observation (URL, title, last result, element list)."""
    user = [m for m in request["messages"] if m["role"] == "user"][-1]
    return "\n".join(p["text"] for p in user["content"] if p["type"] == "text")


def url_of(request: dict[str, Any]) -> str:
    return re.search(r"URL: (\S+)", latest(request))[1]


@pytest.fixture(scope="module")
async def targets(runtime, tmp_path_factory) -> dict[str, tuple[int, int]]:
    """Screen centres of what Shop--3's solution clicks, read from the live page at the suite's screen size."""
    await runtime.ready()
    session = await runtime.browser.new_session(tmp_path_factory.mktemp("targets"))
    try:
        with SiteServer() as server:
            await session.goto(server.origin + "/shop/")
            await session.settle()
            tile = await session.locate('a.cat-tile:has-text("Kitchen")')
            await session.active.click('a.cat-tile:has-text("Kitchen")')
            await session.settle()
            kettle = await session.locate('a.title:has-text("Pour-Over Kettle")')
    finally:
        await session.close()
    return {"kitchen": tile.centre, "kettle": kettle.centre}


def clicker(targets: dict[str, tuple[int, int]], to_grid: Callable[[int, int], tuple[Any, Any]]):
    """Shop--3 by clicking: the category tile, then the product, then the answer read off the product page."""

    def reply(request: dict[str, Any]) -> Reply:
        url = url_of(request)
        if url.endswith("/shop/"):
            x, y = to_grid(*targets["kitchen"])
        elif url.endswith("/shop/c/kitchen"):
            x, y = to_grid(*targets["kettle"])
        else:
            return call("terminate", {"status": "success", "answer": "12"})
        return call("computer", {"action": "click", "x": x, "y": y})

    return reply


def write_profile(path: Path, base_url: str, **fields: Any) -> Path:
    lines = [f'base_url = "{base_url}"', 'model = "stub-model"', f'api_key_env = "{KEY_ENV}"']
    lines += [f"{key} = {json.dumps(value)}" for key, value in fields.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def assert_no_key(run_dir: Path, proc: subprocess.CompletedProcess) -> None:
    assert KEY not in proc.stdout and KEY not in proc.stderr
    leaked = [p for p in run_dir.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    assert leaked == []


# -- the native tool adapter: a task solved, and every failure mode, in one session ------------------------------
def test_tools_adapter_solves_a_task_and_each_failure_ends_as_designed(targets, tmp_path):
    solve = clicker(targets, lambda x, y: (x, y))
    seen: dict[str, list[dict[str, Any]]] = {}

    def per_task(request: dict[str, Any]) -> Reply:
        task_id = ID_OF_GOAL[goal_of(request)]
        mine = seen.setdefault(task_id, [])
        mine.append(request)
        return {
            "Shop--3": lambda: solve(request),
            "Shop--1": lambda: error(429, "rate limited", **{"Retry-After": "1"}) if len(mine) == 1 else
            call("terminate", {"status": "success", "answer": "1.24 kg"}),
            "News--0": lambda: call("computer", '{"action": "click", "x": 10, "y": '),
            "News--1": lambda: call("mouse_click", {"x": 10, "y": 10}),
            "News--2": lambda: call("computer", {"action": "click", "x": 1280, "y": 800}),
            "News--3": lambda: text("The author is probably Tomás Ferreira."),
            "News--4": lambda: error(500, "internal error"),
            "Recipes--0": lambda: Reply(delay_s=10.0, tool_calls=[("terminate", "{}")]),
            "Recipes--2": lambda: Reply(content="", finish_reason="content_filter"),
            "Dictionary--2": lambda: call("answer", {"text": "fluke"}) if len(mine) == 1 else
            call("terminate", {"status": "success", "answer": "fluke"}),
        }[task_id]()

    selection = "Shop--3 or Shop--1 or News--0 or News--1 or News--2 or News--3 or News--4 or Recipes--0 " \
                "or Recipes--2 or Dictionary--2"
    with OpenAIStub(per_task, api_key=KEY) as stub:
        profile = write_profile(tmp_path / "stub.toml", stub.base_url, timeout_s=4, retries=1, backoff_s=0.1)
        run_dir = tmp_path / "run"
        proc = run_suite(run_dir, "-p", "no:xdist", "-k", selection, "--policy", "openai", "--policy-profile",
                         str(profile), "--record", env={KEY_ENV: KEY})
    found = results(run_dir)
    assert outcomes(run_dir) == {
        "Shop--3": ("passed", None, None),
        "Shop--1": ("passed", None, None),
        "News--0": ("failed", "invalid_output", None),
        "News--1": ("failed", "invalid_output", None),
        "News--2": ("failed", "invalid_output", None),
        "News--3": ("failed", "invalid_output", None),
        "News--4": ("infra_error", None, "policy_unavailable"),
        "Recipes--0": ("infra_error", None, "policy_unavailable"),
        "Recipes--2": ("failed", "refusal", None),
        "Dictionary--2": ("passed", None, None),
    }, proc.stdout[-3000:]
    assert found["Shop--3"]["steps"] == 3 and found["Shop--3"]["usage"]["prompt_tokens"] == 300
    assert found["Shop--1"]["usage"]["retries"] == 1
    assert "arguments are not valid JSON" in found["News--0"]["reason"]
    assert "unknown tool 'mouse_click'" in found["News--1"]["reason"]
    assert "point (1280, 800) is outside the 1280x720 screenshot" in found["News--2"]["reason"]
    assert "no tool call in the reply" in found["News--3"]["reason"]
    assert "HTTP 500: internal error (2 attempts)" in found["News--4"]["reason"]
    assert "no reply within 4 s (2 attempts)" in found["Recipes--0"]["reason"]
    # The validation error went back to the model, which then answered.
    assert "error: unknown tool 'answer'" in latest(seen["Dictionary--2"][1])
    # Every task's exchanges are recorded; the key was sent to the endpoint and written nowhere.
    assert all((run_dir / r["path"] / "policy" / "exchanges.jsonl").exists() for r in found.values())
    assert_no_key(run_dir, proc)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (summary["passed"], summary["failed"], summary["masked"]) == (3, 5, {"infra_error[policy_unavailable]": 2})


# -- normalized grids: the same task, in this process's browser (the pytest path is the one above) -------------------
@pytest.mark.parametrize("adapter, to_grid", [
    ("grid-1", lambda x, y: (round(x / (W - 1), 4), round(y / (H - 1), 4))),
    ("grid-999", lambda x, y: (round(x * 999 / (W - 1)), round(y * 999 / (H - 1)))),
])
async def test_grid_adapters_solve_a_task(targets, runtime, tmp_path, adapter, to_grid):
    task = next(t for t in TASKS if t.id == "Shop--3")
    with OpenAIStub(clicker(targets, to_grid)) as stub, SiteServer() as server:
        profile = make_profile({"base_url": stub.base_url, "model": "stub-model", "adapter": adapter})
        policy = OpenAIPolicy(profile, make_adapter(profile, (W, H), None), lambda: HttpTransport(profile, "EMPTY"))
        prepared = OfflineSites(server).prepare(task)
        session = await runtime.browser.new_session(tmp_path)
        try:
            await session.context.add_cookies(prepared.cookies)
            episode = await AgentLoop(session, runtime.device, policy, Budgets(max_steps=6)).run(prepared.task, Episode(prepared.task.id, tmp_path))
        finally:
            await session.close()
    verdict = await verifier_judge(prepared.task, episode.evidence(prepared.task.goal))
    assert verdict.success, (episode.reason, [s.error for s in episode.steps])
    clicks = [a for s in episode.steps for a in s.actions if a.get("action") == "click"]
    # The clicks landed where the targets are (a 0..999 grid step is 1.28 px wide: within a pixel).
    landed = [(a["x"], a["y"]) for a in clicks]
    expected = [targets["kitchen"], targets["kettle"]]
    assert len(landed) == 2 and all(abs(a - b) <= 1 for pair in zip(landed, expected) for a, b in zip(*pair))
    sent = stub.requests[0]["tools"][0]["function"]["parameters"]["properties"]["x"]["anyOf"][0]
    assert sent["maximum"] == (1 if adapter == "grid-1" else 999)


# -- WebVoyager's text protocol with set-of-marks, recorded, then replayed offline ----------------------------------
def label_of(observation: str, starts: str) -> str | None:
    match = re.search(r"^\[(\d+)\]: <a> \"" + re.escape(starts), observation, re.M)
    return match[1] if match else None


def voyager(request: dict[str, Any]) -> Reply:
    """Reads the element list, never coordinates: as a set-of-marks model does."""
    observation, url = latest(request), url_of(request)
    steps = {"/shop/": "Kitchen & Dining Cookware", "/shop/c/kitchen": "Küchenwerk Pour-Over Kettle",
             "/news/": "Technology", "/news/technology": "New undersea cable"}
    answers = {"/shop/p/": "12", "/news/article/": "Tomás Ferreira"}
    for ending, name in steps.items():
        if url.endswith(ending):
            label = label_of(observation, name)
            action = f"Click [{label}]" if label is not None else "Scroll [WINDOW]; down"
            return text(f"Thought: open {name}.\nAction: {action}")
    for part, answer in answers.items():
        if part in url:
            return text(f"Thought: it is on the page.\nAction: ANSWER; {answer}")
    return text("Thought: lost.\nAction: GoBack")


def test_webvoyager_adapter_solves_tasks_and_replays_offline(tmp_path):
    recorded = tmp_path / "recorded"
    with OpenAIStub(voyager) as stub:
        proc = run_suite(recorded, "-p", "no:xdist", "-k", "Shop--3 or News--0", "--policy", "openai",
                         "--policy-base-url", stub.base_url, "--policy-model", "stub-model",
                         "--policy-adapter", "webvoyager", "--record")
    assert outcomes(recorded) == {"Shop--3": ("passed", None, None), "News--0": ("passed", None, None)}, \
        proc.stdout[-3000:]
    assert "tools" not in stub.requests[0] and "Action: Click [" in stub.requests[1]["messages"][2]["content"]

    # Replay with the endpoint gone: Shop--3 plays back; News--0 is given Shop--3's recording and diverges at once;
    # Shop--1 has no recording and never runs.
    source = tmp_path / "source"
    shutil.copytree(recorded, source)
    news = next((source / "tasks" / "News--0").glob("attempt-*"))
    shutil.rmtree(news / "policy")
    shutil.copytree(next((source / "tasks" / "Shop--3").glob("attempt-*")) / "policy", news / "policy")
    replayed = tmp_path / "replayed"
    proc = run_suite(replayed, "-p", "no:xdist", "-k", "Shop--3 or News--0 or Shop--1", "--policy", "replay",
                     "--replay-from", str(source))
    assert outcomes(replayed) == {"Shop--3": ("passed", None, None), "News--0": ("failed", "replay_diverged", None),
                                  "Shop--1": ("not_run", None, "replay_missing")}, proc.stdout[-3000:]
    assert "request differs from the recording" in results(replayed)["News--0"]["reason"]
    assert results(replayed)["Shop--3"]["answer"] == "12"


# -- a refused key: at session start, and in the middle of a run ----------------------------------------------------
@pytest.mark.parametrize("workers", [["-n", "1"], ["-p", "no:xdist"]], ids=["xdist", "single"])
def test_refused_key_mid_run_stops_the_session_with_one_message(tmp_path, workers):
    # The model list answers (the preflight passes), then completions are refused, echoing the key as some do.
    with OpenAIStub([error(401, f"Incorrect API key provided: {KEY}")]) as stub:
        run_dir = tmp_path / "run"
        proc = run_suite(run_dir, *workers, "-k", "Shop--3 or Shop--1", "--policy", "openai", "--policy-base-url",
                         stub.base_url, "--policy-model", "stub-model", "--policy-api-key-env", KEY_ENV,
                         env={KEY_ENV: KEY})
    assert proc.returncode == 3, proc.stdout[-3000:]
    found = outcomes(run_dir)
    assert list(found.values()) == [("infra_error", None, "policy_auth")] and len(stub.requests) == 1
    output = proc.stdout + proc.stderr
    stop = f"Interrupted: webeval: stopping the session: model stub-model at {stub.base_url} refused the API key " \
           f"from ${KEY_ENV} (HTTP 401): Incorrect API key provided: ***"
    assert output.count(stop) == 1, output[-3000:]
    assert_no_key(run_dir, proc)


@pytest.mark.parametrize("case", ["wrong key", "unreachable"])
def test_preflight_stops_the_session_before_any_task(tmp_path, case):
    # (An unserved model is refused the same way: see test_policy_client.py for the preflight's every message.)
    with OpenAIStub(api_key=KEY) as stub:
        base_url = stub.base_url
        if case == "unreachable":
            stub.stop()
        run_dir = tmp_path / "run"
        proc = run_suite(run_dir, "-n", "2", "--policy", "openai", "--policy-base-url", base_url,
                         "--policy-model", "stub-model", "--policy-api-key-env", KEY_ENV, "--policy-retries", "0",
                         env={KEY_ENV: "sk-wrong-1234567"})
        assert stub.requests == []  # not one completion
    expected = {
        "wrong key": f"Exit: webeval: the policy endpoint {base_url} refused the API key from ${KEY_ENV}: HTTP 401",
        "unreachable": f"Exit: webeval: the policy endpoint {base_url} is unreachable",
    }[case]
    output = proc.stdout + proc.stderr
    # pytest.exit's own rendering: the message on stderr, echoed once in the terminal's closing line.
    assert proc.returncode == 3 and proc.stderr.count(expected) == 1, output[-3000:]
    assert "Traceback" not in output and "xfail" not in output.lower() and "bringing up nodes" not in output
    assert not (run_dir / "results.jsonl").exists() and not (run_dir / "tasks").exists()
    assert "sk-wrong-1234567" not in output
