"""`--preset nemo`: NeMo Gym's WebVoyager run on its terms. Without the population's bytes (this machine has none),
`prepare` and a session say where they come from and stop with one line; a stand-in under the pin's name is refused;
a file pinned by the test is accepted. Options that contradict the preset are one line. A session on the preset (over
a population the test pinned under nemo-552's name) runs at 1920x1080, gives the model NeMo Gym's tool names, counts
an unreadable verdict as a failure, and says in its header and summary that it is on the seed's terms."""

from __future__ import annotations

import argparse
import base64
import io
import json
from datetime import date
from pathlib import Path

import pytest
from PIL import Image

from fixtures.openai_stub import OpenAIStub, Reply, call, text
from tests.webvoyager_data import pytest_run, records, webvoyager_rows
from webeval.benchmarks.local.site_server import SiteServer, load_sites
from webeval.benchmarks.webvoyager.tasks import PinnedFile, PopulationPin, load_population
from webeval.cli import main
from webeval.cli.prepare import prepare_population
from webeval.tasks.population import sha256_of

NEMO_URL = ("https://raw.githubusercontent.com/jayl940712/webarena_benchmarks/"
            "6a2977939b157b0ab9de7799bb089c721f1ac115/webvoyager.jsonl")
TERMS = ("preset nemo: NeMo Gym's WebVoyager run, on the seed's terms: population nemo-552, screen 1920x1080, tools "
         "computer, navigate, tab, terminate, a judge reply with no readable verdict fails")


@pytest.fixture
def stand_in(tmp_path) -> Path:
    """A folder holding a file under the nemo-552 pin's name that is not its bytes."""
    folder = tmp_path / "stand-in"
    folder.mkdir()
    webvoyager_rows(folder / "webvoyager.jsonl", [("Allrecipes--0", "Find a lasagna.", "https://www.allrecipes.com/")])
    return folder


def test_a_session_on_the_preset_without_the_population_says_where_it_comes_from(tmp_path):
    result = pytest_run(["suites/webvoyager", "--preset", "nemo", "--run-dir", str(tmp_path / "run")],
                        env={"WEBEVAL_CACHE": str(tmp_path / "cache")})
    assert result.returncode == 4
    assert result.stderr.strip() == (
        "ERROR: population 'nemo-552' is not prepared: `webeval prepare webvoyager --population nemo-552` downloads "
        "it (jayl940712/webarena_benchmarks@6a29779 webvoyager.jsonl, sha256 f635a9b27fa1, from "
        f"{NEMO_URL}); or pass --data-dir DIR (or set $WEBEVAL_DATA_DIR) with a copy")
    assert not (tmp_path / "run").exists()


def test_prepare_that_cannot_download_says_where_the_bytes_come_from(tmp_path, capsys):
    closed = "http://127.0.0.1:9"  # a mirror that is not there: as a machine with no route to GitHub
    assert main(["prepare", "webvoyager", "--population", "nemo-552", "--cache-dir", str(tmp_path / "cache"),
                 "--mirror", closed, "--timeout", "5"]) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error
    assert error.startswith(f"webeval prepare: error: {closed}/jayl940712/webarena_benchmarks/6a2977939b157b0ab9de7799"
                            "bb089c721f1ac115/webvoyager.jsonl: ")
    assert error.endswith("; this machine cannot download webvoyager.jsonl (jayl940712/webarena_benchmarks@6a29779 "
                          "webvoyager.jsonl, sha256 f635a9b27fa1980a63b39bbf64ae8e9e766159cb70fa765451d3d3c0b948ff98):"
                          " fetch it where that URL is reachable and pass the folder holding it with --from DIR (it is "
                          "sha256 checked)")
    assert not (tmp_path / "cache" / "nemo-552").exists()  # nothing that looks prepared


def test_a_stand_in_under_the_pins_name_is_refused_by_prepare_and_by_a_session(stand_in, tmp_path, capsys):
    assert main(["prepare", "webvoyager", "--population", "nemo-552", "--cache-dir", str(tmp_path / "cache"),
                 "--from", str(stand_in)]) == 2
    actual = sha256_of([stand_in / "webvoyager.jsonl"])
    assert capsys.readouterr().err.strip() == (
        f"webeval prepare: error: jayl940712/webarena_benchmarks@6a29779 webvoyager.jsonl: sha256 {actual} does not "
        "match the pin f635a9b27fa1980a63b39bbf64ae8e9e766159cb70fa765451d3d3c0b948ff98; not stored")
    assert not (tmp_path / "cache" / "nemo-552").exists()
    result = pytest_run(["suites/webvoyager", "--preset", "nemo", "--data-dir", str(stand_in), "--run-dir",
                         str(tmp_path / "run")])
    assert result.returncode == 4
    assert result.stderr.strip() == (
        f"ERROR: {stand_in / 'webvoyager.jsonl'}: sha256 {actual} does not match the pin of population 'nemo-552' "
        "(jayl940712/webarena_benchmarks@6a29779 webvoyager.jsonl: "
        "f635a9b27fa1980a63b39bbf64ae8e9e766159cb70fa765451d3d3c0b948ff98)")


def test_a_file_pinned_by_the_test_is_prepared_and_read(stand_in, tmp_path, capsys):
    pin = PopulationPin("stand-in", 1, (PinnedFile("test/stand-in", "0" * 40, "webvoyager.jsonl",
                                                   sha256_of([stand_in / "webvoyager.jsonl"]), role="tasks"),))
    args = argparse.Namespace(source=stand_in, mirror="http://127.0.0.1:9", timeout=5.0)
    folder = prepare_population(pin, tmp_path / "cache", args)
    assert capsys.readouterr().out.splitlines()[-1] == f"population stand-in (1 tasks) is ready in {folder}"
    population, tasks = load_population(pin, folder, date(2031, 3, 15))
    assert population.ids == ("Allrecipes--0",) and tasks[0].goal == "Find a lasagna."


@pytest.mark.parametrize("args, dropped", [
    (["--screen", "1280x720"], "--screen 1280x720"),
    (["--judge-unparseable", "mask", "--population", "original"], "--population original, --judge-unparseable mask"),
    (["--policy-tool-names", "tabs=tabs_create"], "--policy-tool-names tabs=tabs_create"),
])
def test_an_option_that_contradicts_the_preset_is_one_line(tmp_path, args, dropped):
    result = pytest_run(["suites/webvoyager", "--preset", "nemo", *args, "--run-dir", str(tmp_path / "run")])
    assert result.returncode == 4
    assert result.stderr.strip() == (
        "ERROR: --preset nemo sets --population nemo-552, --screen 1920x1080, --judge-unparseable fail, "
        f"--policy-tool-names tabs=tab: drop {dropped}, or leave out --preset")


def pinned_as_nemo(tmp_path: Path, origin: str) -> tuple[Path, Path]:
    """A one-task population the test pins under nemo-552's name, and the pins file the fixture suite reads."""
    data = tmp_path / "data"
    data.mkdir()
    tasks = webvoyager_rows(data / "webvoyager.jsonl", [("Allrecipes--0", "Which lasagna recipe is shown?",
                                                         "https://www.allrecipes.com/")])
    pins = {"nemo-552": {"size": 1, "files": [{"role": "tasks", "repo": "test/pinned-as-nemo", "commit": "0" * 40,
                                                "path": "webvoyager.jsonl", "sha256": sha256_of([tasks])}]}}
    pins_file = tmp_path / "pins.json"
    pins_file.write_text(json.dumps(pins))
    return data, pins_file


def image_size(request: dict) -> tuple[int, int]:
    url = [p for m in request["messages"] if isinstance(m["content"], list) for p in m["content"]
           if p.get("type") == "image_url"][-1]["image_url"]["url"]
    return Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).size


def test_a_session_on_the_preset_runs_on_the_seeds_terms_and_says_so(tmp_path):
    sites = SiteServer(load_sites()).start()
    data, pins = pinned_as_nemo(tmp_path, sites.origin)
    opened = f"{sites.origin}/recipes/"
    agent_script = [call("tab", {"action": "new", "url": opened}),
                    call("terminate", {"status": "success", "answer": "Spinach Lasagna"})]
    run_dir = tmp_path / "run"
    try:
        with OpenAIStub(agent_script, models=("agent",)) as agent, \
                OpenAIStub([text("I am not sure what the page shows.")], models=("judge",)) as judge:
            result = pytest_run([
                "fixtures/suites/pinned_webvoyager", "--preset", "nemo", "--data-dir", str(data), "--run-dir",
                str(run_dir), "--site-map", f"Allrecipes={opened}", "--policy", "openai", "--policy-base-url",
                agent.base_url, "--policy-model", "agent", "--judge-base-url", judge.base_url, "--judge-model",
                "judge", "-p", "no:xdist"], env={"WEBEVAL_TEST_PINS": str(pins), "OPENAI_API_KEY": "k"})
            requests = list(agent.requests)
    finally:
        sites.stop()
    output = result.stdout + result.stderr
    assert result.returncode == 1, output  # the one task failed: the judge's reply had no verdict
    assert TERMS in output.split("collected")[0]  # the header
    assert [tool["function"]["name"] for tool in requests[0]["tools"]] == ["computer", "navigate", "tab", "terminate"]
    assert image_size(requests[0]) == (1920, 1080) and "(1920x1080 pixels)" in requests[0]["messages"][0]["content"]
    seen = requests[1]["messages"][-1]["content"][0]["text"]
    assert "Tabs: [0]" in seen and "[1] " in seen and "(active)" in seen  # the model's `tab` opened a second tab
    (record,) = records(run_dir)
    assert (record["outcome"], record["failure_class"]) == ("failed", "judge_unparseable")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["conditions"]["preset"] == TERMS.removeprefix("preset ")
    assert summary["conditions"]["screen"] == "1920x1080"
    assert summary["conventions"]["judge_unparseable"] == "fail"
    assert (summary["failed"], summary["complete"]) == (1, True)
    assert f"  {TERMS}" in output.split("webeval summary")[1]
    assert json.loads((run_dir / "webvoyager.json").read_text())["preset"] == "nemo"
