"""`pytest suites/webvoyager` as a user runs it: collection of the pinned populations, the honest offline run,
site checks, and every bad option or file stopping the session with one line."""

from __future__ import annotations

import json
import shutil
import threading
from types import SimpleNamespace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.webvoyager_data import (
    MAINTAINED, ORIGINAL, need_data, offline_env, parsed, pytest_config, pytest_run, records, webvoyager_rows,
)
from webeval.agent.live import LiveSites, blocked_steps
from webeval.benchmarks.webvoyager import SiteChecks, plugin
from webeval.benchmarks.webvoyager.settings import build
from webeval.flags import OptionError
from webeval.outcomes.redact import redact
from webeval.runtime.sites import SiteProxy, blocked_page, unreachable
from webeval.tasks import Task

SUITE = "suites/webvoyager"


@need_data
def test_the_original_population_collects_643_tests_with_the_datas_ids(tmp_path):
    result = pytest_run([SUITE, "--population", "original", "--collect-only", "-q", "--run-dir", str(tmp_path / "run")],
                        env={"WEBEVAL_DATA_DIR": str(ORIGINAL)})  # the data folder from the environment
    assert result.returncode == 0, result.stdout + result.stderr
    ids = [line for line in result.stdout.splitlines() if "::test_task[" in line]
    assert len(ids) == 643
    assert ids[0].endswith("test_task[Allrecipes--0]") and ids[-1].endswith("test_task[Wolfram Alpha--45]")
    assert "643 tests collected" in result.stdout


@need_data
def test_maintained_renders_its_dates_against_today_and_records_them(tmp_path):
    setup = build(parsed(["--population", "maintained-595", "--data-dir", str(MAINTAINED), "--today", "2030-02-01"]))
    assert setup.population.name == "webvoyager-maintained-595" and setup.population.size == 595
    config = setup.run_config()
    assert config["today"] == "2030-02-01" and config["population"] == "maintained-595"
    assert len(config["date_rendered"]) == 79
    goals = {t.id: t.goal for t in setup.tasks}
    assert goals["Booking--0"] == "Find a Mexico hotel with deals for March 3-5"


@need_data
def test_an_offline_run_of_the_original_population_is_643_preconditions_and_incomplete(tmp_path):
    run_dir = tmp_path / "run"
    result = pytest_run([SUITE, "--population", "original", "--data-dir", str(ORIGINAL), "--run-dir", str(run_dir),
                         "--site-timeout", "5", "-q"], env=offline_env())
    output = result.stdout + result.stderr
    assert "643 skipped" in output and "failed" not in output.split("webeval summary")[-1].split("\n")[-2]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (summary["n"], summary["passed"], summary["failed"], summary["complete"]) == (643, 0, 0, False)
    assert summary["masked"] == {"not_run[site_unreachable]": 643}
    assert "INCOMPLETE, 0 of 643 completed" in output
    found = records(run_dir)
    assert len(found) == 643 and {r["outcome"] for r in found} == {"not_run"}
    assert all(r["reason"].startswith("precondition[site_unreachable]: https://") for r in found)
    assert not (run_dir / "tasks").exists() or not any((run_dir / "tasks").iterdir())  # no episode ever started


@need_data
def test_a_population_hash_mismatch_stops_the_session(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(ORIGINAL, data)
    path = data / "WebVoyager_data.jsonl"
    path.write_bytes(path.read_bytes() + b"\n")
    result = pytest_run([SUITE, "--population", "original", "--data-dir", str(data), "--run-dir",
                         str(tmp_path / "run")])
    assert result.returncode == 4
    assert f"ERROR: {path}: sha256 " in result.stderr
    assert "does not match the pin of population 'original' (MinorJerry/WebVoyager@5a78967" in result.stderr
    assert "passed" not in result.stdout and "skipped" not in result.stdout


def test_a_malformed_task_file_stops_the_session_naming_file_and_line(tmp_path):
    path = webvoyager_rows(tmp_path / "tasks.jsonl", [("Allrecipes--0", "Find pie.", "https://www.allrecipes.com/")])
    path.write_text(path.read_text() + '\n{"web_name": "Allrecipes", "id": "Allrecipes--1", "web": "https://a.test/"}')
    with pytest.raises(OptionError) as info:
        build(parsed(["--tasks-file", str(path)]))
    assert str(info.value) == f"{path}:2: missing field 'ques'"


@pytest.mark.parametrize("args, message", [
    (["--population", "webarena"], "--population 'webarena' is unknown: use one of original, maintained-595, nemo-552"),
    (["--population", "nemo-552"], "population 'nemo-552' is not prepared: `webeval prepare webvoyager --population "
                                   "nemo-552` downloads it (jayl940712/webarena_benchmarks@6a29779 webvoyager.jsonl, "
                                   "sha256 f635a9b27fa1, from https://raw.githubusercontent.com/jayl940712/"
                                   "webarena_benchmarks/6a2977939b157b0ab9de7799bb089c721f1ac115/webvoyager.jsonl); "
                                   "or pass --data-dir DIR"),
    (["--preset", "nemo", "--population", "original"], "--preset nemo sets --population nemo-552, --screen "
                                                       "1920x1080, --judge-unparseable fail, --policy-tool-names "
                                                       "tabs=tab: drop --population original, or leave out --preset"),
    (["--preset", "nemo", "--tasks-file", "TASKS"], "drop --tasks-file "),
    (["--preset", "nemo"], "population 'nemo-552' is not prepared"),
    (["--tasks-file", "TASKS", "--population", "original"], "--population and --tasks-file are alternatives"),
    (["--tasks-file", "TASKS", "--today", "tomorrow"], "--today 'tomorrow': expected a date YYYY-MM-DD"),
    (["--tasks-file", "TASKS", "--site-map", "Allrecipes"], "--site-map 'Allrecipes': expected NAME=VALUE"),
    (["--tasks-file", "TASKS", "--site-map", "Allrecipez=http://127.0.0.1:9/"],
     "--site-map 'Allrecipez': no task is on that site (sites: Allrecipes)"),
    (["--tasks-file", "TASKS", "--site-proxy", "Allrecipes=http://user:pw@proxy.test:3128"],
     "a proxy URL must not hold credentials"),
    (["--tasks-file", "TASKS", "--site-proxy", "Allrecipes=ftp://proxy.test"],
     "is not a http://, https:// or socks5://"),
    (["--tasks-file", "TASKS", "--site-proxy", "*=http://proxy.test:3128", "--site-proxy-auth", "*=NO_SUCH_PROXY_VAR"],
     "proxy credentials variable $NO_SUCH_PROXY_VAR is not set to 'user:password'"),
    (["--tasks-file", "TASKS", "--site-proxy-auth", "Allrecipes=X"], "no --site-proxy for 'Allrecipes'"),
    (["--tasks-file", "TASKS", "--judge", "gpt"], "--judge 'gpt': use model, reference, or both"),
    (["--tasks-file", "TASKS", "--judge-base-url", "http://127.0.0.1:9/v1", "--judge-model", "m",
      "--judge-api-key-env", "NO_SUCH_JUDGE_KEY"], "the judge's API key variable $NO_SUCH_JUDGE_KEY is not set"),
    (["--tasks-file", "TASKS", "--judge-profile", "nope"], "--judge-profile 'nope' is unknown"),
    (["--tasks-file", "TASKS", "--rejudge", "NOWHERE"], "--rejudge NOWHERE: not a run directory (no population.json)"),
    (["--tasks-file", "TASKS", "--block-budget", "0"], "--block-budget must be at least 1"),
    (["--tasks-file", "TASKS", "--judge-screenshots", "-1"], "--judge-screenshots must not be negative"),
    (["--tasks-file", "TASKS", "--judge-temperature", "warm"],
     "--judge-temperature 'warm': expected a number or 'none'"),
])
def test_bad_options_stop_the_session_with_one_line(tmp_path, monkeypatch, args, message):
    tasks = webvoyager_rows(tmp_path / "tasks.jsonl", [("Allrecipes--0", "Find pie.", "https://www.allrecipes.com/")])
    args = [str(tasks) if a == "TASKS" else str(tmp_path / a) if a == "NOWHERE" else a for a in args]
    message = message.replace("NOWHERE", str(tmp_path / "NOWHERE"))
    monkeypatch.setenv("WEBEVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("WEBEVAL_DATA_DIR", raising=False)
    with pytest.raises(OptionError) as info:
        build(parsed(args))
    assert message in str(info.value)
    assert "\n" not in str(info.value) and "pw" not in str(info.value)


def test_an_unreachable_judge_stops_the_session_before_any_task(tmp_path):
    tasks = webvoyager_rows(tmp_path / "tasks.jsonl", [("Allrecipes--0", "Find pie.", "https://www.allrecipes.com/")])
    config = pytest_config(["--tasks-file", str(tasks), "--judge-base-url", "http://127.0.0.1:9/v1", "--judge-model",
                            "m"])
    plugin.configure(config)
    stop = "webeval: the judge endpoint http://127.0.0.1:9/v1 is unreachable"
    with pytest.raises(pytest.exit.Exception, match=stop) as info:
        plugin.pytest_sessionstart(SimpleNamespace(config=config))
    assert info.value.returncode == 3


# --- site checks, proxies and bot walls (the pieces, with real servers) ----------------------------------------

class _Counting(BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self):
        type(self).hits.append(self.path)
        self.send_response(503 if "down" in self.path else 200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def counting_site():
    _Counting.hits = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Counting)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_each_start_url_is_checked_once_per_session(counting_site):
    tasks = [Task(id=f"Shop--{i}", site="Shop", goal="g", start_url="https://shop.invalid/") for i in range(5)]
    checks = SiteChecks(LiveSites({"Shop": counting_site + "/shop/"}), timeout_s=5)
    assert [checks.problem(t) for t in tasks] == [None] * 5
    assert _Counting.hits == ["/shop/"]


def test_any_http_answer_is_reachable_but_no_answer_is_not(counting_site):
    assert unreachable(counting_site + "/down") is None  # a 503 is the episode's to meet, not a missing site
    with ThreadingHTTPServer(("127.0.0.1", 0), _Counting) as closed:
        port = closed.server_address[1]
    assert "is unreachable: ConnectionRefusedError" in unreachable(f"http://127.0.0.1:{port}/", timeout_s=5)
    assert "is unreachable" in unreachable("http://name.invalid/", timeout_s=5)


class _Proxy(BaseHTTPRequestHandler):
    """A forward proxy that wants Basic credentials and sends every request to one upstream origin."""

    upstream = ""
    expected = ""

    def do_GET(self):
        if self.headers.get("Proxy-Authorization") != self.expected:
            self.send_response(407)
            self.send_header("Proxy-Authenticate", 'Basic realm="test"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


def test_a_site_is_checked_through_its_proxy_and_the_credentials_never_show():
    import base64

    password = "pr0xy-5ecret"
    _Proxy.expected = "Basic " + base64.b64encode(f"alice:{password}".encode()).decode()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Proxy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        good = SiteProxy.parse(url, "PROXY_AUTH", {"PROXY_AUTH": f"alice:{password}"})
        # the site's name resolves nowhere: only the proxy can reach it
        assert unreachable("http://allrecipes.webeval.invalid/", 5, good) is None
        bad = SiteProxy.parse(url, "PROXY_AUTH", {"PROXY_AUTH": "alice:wrong-" + password})
        problem = unreachable("http://allrecipes.webeval.invalid/", 5, bad)
        assert "the proxy refused its credentials (HTTP 407)" in problem and password not in problem
        assert good.playwright() == {"server": url, "username": "alice", "password": password}
        assert password not in good.describe() and "$PROXY_AUTH" in good.describe()
        env = LiveSites({}, {"*": good})
        prepared = env.prepare(Task(id="Allrecipes--0", site="Allrecipes", goal="g", start_url="https://a.test/"))
        assert prepared.proxy == good.playwright()
    finally:
        server.shutdown()
        server.server_close()
    assert redact(f"x {password} y") == "x *** y"  # declared a secret as the proxy's settings were read


@pytest.mark.parametrize("title, url, blocked", [
    ("Just a moment...", "https://www.booking.com/", True),
    ("Attention Required! | Cloudflare", "https://www.espn.com/", True),
    ("Amazon.com", "https://www.amazon.com/errors/validateCaptcha", True),
    ("", "https://www.google.com/sorry/index?continue=x", True),
    ("Robot Check", "https://www.amazon.com/", True),
    ("Vegetarian Lasagna Recipes", "https://www.allrecipes.com/recipes/", False),
    ("Google Flights", "https://www.google.com/travel/flights", False),
])
def test_bot_walls_are_recognised(title, url, blocked):
    assert (blocked_page(title, url) is not None) is blocked


def test_a_task_is_blocked_only_after_its_budget_in_a_row():
    def blocked(titles, budget):
        return blocked_steps(titles, ["https://x.test/"] * len(titles), budget)

    wall, page = "Just a moment...", "Results"
    assert blocked([wall, wall, page, wall, wall], 3) is None
    assert "3 steps in a row (budget 3)" in blocked([page, wall, wall, wall], 3)
    assert blocked([wall], 1) is not None
