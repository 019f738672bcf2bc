"""Measuring a judge against programmatic truth: a labelled set built from a real oracle run on the offline sites,
judged by the scripted judge through `webeval reverify`, scored by `webeval judge-agreement`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fixtures.openai_stub import OpenAIStub, text
from tests.conftest import ROOT
from tests.runs import run
from tests.webvoyager_data import ORIGINAL, need_data
from webeval.cli import main
from webeval.judges.agreement import agreement
from webeval.judges.calibration import near_miss

PROMPTS = str(ORIGINAL / "evaluation")
ORACLE_TASKS = "Shop--1 or Dictionary--4"  # one judged by its answer, one by the site's state


@pytest.fixture(scope="module")
def labelled_set(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("calibration")
    oracle = run(["suites/local", "-k", ORACLE_TASKS, "-p", "no:randomly", "--run-dir", str(base / "oracle")],
                 base / "oracle")
    assert oracle.proc.returncode == 0, oracle.output[-2000:]
    assert main(["calibrate", str(base / "oracle"), "--tasks", str(ROOT / "webeval/benchmarks/local/task_files"),
                 "--out", str(base / "set")]) == 0
    return base / "set"


def judged_by(labelled_set: Path, tmp_path: Path, reply: str) -> Path:
    copy = tmp_path / "set"
    import shutil

    shutil.copytree(labelled_set, copy)
    with OpenAIStub([text(reply)], models=("judge-model",)) as stub:
        assert main(["reverify", str(copy), "--judge-protocol", "webvoyager", "--judge-prompts", PROMPTS,
                     "--judge-base-url", stub.base_url, "--judge-model", "judge-model"]) == 0
    return copy


def test_the_set_is_labelled_by_the_verifiers(labelled_set):
    labels = [json.loads(line) for line in (labelled_set / "labels.jsonl").read_text().splitlines()]
    assert len(labels) == 12
    by_variant = {(row["task_id"].split(".")[0], row["variant"]): row["success"] for row in labels}
    assert all(by_variant[(task, v)] for task in ("Shop--1", "Dictionary--4") for v in ("oracle", "restated"))
    assert not any(by_variant[(task, v)] for task in ("Shop--1", "Dictionary--4")
                   for v in ("near-miss", "early-stop", "other-answer"))
    early = json.loads((labelled_set / "tasks" / "Shop--1.early-stop" / "attempt-1" / "evidence.json").read_text())
    whole = json.loads((labelled_set / "tasks" / "Shop--1.oracle" / "attempt-1" / "evidence.json").read_text())
    assert len(early["screenshots"]) == len(whole["screenshots"]) - 1 and early["answer"] == "1.25 kg"


@need_data
def test_a_judge_that_always_says_success_has_a_false_positive_rate_of_one(labelled_set, tmp_path, capsys):
    judged = judged_by(labelled_set, tmp_path, "The screenshots show it.\nSUCCESS")
    capsys.readouterr()
    assert main(["judge-agreement", str(judged), "--json", str(tmp_path / "figures.json")]) == 0
    figures = json.loads((tmp_path / "figures.json").read_text())[str(judged)]
    assert figures["false_positive_rate"] == 1.0 and figures["recall"] == 1.0 and figures["kappa"] == 0.0
    assert figures["confusion"] == {"tp": 6, "fp": 6, "tn": 0, "fn": 0}
    out = capsys.readouterr().out
    assert "judged by webvoyager (judge-model) x12" in out and "false-positive rate 1.000" in out


@need_data
def test_a_judge_that_never_says_success_has_a_recall_of_zero(labelled_set, tmp_path, capsys):
    judged = judged_by(labelled_set, tmp_path, "Nothing shows the task done. NOT SUCCESS")
    assert main(["judge-agreement", str(judged), "--json", str(tmp_path / "figures.json")]) == 0
    figures = json.loads((tmp_path / "figures.json").read_text())[str(judged)]
    assert figures["confusion"] == {"tp": 0, "fp": 0, "tn": 6, "fn": 6}
    assert figures["recall"] == 0.0 and figures["false_positive_rate"] == 0.0 and figures["accuracy"] == 0.5


def test_figures_from_a_known_confusion_table():
    labels = {(f"t{i}", 1): i < 10 for i in range(20)}  # 10 true successes, 10 true failures
    judged = {(f"t{i}", 1): i < 8 or 10 <= i < 12 for i in range(20)}  # 8 TP, 2 FN, 2 FP, 8 TN
    result = agreement(judged, labels)
    figures = result.figures()
    assert (result.tp, result.fn, result.fp, result.tn) == (8, 2, 2, 8)
    assert figures["accuracy"] == 0.8 and figures["precision"] == 0.8 and figures["false_positive_rate"] == 0.2
    assert figures["kappa"] == pytest.approx(0.6)  # (0.8 - 0.5) / (1 - 0.5)
    assert agreement(labels, labels).figures()["kappa"] == 1.0


@pytest.mark.parametrize("line, error", [
    ('{"task_id": "a", "attempt": 1, "success": "yes"}', "labels.jsonl:1: success must be true or false"),
    ('{"task": "a"}', "labels.jsonl:1: expected"),
    ("not json", "labels.jsonl:1: expected"),
])
def test_a_bad_labels_file_is_one_line_and_changes_nothing(labelled_set, tmp_path, capsys, line, error):
    labels = tmp_path / "labels.jsonl"
    labels.write_text(line + "\n")
    before = (labelled_set / "results.jsonl").read_bytes()
    assert main(["judge-agreement", str(labelled_set), "--labels", str(labels)]) == 2
    err = capsys.readouterr().err.strip()
    assert error in err and len(err.splitlines()) == 1
    assert (labelled_set / "results.jsonl").read_bytes() == before


def test_a_run_with_no_labels_says_what_to_pass(tmp_path, capsys):
    (tmp_path / "population.json").write_text("{}")
    assert main(["judge-agreement", str(tmp_path)]) == 2
    assert "has no labels.jsonl: pass --labels FILE" in capsys.readouterr().err


@pytest.mark.parametrize("answer, miss", [("1.24 kg", "1.25 kg"), ("Vantage 14 Slim", "Vantage 15 Slim"),
                                          ("Pixelle", "Pixell"), ("Crème Brûlée", "Crème")])
def test_a_near_miss_is_close_and_not_the_answer(answer, miss):
    assert near_miss(answer) == miss


@need_data
def test_re_judging_with_the_same_judge_costs_no_call(labelled_set, tmp_path):
    import shutil

    copy = tmp_path / "set"
    shutil.copytree(labelled_set, copy)
    judge = ["reverify", str(copy), "--judge-protocol", "webvoyager", "--judge-prompts", PROMPTS]
    with OpenAIStub([text("SUCCESS")], models=("judge-model",)) as stub:
        endpoint = ["--judge-base-url", stub.base_url, "--judge-model", "judge-model"]
        assert main([*judge, *endpoint]) == 0
        assert len(stub.requests) == 12
        assert main([*judge, *endpoint]) == 0
        assert len(stub.requests) == 12  # every verdict came from the cache
        assert main([*judge, *endpoint, "--no-judge-cache"]) == 0
        assert len(stub.requests) == 24
        assert main([*judge[:3], "webeval", *judge[4:], *endpoint]) == 0
        assert len(stub.requests) == 36  # another protocol, another key


def test_calibrate_refuses_bad_input_in_one_line(labelled_set, tmp_path, capsys):
    tasks = str(ROOT / "webeval/benchmarks/local/task_files")
    assert main(["calibrate", str(tmp_path), "--tasks", tasks, "--out", str(tmp_path / "set")]) == 2
    assert "is not a run directory (no population.json)" in capsys.readouterr().err
    before = sorted(p.name for p in labelled_set.iterdir())
    assert main(["calibrate", str(labelled_set.parent / "oracle"), "--tasks", tasks, "--out", str(labelled_set)]) == 2
    assert "not empty; the set goes into a new folder" in capsys.readouterr().err
    assert sorted(p.name for p in labelled_set.iterdir()) == before


@need_data
def test_prepare_judge_prompts_checks_the_pin(tmp_path, capsys):
    assert main(["prepare", "judge-prompts", "--protocol", "webvoyager", "--from", PROMPTS,
                 "--cache-dir", str(tmp_path / "p")]) == 0
    assert (tmp_path / "p" / "auto_eval.py").read_bytes() == (Path(PROMPTS) / "auto_eval.py").read_bytes()
    # no WebJudge file in the WebVoyager folder: that one protocol's file is missing, said in one line
    assert main(["prepare", "judge-prompts", "--from", PROMPTS, "--cache-dir", str(tmp_path / "p")]) == 2
    assert "no webjudge_online_mind2web.py (OSU-NLP-Group/Online-Mind2Web" in capsys.readouterr().err
    changed = tmp_path / "changed"
    changed.mkdir()
    (changed / "auto_eval.py").write_text("SYSTEM_PROMPT = 'other'\n")
    (changed / "webjudge_online_mind2web.py").write_text("system_msg = 'other'\n")
    for protocol in ("webvoyager", "webjudge"):
        assert main(["prepare", "judge-prompts", "--protocol", protocol, "--from", str(changed),
                     "--cache-dir", str(tmp_path / "q")]) == 2
        assert "does not match the pin" in capsys.readouterr().err
    assert not list((tmp_path / "q").iterdir())
