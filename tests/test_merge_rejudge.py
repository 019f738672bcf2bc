"""A WebVoyager run made in two shards, two epochs each, while its judge was down (every attempt judge_failed):
`webeval merge` keeps what judging it again needs (webvoyager.json, its conventions), so `webeval reverify` of the
merged run judges its evidence with no browser like an unmerged run's, and the epochs' pass@k is there after it."""

from __future__ import annotations

import json

import pytest

from fixtures.openai_stub import OpenAIStub, call, error, text
from tests.webvoyager_data import pytest_run, records, webvoyager_rows
from webeval.benchmarks.local.site_server import SiteServer, load_sites
from webeval.cli import main
from webeval.outcomes.epochs import epoch_id
from webeval.plugin.selection import in_shard


def two_shard_ids() -> list[str]:
    """Two task ids whose four epoch attempts fall into both of two shards."""
    for n in range(50):
        ids = [f"Allrecipes--{n}", f"Allrecipes--{n + 1}"]
        attempts = [epoch_id(i, k) for i in ids for k in (1, 2)]
        if {in_shard(a, (1, 2)) for a in attempts} == {True, False}:
            return ids
    raise AssertionError("no such ids")


@pytest.fixture
def sites():
    server = SiteServer(load_sites()).start()
    yield server
    server.stop()


def test_a_merged_webvoyager_run_is_rejudged_like_an_unmerged_one(sites, tmp_path, capsys):
    ids = two_shard_ids()
    tasks = webvoyager_rows(tmp_path / "tasks.jsonl", [(i, f"Which recipe is shown ({i})?",
                                                        "https://www.allrecipes.com/") for i in ids])
    answer = call("terminate", {"status": "success", "answer": "Spinach Lasagna"})
    with OpenAIStub([answer], models=("agent",)) as agent, \
            OpenAIStub([error(503, "the judge is down")], models=("judge",)) as judge:
        for k in (1, 2):
            shard = pytest_run(["suites/webvoyager", "--tasks-file", str(tasks), "--run-dir", str(tmp_path / f"s{k}"),
                                "--shard", f"{k}/2", "--epochs", "2", "--today", "2031-03-15",
                                "--site-map", f"Allrecipes={sites.origin}/recipes/", "--policy", "openai",
                                "--policy-base-url", agent.base_url, "--policy-model", "agent", "--judge-base-url",
                                judge.base_url, "--judge-model", "judge", "--judge-retries", "0", "-p", "no:xdist",
                                "--allow-incomplete", "-q"], env={"OPENAI_API_KEY": "k"})
            assert shard.returncode == 0, shard.stdout + shard.stderr
        assert main(["merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "--out", str(tmp_path / "m")]) == 1
        merged = tmp_path / "m"
        assert {r["outcome"] for r in records(merged)} == {"judge_failed"} and len(records(merged)) == 4
        assert json.loads((merged / "webvoyager.json").read_text()) == \
            json.loads((tmp_path / "s1" / "webvoyager.json").read_text())
        assert json.loads((merged / "conventions.json").read_text()) == {"judge_unparseable": "mask", "epochs": "2"}
        assert json.loads((merged / "summary.json").read_text())["epochs"]["epochs"] == 2
        judge.script = [text(json.dumps({"reasoning": "The page shows it.", "verdict": "SUCCESS"}))]
        capsys.readouterr()
        assert main(["reverify", str(merged), "--judge-base-url", judge.base_url]) == 0
    output = capsys.readouterr().out
    assert output.startswith("re-judged 4 of 4 tasks; 0 kept as they were")
    summary = json.loads((merged / "summary.json").read_text())
    assert (summary["passed"], summary["complete"]) == (4, True)
    assert summary["epochs"]["pass@k"] == {"1": 1.0, "2": 1.0} and summary["epochs"]["pass^k"]["2"] == 1.0
    assert "epochs 2 over 2 tasks: mean pass@1 100.0%" in output
    assert not (merged / ".writer.lease").exists()  # the re-judge held the run and gave it back
    assert len(json.loads((merged / "conditions.json").read_text())["first"]) > 5
