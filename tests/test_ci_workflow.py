"""The example CI workflow that gates a model on a recorded run (.github/workflows/model-regression.yml): the fields
docs/pytest.md relies on, and its pytest command line, which pytest must accept as written."""

from __future__ import annotations

import json
import os
import shlex
import subprocess

import yaml

from tests.conftest import ROOT
from webeval.report.build import FOLDER, SINGLE_FILE

WORKFLOW = ROOT / ".github" / "workflows" / "model-regression.yml"


def load() -> dict:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    workflow["on"] = workflow.pop(True, workflow.get("on"))  # YAML 1.1 reads a bare `on` as true
    return workflow


def step(job: dict, words: str) -> dict:
    (found,) = [s for s in job["steps"] if words in s.get("run", "") or words in s.get("uses", "")]
    return found


def test_the_workflow_replays_a_recording_gates_on_its_baseline_and_uploads_the_report():
    workflow = load()
    inputs = workflow["on"]["workflow_dispatch"]["inputs"]
    assert inputs["recording"]["default"] == "baselines/local"
    job = workflow["jobs"]["replay"]
    assert job["container"] == "debian:bookworm" and job["timeout-minutes"] <= 60
    assert job["env"]["RECORDING"] == "${{ inputs.recording || 'baselines/local' }}"
    assert step(job, "make setup")
    replay = shlex.split(step(job, "--policy replay")["run"])
    assert replay[:4] == [".venv/bin/pytest", "-n", "2", "suites/local"]
    options = dict(zip(replay[4::2], replay[5::2]))
    assert options == {"--policy": "replay", "--replay-from": "$RECORDING",
                       "--gate-baseline": "$RECORDING/summary.json", "--run-dir": "$RUN_DIR",
                       "--junitxml": "$RUN_DIR/junit.xml"}
    report = step(job, "webeval report")
    assert report["if"] == "always()" and shlex.split(report["run"])[:3] == [".venv/bin/webeval", "report", "$RUN_DIR"]
    upload = step(job, "actions/upload-artifact")
    assert upload["if"] == "always()" and upload["uses"].startswith("actions/upload-artifact@v4")
    uploaded = upload["with"]["path"].splitlines()
    for name in (FOLDER, SINGLE_FILE, "summary.json", "junit.xml"):
        assert "${{ env.RUN_DIR }}/" + name in uploaded
    assert WORKFLOW.name in (ROOT / "docs" / "pytest.md").read_text()


def test_the_workflows_pytest_command_is_accepted_as_written(tmp_path):
    recording = tmp_path / "recording"
    recording.mkdir()
    (recording / "summary.json").write_text(json.dumps({"score": 0.8}))
    command = step(load()["jobs"]["replay"], "--policy replay")["run"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(RECORDING=str(recording), RUN_DIR=str(tmp_path / "run"))
    # Collection only (no browser): every option parses, the baseline is read, the policy is set up.
    done = subprocess.run(["bash", "-c", command + " --collect-only -q -p no:cacheprovider"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "45 tests collected" in done.stdout
