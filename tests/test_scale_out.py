"""Shards on existing engines: `--shard auto` from a Kubernetes Indexed Job's or a CI matrix's variables, shards
merged into one run, and the manifests and workflow that docs/scale.md relies on."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
import yaml

from tests.conftest import ROOT, processes_with
from tests.runs import Run, records, summary, wait_for
from webeval.plugin.selection import auto_shard, in_shard

KUBERNETES = ROOT / "deploy" / "kubernetes"
WORKFLOW = ROOT / ".github" / "workflows" / "shards.yml"
DICTIONARY = [f"Dictionary--{n}" for n in range(9)]


@pytest.mark.parametrize("env, shard", [
    ({"JOB_COMPLETION_INDEX": "0", "WEBEVAL_SHARD_TOTAL": "3"}, "1/3"),
    ({"JOB_COMPLETION_INDEX": "2", "WEBEVAL_SHARD_TOTAL": "3"}, "3/3"),
    ({"WEBEVAL_SHARD_INDEX": "2", "WEBEVAL_SHARD_TOTAL": "4"}, "2/4"),
])
def test_auto_shard_reads_an_indexed_job_or_a_ci_matrix(env, shard):
    assert auto_shard(env) == shard


def test_three_auto_shards_of_an_indexed_job_merge_into_one_run(tmp_path):
    shards = [tmp_path / f"shard-{index}" for index in range(3)]
    jobs = [Run(["-p", "no:xdist", "suites/local", "-k", "Dictionary", "--shard", "auto", "--run-dir", str(folder)],
                folder, env={"JOB_COMPLETION_INDEX": str(index), "WEBEVAL_SHARD_TOTAL": "3"})
            for index, folder in enumerate(shards)]
    # A task the oracle got wrong is a valid (failed) result: what is under test is who ran what.
    statuses = [job.wait(timeout=600) for job in jobs]
    assert set(statuses) <= {0, 1}, "\n".join(job.output[-1500:] for job in jobs)
    assert {r["outcome"] for folder in shards for r in records(folder)} <= {"passed", "failed"}
    ran = [{r["task_id"] for r in records(folder)} for folder in shards]
    assert ran == [{t for t in DICTIONARY if in_shard(t, (k, 3))} for k in (1, 2, 3)]  # each its own share

    merged = tmp_path / "merged"
    done = subprocess.run([sys.executable, "-m", "webeval.cli", "merge", *map(str, shards), "--out", str(merged)],
                          capture_output=True, text=True, cwd=ROOT)
    total = summary(merged)
    assert (total["n"], total["passed"] + total["failed"], total["masked"], total["duplicates"]) == (45, 9, {}, []), \
        done.stdout + done.stderr
    assert {r["task_id"] for r in records(merged)} == set(DICTIONARY)


@pytest.mark.parametrize("env", [{}, {"JOB_COMPLETION_INDEX": "0"}, {"WEBEVAL_SHARD_INDEX": "1"}])
def test_auto_shard_without_its_variables_is_a_usage_error(tmp_path, env):
    run_dir = tmp_path / "run"
    clean = {"JOB_COMPLETION_INDEX": "", "WEBEVAL_SHARD_INDEX": "", "WEBEVAL_SHARD_TOTAL": "", **env}
    job = Run(["-p", "no:xdist", "suites/local", "-k", "Shop--1", "--shard", "auto", "--run-dir", str(run_dir)],
              run_dir, env=clean)
    assert job.wait(timeout=120) == 4, job.output[-2000:]
    assert "ERROR: --shard auto: set WEBEVAL_SHARD_TOTAL and either JOB_COMPLETION_INDEX" in job.output
    assert not (run_dir / "results.jsonl").exists()


def _manifest(name: str) -> dict:
    return yaml.safe_load((KUBERNETES / name).read_text())


def test_the_indexed_job_shards_by_completion_index_onto_the_shared_volume():
    job = _manifest("shards.yaml")
    spec = job["spec"]
    assert (job["apiVersion"], job["kind"], spec["completionMode"]) == ("batch/v1", "Job", "Indexed")
    (container,) = spec["template"]["spec"]["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["WEBEVAL_SHARD_TOTAL"] == str(spec["completions"])  # --shard auto's N is the Job's completions
    script = container["args"][0]
    assert "--shard auto" in script and "/runs/$RUN_NAME/shard-$JOB_COMPLETION_INDEX" in script
    assert {m["name"]: m["mountPath"] for m in container["volumeMounts"]}["runs"] == "/runs"
    volumes = {v["name"]: v for v in spec["template"]["spec"]["volumes"]}
    claim = _manifest("volume.yaml")
    assert volumes["runs"]["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    (rule,) = spec["podFailurePolicy"]["rules"]
    assert rule["action"] == "FailJob" and rule["onExitCodes"]["values"] == [3, 4]  # misconfigured: no retry


def test_the_merge_job_merges_every_shard_of_the_run():
    job = _manifest("merge.yaml")
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert "webeval merge /runs/$RUN_NAME/shard-* --out /runs/$RUN_NAME/merged" in container["args"][0]
    assert job["spec"]["template"]["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] == "webeval-runs"


def test_the_workflow_runs_a_matrix_of_auto_shards_and_merges_them():
    workflow = yaml.safe_load(WORKFLOW.read_text())
    shard, merge = workflow["jobs"]["shard"], workflow["jobs"]["merge"]
    assert shard["strategy"]["matrix"]["shard"] == [1, 2, 3, 4] and shard["strategy"]["fail-fast"] is False
    assert shard["env"]["WEBEVAL_SHARD_INDEX"] == "${{ matrix.shard }}"
    assert shard["env"]["WEBEVAL_SHARD_TOTAL"] == "${{ strategy.job-total }}"
    assert any("--shard auto" in step.get("run", "") for step in shard["steps"])
    assert merge["needs"] == "shard" and merge["if"] == "always()"
    assert any("webeval merge runs/shard-*" in step.get("run", "") for step in merge["steps"])


def test_an_evicted_shard_pod_passes_sigterm_to_pytest_and_exits_12(tmp_path):
    """The pod's own script, run as its shell runs it, with the shared volume in a temporary folder: SIGTERM to the
    shell (the container's first process, as an eviction sends it) reaches pytest, the tasks in flight end as
    interrupted, and the pod exits 12 (retried: the next pod resumes the shard)."""
    (container,) = _manifest("shards.yaml")["spec"]["template"]["spec"]["containers"]
    script = container["args"][0].replace("/runs/", f"{tmp_path}/runs/")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(WEBEVAL_SHARD_TOTAL="9", JOB_COMPLETION_INDEX="0", RUN_NAME="evicted", SUITE="suites/local",
               WORKERS="2", WEBEVAL_TEST_RUN=f"evicted-{os.getpid()}")
    shell = subprocess.Popen(["/bin/sh", "-c", script], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    shard = tmp_path / "runs" / "evicted" / "shard-0"
    wait_for(lambda: list(shard.glob("tasks/*/attempt-1/step-002.png")), timeout=180, what="a task's second step")
    shell.send_signal(signal.SIGTERM)
    output, _ = shell.communicate(timeout=60)
    assert shell.returncode == 12, output[-3000:]
    assert "webeval: exit 12: stopped by SIGTERM; " in output
    outcomes = {json.loads(line)["outcome"] for line in (shard / "results.jsonl").read_text().splitlines()}
    assert outcomes <= {"passed", "infra_error"} and "infra_error" in outcomes, outcomes
    wait_for(lambda: not processes_with(f"WEBEVAL_TEST_RUN={env['WEBEVAL_TEST_RUN']}"), timeout=30,
             what="every process of the pod to end")
