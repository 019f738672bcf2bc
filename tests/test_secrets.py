"""Secrets never leak: a run with a distinct secret planted in every slot, where the model and the judge repeat every
one of them back, then a scan of everything the run left for 0 occurrences. (That the placeholder key is no secret
is checked in tests/test_bad_replies.py, in a run with no key set.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

from fixtures.openai_stub import OpenAIStub, Reply, text
from fixtures.sites import hostile
from tests.conftest import ROOT
from tests.runs import records, run
from tests.scripted import finish, seen, type_text
from tests.webvoyager_data import webvoyager_rows
from webeval.benchmarks.local.site_server import SiteServer
from webeval.judges.config import JudgeConfig
from webeval.outcomes.redact import MASK

SECRETS = {  # slot -> a value found nowhere else
    "policy key": "sk-policy-5d1f0c7e9a",
    "judge key": "sk-judge-83b2e6f4d1",
    "proxy password": "proxy-pw-4a9c2e71",
    "site-map password": "map-pw-7e3b90d2",
    "--secret-env": "typed-secret-c61f0a",
}


def said(everything: str) -> str:
    return f"here they are: {everything}"


def test_a_secret_in_every_slot_reaches_no_artifact_report_log_or_terminal(tmp_path):
    every = " ".join(SECRETS.values())
    run_dir, junit, log = tmp_path / "run", tmp_path / "junit.xml", tmp_path / "webeval.log"

    def model(request: dict) -> Reply:
        now = seen(request)
        if now.step == 1:
            return type_text(SECRETS["--secret-env"])  # what a task that logs in has the agent do
        return Reply(content=said(every), tool_calls=finish(said(every)).tool_calls)

    judge_reply = text(json.dumps({"reasoning": said(every), "verdict": "NOT SUCCESS"}))
    with SiteServer({"hostile": hostile.site}) as sites, \
            OpenAIStub(model, api_key=SECRETS["policy key"]) as policy, \
            OpenAIStub([judge_reply], models=("judge-model",), api_key=SECRETS["judge key"]) as judge:
        origin = sites.origin.replace("http://", f"http://user:{SECRETS['site-map password']}@")
        tasks = webvoyager_rows(tmp_path / "tasks.jsonl", [("Lab--0", "Type the password, then finish.",
                                                            "https://lab.example/")])
        job = run(["-p", "no:xdist", "suites/webvoyager", "--tasks-file", str(tasks), "--run-dir", str(run_dir),
                   "--site-map", f"Lab={origin}/hostile/plain", "--site-proxy", f"Lab={sites.origin}",
                   "--site-proxy-auth", "Lab=PROXY_AUTH", "--policy", "openai", "--policy-base-url",
                   policy.base_url, "--policy-model", "stub-model", "--record", "--judge-base-url", judge.base_url,
                   "--judge-model", "judge-model", "--judge-api-key-env", "JUDGE_KEY", "--secret-env", "SITE_PASS",
                   "--junitxml", str(junit), "--log-file", str(log), "--log-file-level", "DEBUG", "-rA"],
                  run_dir, env={"OPENAI_API_KEY": SECRETS["policy key"], "JUDGE_KEY": SECRETS["judge key"],
                                "PROXY_AUTH": f"proxy-user:{SECRETS['proxy password']}",
                                "SITE_PASS": SECRETS["--secret-env"]})
        report = subprocess.run([sys.executable, "-m", "webeval.cli", "report", str(run_dir)], cwd=ROOT,
                                capture_output=True, text=True, timeout=300)
    assert [r["outcome"] for r in records(run_dir)] == ["failed"], job.output
    assert (run_dir / "report.html").exists() or (run_dir / "report" / "index.html").exists(), report.stderr
    # The secrets did reach the run (the model typed one and both endpoints repeated all): each was masked there.
    answer = json.loads((next(run_dir.glob("tasks/*/attempt-1")) / "evidence.json").read_text())["answer"]
    assert answer == said(" ".join([MASK] * len(SECRETS))), answer
    texts = {"terminal": job.output, "webeval report": report.stdout + report.stderr}
    texts |= {str(path): path.read_bytes().decode("utf-8", "replace")
              for path in tmp_path.rglob("*") if path.is_file() and not path.is_symlink() and path != tasks}
    for slot, secret in SECRETS.items():
        for form in {secret, quote(secret, safe="")}:
            leaks = [where for where, content in texts.items() if form in content]
            assert not leaks, f"the {slot} ({form}) is in {leaks}"
    assert any(path.suffix == ".html" for path in map(Path, texts) if "report" in str(path))


def test_an_endpoint_never_shows_its_key():
    key = "sk-never-shown-31c7"
    endpoint = JudgeConfig(base_url="http://127.0.0.1:9/v1", model="m", api_key_env="K").endpoint({"K": key})
    assert key not in repr(endpoint) and key not in str(endpoint) and endpoint.client().api_key == key
