"""`webeval export --format inspect|online-mind2web`: a run as Inspect AI's eval log (read back with inspect_ai's own
reader, and served by `inspect view`) and as Online-Mind2Web's result folders (loaded as its src/run.py loads them).
Masked tasks are sample errors, never scores of 0; tasks that never ran are named, never exported as failures."""

from __future__ import annotations

import base64
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log
from PIL import Image

from tests.conftest import ROOT
from tests.runs import run as run_pytest
from tests.test_import_mind2web import upstream_loading
from tests.webvoyager_data import ORIGINAL, need_data
from webeval.cli import main
from webeval.outcomes.evidence import Evidence
from webeval.outcomes.record import AttemptRecord, FailureClass, Outcome
from webeval.outcomes.rundir import RunDir
from webeval.tasks import Population

ENDINGS = {"Shop--0": Outcome.passed, "Shop--1": Outcome.failed, "Shop--2": Outcome.judge_failed,
           "Shop--3": Outcome.infra_error, "Shop--4": Outcome.not_run, "Shop--5": Outcome.harness_error}
KINDS = {"Shop--2": "timeout", "Shop--3": "browser", "Shop--4": "site_unreachable"}


def png(shade: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (32, 18), (shade, 90, 200 - shade)).save(buffer, "PNG")
    return buffer.getvalue()


def write_attempt(run_dir: RunDir, task_id: str, outcome: Outcome) -> AttemptRecord:
    attempt, folder = run_dir.attempt_dir(task_id)
    for n in (1, 2, 3, 4):
        (folder / f"step-00{n}.png").write_bytes(png(n * 40 + int(task_id[-1])))
    steps = [{"step": 1, "screenshot": "step-001.png", "url": "http://shop/", "title": "Shop", "error": None,
              "actions": [{"tool": "computer", "action": "click", "x": 3, "y": 4}], "raw": "I click the laptops."},
             {"step": 2, "screenshot": "step-002.png", "url": "http://shop/c", "title": "Laptops", "error": None,
              "actions": [{"tool": "computer", "action": "type", "text": "vantage"},
                          {"tool": "computer", "action": "key", "keys": ["enter"]}], "raw": None},
             {"step": 3, "screenshot": "step-003.png", "url": "http://shop/s", "title": "Search", "actions": [],
              "error": "unknown action 'fly'", "raw": "fly()"},
             {"step": 4, "screenshot": "step-004.png", "url": "http://shop/p/1", "title": "Vantage", "error": None,
              "actions": [{"tool": "terminate", "status": "success", "answer": "Vantage 14"}], "raw": "Done."}]
    (folder / "trajectory.jsonl").write_text("".join(json.dumps(s) + "\n" for s in steps))
    infra = {"kind": "browser", "message": "Chromium died"} if outcome is Outcome.infra_error else None
    Evidence(task_id=task_id, goal=f"Find the laptop of {task_id}.", answer="Vantage 14", infra=infra,
             urls=[s["url"] for s in steps], actions=[a for s in steps for a in s["actions"]],
             screenshots=[s["screenshot"] for s in steps], folder=folder).write()
    valid = outcome.valid
    return AttemptRecord(
        run_id=run_dir.run_id, task_id=task_id, site="Shop", attempt=attempt, outcome=outcome, answer="Vantage 14",
        kind=KINDS.get(task_id), reason={"Shop--1": "the answer names another laptop"}.get(task_id, f"{outcome.value}"),
        failure_class=FailureClass.wrong_answer if outcome is Outcome.failed else None, steps=4, duration_s=4.5,
        verdict={"success": outcome is Outcome.passed, "reason": "the page shows it" if outcome is Outcome.passed
                 else "the answer names another laptop", "judge": "webvoyager", "model": "judge-model",
                 "protocol": "webeval"} if valid else None,
        path=str(folder.relative_to(run_dir.path)), usage={"prompt_tokens": 1200, "completion_tokens": 80},
        extra={"traceback": "Traceback (most recent call last):\nKeyError: 'x'"} if outcome is Outcome.harness_error
        else {})


def mixed_run(path: Path) -> RunDir:
    ids = (*ENDINGS, "Shop--6")
    run_dir = RunDir(path).create(Population(name="shop", ids=ids, sha256="1" * 64, sites=dict.fromkeys(ids, "Shop")))
    for task_id, outcome in ENDINGS.items():
        if outcome is Outcome.not_run:
            run_dir.append(AttemptRecord(run_id=run_dir.run_id, task_id=task_id, site="Shop", outcome=outcome,
                                         kind=KINDS[task_id], reason="precondition[site_unreachable]: refused"))
        else:
            run_dir.append(write_attempt(run_dir, task_id, outcome))
    return run_dir


@pytest.mark.parametrize("suffix", [".eval", ".json"])
def test_the_inspect_log_reads_back_with_scores_and_masked_tasks_as_errors(tmp_path, capsys, suffix):
    mixed_run(tmp_path / "run")
    out = tmp_path / f"log{suffix}"
    assert main(["export", str(tmp_path / "run"), "--format", "inspect", "--out", str(out), "--model", "qwen"]) == 0
    assert capsys.readouterr().out.strip() == f"{out}: an Inspect eval log, samples=6 scored=2 errors=4 missing=1"
    log = read_eval_log(str(out), resolve_attachments=True)
    samples = {s.id: s for s in log.samples}
    assert list(samples) == ["Shop--0", "Shop--1", "Shop--2", "Shop--3", "Shop--4", "Shop--5"]
    assert samples["Shop--0"].scores["webeval"].value == "C" and samples["Shop--1"].scores["webeval"].value == "I"
    assert samples["Shop--1"].scores["webeval"].explanation == "the answer names another laptop"
    masked = {tid: samples[tid] for tid in ("Shop--2", "Shop--3", "Shop--4", "Shop--5")}
    assert all(not s.scores and s.error is not None for s in masked.values())  # never a score of 0
    assert masked["Shop--2"].error.message == "judge_failed[timeout]: judge_failed"
    assert masked["Shop--3"].error.message == "infra_error[browser]: infra_error"
    assert masked["Shop--4"].error.message == "not_run[site_unreachable]: precondition[site_unreachable]: refused"
    assert "KeyError: 'x'" in masked["Shop--5"].error.traceback
    first = samples["Shop--0"]
    assert first.input == "Find the laptop of Shop--0." and first.output.completion == "Vantage 14"
    assert (first.metadata["site"], first.metadata["steps"], first.metadata["attempt_path"]) == \
        ("Shop", 4, "tasks/Shop--0/attempt-1")
    assert first.metadata["verdict"]["reason"] == "the page shows it"
    assert samples["Shop--1"].metadata["failure_class"] == "wrong_answer"
    assert first.messages[2].text == "I click the laptops." and "type 'vantage'" in first.messages[4].text
    assert first.messages[6].text == "fly()"
    last = first.messages[-1].content[1].image  # the last screenshot, as an image of the log
    assert base64.b64decode(last.removeprefix("data:image/png;base64,")) == \
        (tmp_path / "run" / "tasks" / "Shop--0" / "attempt-1" / "step-004.png").read_bytes()
    assert first.model_usage["qwen"].input_tokens == 1200
    assert log.results.metadata["missing"] == ["Shop--6"] and log.results.total_samples == 7
    assert log.results.completed_samples == 2
    metrics = log.results.scores[0].metrics
    assert (metrics["accuracy"].value, metrics["score_low"].value) == (0.5, 1 / 7)
    assert log.status == "error" and log.error.message.startswith("incomplete: score between 14.3% and")
    assert log.eval.model == "qwen" and log.eval.dataset.samples == 7


def test_the_epochs_of_a_k_epoch_run_are_inspect_epochs(tmp_path):
    ids = ("Shop--0.e1", "Shop--1.e1", "Shop--0.e2", "Shop--1.e2")
    run_dir = RunDir(tmp_path / "run").create(Population(name="shop x2 epochs", ids=ids, sha256="2" * 64))
    run_dir.set_conventions({"epochs": "2"})
    for task_id in ids:
        run_dir.append(write_attempt(run_dir, task_id, Outcome.passed if task_id != "Shop--1.e2" else Outcome.failed))
    assert main(["export", str(run_dir.path), "--format", "inspect", "--out", str(tmp_path / "log.eval")]) == 0
    log = read_eval_log(str(tmp_path / "log.eval"))
    assert [(s.id, s.epoch, s.scores["webeval"].value) for s in log.samples] == [
        ("Shop--0", 1, "C"), ("Shop--1", 1, "C"), ("Shop--0", 2, "C"), ("Shop--1", 2, "I")]
    assert log.eval.config.epochs == 2 and log.eval.dataset.sample_ids == ["Shop--0", "Shop--1"]
    assert log.status == "success" and log.error is None


def test_without_inspect_ai_the_command_says_what_to_install(tmp_path):
    mixed_run(tmp_path / "run")
    out = tmp_path / "log.eval"
    code = ("import sys; sys.modules['inspect_ai'] = None; from webeval.cli import main; "
            f"sys.exit(main(['export', {str(tmp_path / 'run')!r}, '--format', 'inspect', '--out', {str(out)!r}]))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip() == ("webeval export: error: --format inspect needs inspect_ai: "
                                   "pip install 'pytest-webeval[inspect]'")
    assert not out.exists()


def test_online_mind2web_folders_load_as_its_run_py_loads_them(tmp_path, capsys):
    mixed_run(tmp_path / "run")
    out = tmp_path / "om2w"
    assert main(["export", str(tmp_path / "run"), "--format", "online-mind2web", "--out", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["  not exported Shop--3: its episode did not finish (infra_error[browser])",
                     "  not exported Shop--4: its episode did not finish (not_run[site_unreachable])",
                     "  not exported Shop--5: its episode did not finish (harness_error)",
                     f"{out}: Online-Mind2Web result folders, exported=3 not_exported=3 missing=1"]
    assert sorted(p.name for p in out.iterdir()) == ["Shop--0", "Shop--1", "Shop--2"]  # judge_failed: to be judged
    loaded = upstream_loading(out / "Shop--0")
    assert loaded["task"] == "Find the laptop of Shop--0." and loaded["answer"] == "Vantage 14"
    assert loaded["actions"] == ["coords(3, 4) -> CLICK | SUCCESS",
                                 "page -> TYPE -> 'vantage'; page -> PRESS_KEY -> enter | SUCCESS",
                                 "page -> NO_ACTION | FAILED"]  # an invalid reply: nothing was done
    source = tmp_path / "run" / "tasks" / "Shop--0" / "attempt-1"
    assert [p.read_bytes() for p in loaded["screenshots"]] == [
        (source / f"step-00{n}.png").read_bytes() for n in (1, 2, 3, 4)]
    result = json.loads((out / "Shop--0" / "result.json").read_text())
    assert result["schema_version"] == "online-mind2web-v2" and result["task_id"] == "Shop--0"
    assert result["action_history"][-1] == {"step": 3, "screenshot": "0003.png", "url": "http://shop/p/1",
                                            "action": "TASK_COMPLETE -> ANSWER: Vantage 14", "action_status": None,
                                            "thought": None}
    assert [s["step"] for s in result["action_history"]] == [0, 1, 2, 3]


def test_a_run_with_nothing_finished_exports_nothing_and_says_so(tmp_path, capsys):
    run_dir = RunDir(tmp_path / "run").create(Population(name="shop", ids=("Shop--3",), sha256="3" * 64))
    run_dir.append(write_attempt(run_dir, "Shop--3", Outcome.infra_error))
    assert main(["export", str(run_dir.path), "--format", "online-mind2web", "--out", str(tmp_path / "om2w")]) == 1
    assert capsys.readouterr().out.splitlines()[-1].endswith("exported=0 not_exported=1 missing=0")
    assert list((tmp_path / "om2w").iterdir()) == []


@need_data
def test_an_imported_run_round_trips_through_online_mind2web(tmp_path):
    """WebVoyager's real folders, imported, exported to Online-Mind2Web and imported again: the same task text,
    answer and screenshots in the same order."""
    assert main(["import", "webvoyager", str(ORIGINAL / "results-examples"), "--out", str(tmp_path / "a")]) == 0
    assert main(["export", str(tmp_path / "a"), "--format", "online-mind2web", "--out", str(tmp_path / "om2w")]) == 0
    assert main(["import", "online-mind2web", str(tmp_path / "om2w"), "--out", str(tmp_path / "b")]) == 0
    for task_id in RunDir(tmp_path / "a").population().ids:
        first = Evidence.load(tmp_path / "a" / "tasks" / task_id / "attempt-1")
        again = Evidence.load(tmp_path / "b" / "tasks" / task_id / "attempt-1")
        assert (again.goal, again.answer) == (first.goal, first.answer)
        before = [p.read_bytes() for p in first.screenshot_paths()]
        after = [p.read_bytes() for p in again.screenshot_paths()]
        assert after[:len(before)] == before and after[len(before):] in ([], before[-1:])
        assert [a["text"] for a in again.actions if a["tool"] != "terminate"] == \
            [f"{a['text']} | SUCCESS" for a in first.actions if a["tool"] != "terminate"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def served_log(folder: Path, name: str, timeout: float = 120) -> dict:
    """The log as `inspect view` serves it to its page: the viewer started on the folder, asked, then stopped."""
    port = _free_port()
    viewer = subprocess.Popen([str(Path(sys.executable).with_name("inspect")), "view", "start", "--log-dir",
                               str(folder), "--host", "127.0.0.1", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/logs/{(folder / name).as_uri()}",
                                            timeout=30) as reply:
                    return json.loads(reply.read())
            except OSError:
                if time.monotonic() > deadline or viewer.poll() is not None:
                    raise
                time.sleep(0.5)
    finally:
        viewer.terminate()
        try:
            viewer.wait(timeout=10)
        except subprocess.TimeoutExpired:
            viewer.kill()
            viewer.wait(timeout=10)


def test_a_real_run_exports_for_inspect_view_and_online_mind2web(tmp_path):
    run = tmp_path / "run"
    job = run_pytest(["suites/local", "-k", "Shop--0 or News--1", "--run-dir", str(run), "-p", "no:xdist"], run)
    assert job.proc.returncode == 0, job.output[-2000:]
    logs = tmp_path / "logs"
    logs.mkdir()
    assert main(["export", str(run), "--format", "inspect", "--out", str(logs / "local.eval"), "--model", "oracle"]) == 0
    served = served_log(logs, "local.eval")
    assert served["status"] == "error"  # 43 of the 45 tasks never ran: the run is incomplete
    assert {s["id"]: s["scores"]["webeval"]["value"] for s in served["samples"]} == {"News--1": "C", "Shop--0": "C"}
    assert len(served["results"]["metadata"]["missing"]) == 43
    out = tmp_path / "om2w"
    assert main(["export", str(run), "--format", "online-mind2web", "--out", str(out)]) == 0
    for task_id in ("Shop--0", "News--1"):
        evidence = Evidence.load(run / "tasks" / task_id / "attempt-1")
        loaded = upstream_loading(out / task_id)
        assert loaded["task"] == evidence.goal and loaded["answer"] == evidence.answer
        shots = [p.read_bytes() for p in evidence.screenshot_paths()]
        assert [p.read_bytes() for p in loaded["screenshots"]] == shots
        clicks = [a for a in evidence.actions if a["tool"] == "computer" and a["action"] == "click"]
        assert loaded["actions"][0] == f"coords({clicks[0]['x']}, {clicks[0]['y']}) -> CLICK | SUCCESS"
    shutil.rmtree(run / "tasks")  # what a run keeps elsewhere is never what the export read
    assert os.listdir(out / "Shop--0" / "trajectory")
