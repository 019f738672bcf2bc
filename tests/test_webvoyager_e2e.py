"""WebVoyager end to end, offline: WebVoyager-format tasks moved by --site-map onto the offline sites (one of them
through a proxy with credentials), solved by `--policy openai` against a scripted endpoint, judged by a scripted judge
endpoint. The judge is down for the run (judge_failed), then `--rejudge` turns those into passes with no display or
browser started. A bot wall becomes infra[site_blocked]; an unreachable site is a precondition."""

from __future__ import annotations

import base64
import json
import re
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from fixtures.openai_stub import OpenAIStub, Reply, call, error, text
from tests.webvoyager_data import pytest_run, records, tripwires
from webeval.benchmarks.local.site_server import Site, SiteServer, load_sites

POLICY_KEY, JUDGE_KEY = "sk-policy-5ecret-e2e", "sk-judge-5ecret-e2e"
PROXY_USER, PROXY_PASSWORD = "alice", "pr0xy-5ecret-e2e"
PROXY_HOST = "dictionary.webeval.invalid"  # resolves nowhere: only the proxy reaches it

wall = Site("wall", "Booking")


@wall.route(r"/")
def _wall(req):
    return "<!doctype html><title>Just a moment...</title><h1>Checking your browser before accessing</h1>"


class ForwardProxy(BaseHTTPRequestHandler):
    """An HTTP forward proxy that demands Basic credentials and serves one hostname from the offline sites."""

    upstream = ""
    seen: list[str] = []

    def do_GET(self):
        expected = "Basic " + base64.b64encode(f"{PROXY_USER}:{PROXY_PASSWORD}".encode()).decode()
        if self.headers.get("Proxy-Authorization") != expected:
            self.send_response(407)
            self.send_header("Proxy-Authenticate", 'Basic realm="webeval"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        type(self).seen.append(self.path)
        target = self.upstream + re.sub(r"^http://[^/]+", "", self.path)
        try:
            with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(target, timeout=10) as upstream:
                body, status, kind = upstream.read(), upstream.status, upstream.headers.get("Content-Type", "")
        except urllib.error.HTTPError as exc:
            body, status, kind = exc.read(), exc.code, exc.headers.get("Content-Type", "")
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def goal_of(request: dict[str, Any]) -> str:
    return request["messages"][1]["content"][0]["text"]


def steps_taken(request: dict[str, Any]) -> int:
    return sum(1 for m in request["messages"] if m["role"] == "assistant")


def policy(origin: str):
    """Acts on the page like a model would: navigates, then answers what the page shows."""

    def reply(request: dict[str, Any]) -> Reply:
        goal, step = goal_of(request), steps_taken(request)
        if "Crème Brûlée" in goal:
            if step == 0:
                return call("navigate", {"url": f"{origin}/recipes/search?q=creme+brulee"})
            return call("terminate", {"status": "success", "answer": "The Crème Brûlée recipe has 1,284 reviews."})
        if "dictionary" in goal.lower():
            return call("terminate", {"status": "success", "answer": "It is a dictionary home page."})
        return call("computer", {"action": "wait", "seconds": 0})  # the bot wall: nothing to do but wait

    return reply


@pytest.fixture
def servers():
    sites = SiteServer({**load_sites(), "wall": wall}).start()
    proxy = ThreadingHTTPServer(("127.0.0.1", 0), ForwardProxy)
    ForwardProxy.upstream, ForwardProxy.seen = sites.origin, []
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        yield sites, f"http://127.0.0.1:{proxy.server_address[1]}"
    finally:
        proxy.shutdown()
        proxy.server_close()
        sites.stop()


def write_tasks(path: Path, closed_port: int) -> Path:
    rows = [
        {"web_name": "Allrecipes", "id": "Allrecipes--0",
         "ques": "How many reviews does the Crème Brûlée recipe have?",
         "web": "https://www.allrecipes.com/"},
        {"web_name": "Cambridge Dictionary", "id": "Cambridge Dictionary--0",
         "ques": "What does the dictionary home page show?", "web": "https://dictionary.cambridge.org/"},
        {"web_name": "Booking", "id": "Booking--0", "ques_template": "Find a hotel in Ohio for {dates}.",
         "date_policy": {"type": "hotel_stay", "min_days_from_today": 30, "duration_days": 2},
         "render": {"dates": "month_day_range_year"}, "web": "https://www.booking.com/"},
        {"web_name": "ESPN", "id": "ESPN--0", "ques": "Who won?", "web": f"http://127.0.0.1:{closed_port}/"},
    ]
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    return path


def closed_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_judge_outage_then_rejudge_turns_judge_failures_into_passes_without_a_browser(servers, tmp_path):
    sites, proxy = servers
    tasks = write_tasks(tmp_path / "webvoyager.jsonl", closed_port())
    run_dir = tmp_path / "run"
    env = {"WV_POLICY_KEY": POLICY_KEY, "WV_JUDGE_KEY": JUDGE_KEY, "WV_PROXY": f"{PROXY_USER}:{PROXY_PASSWORD}"}
    judge_args = ["--judge-model", "judge-model", "--judge-api-key-env", "WV_JUDGE_KEY", "--judge-retries", "0"]
    with OpenAIStub(policy(sites.origin), models=("agent-model",), api_key=POLICY_KEY) as agent, \
            OpenAIStub([error(503, "the judge is down")], models=("judge-model",), api_key=JUDGE_KEY) as judge:
        first = pytest_run([
            "suites/webvoyager", "--tasks-file", str(tasks), "--today", "2031-03-15", "--run-dir", str(run_dir),
            "--site-map", f"Allrecipes={sites.origin}/recipes/",
            "--site-map", f"Cambridge Dictionary=http://{PROXY_HOST}/dictionary/",
            "--site-proxy", f"Cambridge Dictionary={proxy}", "--site-proxy-auth", "Cambridge Dictionary=WV_PROXY",
            "--site-map", f"Booking={sites.origin}/wall/", "--block-budget", "2", "--max-steps", "4",
            "--policy", "openai", "--policy-base-url", agent.base_url, "--policy-model", "agent-model",
            "--policy-api-key-env", "WV_POLICY_KEY", "--judge-base-url", judge.base_url, *judge_args, "-rA",
        ], env=env)
        output = first.stdout + first.stderr
        outcomes = {r["task_id"]: (r["outcome"], r["kind"]) for r in records(run_dir)}
        assert outcomes == {
            "Allrecipes--0": ("judge_failed", "http"),
            "Cambridge Dictionary--0": ("judge_failed", "http"),
            "Booking--0": ("infra_error", "site_blocked"),
            "ESPN--0": ("not_run", "site_unreachable"),
        }, output
        assert "judge_failed: judge judge-model at" in output and "HTTP 503" in output
        assert any(path.startswith("http://dictionary.webeval.invalid/dictionary/") for path in ForwardProxy.seen)
        # the rendered question is what the agent saw, and it is on record
        evidence = json.loads((run_dir / "tasks/Booking--0/attempt-1/evidence.json").read_text())
        assert evidence["goal"] == "Find a hotel in Ohio for April 14-16, 2031."
        assert "2031-03-15" in (run_dir / "webvoyager.json").read_text()
        judged_goals = {goal_of(r).split("\n")[0] for r in judge.requests}
        assert judged_goals == {"Task: How many reviews does the Crème Brûlée recipe have?",
                                "Task: What does the dictionary home page show?"}  # never the blocked one

        judge.script = [text(json.dumps({"reasoning": "The page shows 1,284 reviews.", "verdict": "SUCCESS"}))]
        judge.requests.clear()
        wires, marks = tripwires(tmp_path)
        second = pytest_run(["suites/webvoyager", "--rejudge", str(run_dir), "--judge-failed-only",
                             "--judge-base-url", judge.base_url, *judge_args], env={**env, **wires})
    output2 = second.stdout + second.stderr
    assert second.returncode == 0, output2
    assert not marks.exists(), f"a display or browser was started: {marks.read_text()}"
    assert "2 passed" in output2
    assert len(judge.requests) == 2
    images = [p for r in judge.requests for p in r["messages"][1]["content"] if p["type"] == "image_url"]
    assert images and all(p["image_url"]["url"].startswith("data:image/png;base64,") for p in images)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["passed"] == 2 and summary["failed"] == 0
    assert summary["masked"] == {"infra_error[site_blocked]": 1, "not_run[site_unreachable]": 1}
    assert summary["final"]["Allrecipes--0"] == "passed" and summary["complete"] is False
    for secret in (POLICY_KEY, JUDGE_KEY, PROXY_PASSWORD):
        assert secret not in output + output2
        leaked = [p for p in run_dir.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
        assert leaked == [], f"{secret} leaked into {leaked}"


def test_the_tripwires_do_catch_a_browser_starting(servers, tmp_path):
    """The proof above is only as good as its tripwires: a normal run under them trips them."""
    sites, _ = servers
    tasks = write_tasks(tmp_path / "webvoyager.jsonl", closed_port())
    wires, marks = tripwires(tmp_path)
    pytest_run(["suites/webvoyager", "--tasks-file", str(tasks), "--run-dir", str(tmp_path / "run"),
                "--site-map", f"Allrecipes={sites.origin}/recipes/", "--policy", "oracle", "-k", "Allrecipes"],
               env=wires)
    assert marks.exists() and "Xvfb" in marks.read_text()
