"""The bad-input table of docs/reliability.md, the rows fed by an endpoint: model replies (and the judge's, below).

One run, one task per row, on one worker: the scripted model first acts once, validly, then answers with that row's
bad reply, every turn. A broken reply is the agent's invalid output (failed, `invalid_output`, after 3 in a row); an
endpoint failure is infrastructure; each says why in one line, and the steps already taken stay on record.
"""

from __future__ import annotations

import json
from pathlib import Path

from fixtures.openai_stub import OpenAIStub, Reply, call, text
from fixtures.sites.hostile import DONE
from tests.runs import records, run
from tests.scripted import click, finish, seen, wait
from webeval.outcomes.redact import MASK, PLACEHOLDER

NESTED = "[" * 10_000 + "]" * 10_000
BAD_MODEL_REPLIES: dict[str, list[Reply]] = {  # one or two replies, taken in turn
    "10 MB of content": [text("x" * (10 << 20))],
    "invalid UTF-8 bytes": [Reply(raw_body=b'{"choices": [{"message": {"role": "assistant", "content": "\xff"}}]}')],
    "1,000 tool calls in one turn": [Reply(tool_calls=[("computer", '{"action": "wait", "seconds": 0}')] * 1000)],
    "JSON nested 10,000 levels deep": [Reply(raw_body=NESTED), call("computer", NESTED)],
    "NaN or negative coordinates": [call("computer", '{"action": "click", "x": NaN, "y": 10}'),
                                    call("computer", {"action": "click", "x": -5, "y": 10})],
    "HTTP 200 with an HTML body": [Reply(raw_body="<html><body><h1>Bad gateway</h1></body></html>",
                                         content_type="text/html")],
    "a JSON body that is not a chat completion": [Reply(raw_body='{"result": "ok", "data": [1, 2, 3]}')],
    "a response trickled slower than the step timeout": [Reply(content="thinking " * 40, trickle_s=0.05)],
}
# What the last reply of each row is reported as, in its one line.
SAID = {
    "10 MB of content": "bytes, more than the 2097152 a reply may be",
    "invalid UTF-8 bytes": "the endpoint's reply is not UTF-8 (byte 0xff at offset",
    "1,000 tool calls in one turn": "1000 tool calls in one reply: at most 20",
    "JSON nested 10,000 levels deep": "the endpoint's reply is JSON nested too deeply to read",
    "NaN or negative coordinates": "computer: x: Input should be a valid integer",
    "HTTP 200 with an HTML body": "the endpoint's reply is not JSON (Expecting value at column 1)",
    "a JSON body that is not a chat completion": "the reply has no choices",
    "a response trickled slower than the step timeout": "no reply within 2 s",
}
PLACEHOLDER_ROW = "the placeholder key"  # a valid episode run with no key set: its reply names the placeholder


def task_rows(path: Path, names: list[str]) -> Path:
    rows = [{"id": f"Reply--{index}", "site": "Hostile", "goal": f"Bad reply: {name}",
             "start_url": "http://offline.webeval.test/hostile/plain",
             "verifier": {"state": [{"path": "hostile.done", "contains": ["plain"]}]}}
            for index, name in enumerate(names)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def model(request: dict) -> Reply:
    now = seen(request)
    name = now.goal.removeprefix("Bad reply: ")
    if name == PLACEHOLDER_ROW:
        answer = f"the cart is {PLACEHOLDER}"
        return click(DONE) if now.step == 1 else Reply(content=answer, tool_calls=finish(answer).tool_calls)
    if now.step == 1:
        return wait(0.1)  # a valid step first: what is on record before the bad replies must stay there
    replies = BAD_MODEL_REPLIES[name]
    return replies[(now.step - 2) % len(replies)]


def test_a_broken_model_reply_is_invalid_output_and_a_failing_endpoint_is_infra(tmp_path):
    names = [*BAD_MODEL_REPLIES, PLACEHOLDER_ROW]
    run_dir = tmp_path / "run"
    with OpenAIStub(model) as stub:
        job = run(["-p", "no:xdist", "fixtures/suites/hostile", "--run-dir", str(run_dir), "--policy", "openai",
                   "--policy-base-url", stub.base_url, "--policy-model", "stub-model", "--policy-timeout", "2",
                   "--policy-retries", "0", "--step-timeout", "20", "--max-steps", "8", "--settle-cap", "1",
                   "--record"], run_dir, env={"WEBEVAL_TASKS": str(task_rows(tmp_path / "tasks.jsonl", names)),
                                              "OPENAI_API_KEY": ""})
    found = {names[int(r["task_id"].split("--")[1])]: r for r in records(run_dir)}
    assert sorted(found) == sorted(names), job.output
    for name, said in SAID.items():
        record = found[name]
        trajectory = (run_dir / record["path"] / "trajectory.jsonl").read_text().splitlines()
        assert json.loads(trajectory[0])["actions"][0]["action"] == "wait", name  # the valid step, kept
        assert "\n" not in record["reason"] and "Traceback" not in record["reason"], record
        if name.startswith("a response trickled"):
            assert (record["outcome"], record["kind"], len(trajectory)) == ("infra_error", "policy_unavailable", 1)
        else:
            assert (record["outcome"], record["failure_class"]) == ("failed", "invalid_output"), record
            assert len(trajectory) == record["steps"] == 4, (name, record)
        assert said in record["reason"], (name, record["reason"])
    errors = [json.loads(line)["error"] for line in (run_dir / found["JSON nested 10,000 levels deep"]["path"] /
                                                     "trajectory.jsonl").read_text().splitlines()[1:]]
    assert "computer: arguments are JSON nested too deeply to read" in errors, errors
    assert "Traceback" not in job.output, job.output
    # With no key set the client sends the placeholder, and nothing masks the word where it is no secret.
    assert stub.headers and all(dict((k.lower(), v) for k, v in h.items())["authorization"] == f"Bearer {PLACEHOLDER}"
                                for h in stub.headers)
    placeholder = found[PLACEHOLDER_ROW]
    exchanges = (run_dir / placeholder["path"] / "policy" / "exchanges.jsonl").read_text()
    assert placeholder["outcome"] == "passed" and placeholder["answer"] == f"the cart is {PLACEHOLDER}"
    assert f"the cart is {PLACEHOLDER}" in exchanges and MASK not in exchanges


BAD_JUDGE_REPLIES: dict[str, Reply] = {
    "10 MB of content": text("x" * (10 << 20)),
    "invalid UTF-8 bytes": Reply(raw_body=b'{"choices": [{"message": {"role": "assistant", "content": "\xff"}}]}'),
    "1,000 tool calls in one turn": Reply(tool_calls=[("verdict", '{"verdict": "SUCCESS"}')] * 1000),
    "JSON nested 10,000 levels deep": Reply(raw_body=NESTED),
    "NaN or negative coordinates": text('{"verdict": NaN, "reasoning": -1}'),
    "HTTP 200 with an HTML body": Reply(raw_body="<html><body><h1>Bad gateway</h1></body></html>",
                                        content_type="text/html"),
    "a JSON body that is not a chat completion": Reply(raw_body='{"result": "ok", "data": [1, 2, 3]}'),
    "a response trickled slower than the step timeout": Reply(content="thinking " * 40, trickle_s=0.05),
}


def test_a_broken_judge_reply_is_judge_failed_never_the_agents_failure(tmp_path):
    from fixtures.sites import hostile
    from webeval.benchmarks.local.site_server import SiteServer
    from tests.webvoyager_data import webvoyager_rows

    names = list(BAD_JUDGE_REPLIES)
    run_dir = tmp_path / "run"

    def judge(request: dict) -> Reply:
        asked = json.dumps(request.get("messages", []))
        return next(reply for name, reply in BAD_JUDGE_REPLIES.items() if f"Bad judge reply: {name}" in asked)

    with SiteServer({"hostile": hostile.site}) as sites, OpenAIStub([finish("done")]) as policy, \
            OpenAIStub(judge, models=("judge-model",)) as judging:
        tasks = webvoyager_rows(tmp_path / "tasks.jsonl", [(f"Lab--{i}", f"Bad judge reply: {name}",
                                                            "https://lab.example/") for i, name in enumerate(names)])
        job = run(["-p", "no:xdist", "suites/webvoyager", "--tasks-file", str(tasks), "--run-dir", str(run_dir),
                   "--site-map", f"Lab={sites.origin}/hostile/plain", "--policy", "openai", "--policy-base-url",
                   policy.base_url, "--policy-model", "stub-model", "--judge-base-url", judging.base_url,
                   "--judge-model", "judge-model", "--judge-timeout", "1", "--judge-retries", "0"], run_dir,
                  env={"OPENAI_API_KEY": ""}, timeout=300)
    found = {names[int(r["task_id"].split("--")[1])]: r for r in records(run_dir)}
    assert sorted(found) == sorted(names), job.output
    for name, record in found.items():
        assert record["outcome"] == "judge_failed" and record["kind"], (name, record)
        assert "\n" not in record["reason"] and "Traceback" not in record["reason"], (name, record)
        assert (run_dir / record["path"] / "evidence.json").is_file(), name  # kept, to be judged again
    assert "Traceback" not in job.output, job.output
