"""The report as a reviewer sees it: a real run of three local tasks, `webeval report`, the report served over http
and read in headless Chromium. It must show all N tasks of the population (the unrun ones as skipped), a task's
steps with their screenshots, and the score's trend across two runs. Screenshots of the report are kept in the run
directory (report-overview.png, -tree, -task, -trend), under reports/test-artifacts/."""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from playwright.async_api import Page, async_playwright

from webeval.report.pictures import CLICKED
from webeval.runtime.browser import find_chromium

ROOT = Path(__file__).resolve().parents[1]
RAN = {"Shop--3", "News--0", "Recipes--2"}
N = 45  # the local population


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args) -> None:
        pass


@pytest.fixture
def serve():
    servers = []

    def start(folder: Path) -> str:
        server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder)))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_port}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def webeval(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(Path(sys.executable).with_name("webeval")), *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def artifacts_folder() -> Path:
    """reports/test-artifacts/<this test>/<time>-<pid>: kept after the session (pytest's tmp folders are recycled
    by the next sessions), the latest few only."""
    parent = ROOT / "reports" / "test-artifacts" / Path(__file__).stem
    parent.mkdir(parents=True, exist_ok=True)
    for old in sorted(parent.iterdir())[:-4]:
        shutil.rmtree(old, ignore_errors=True)
    folder = parent / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    folder.mkdir()
    return folder


@pytest.fixture(scope="module")
def reported() -> Path:
    """A run of three tasks with its report; an earlier run (interrupted before any result) in the same history."""
    base = artifacts_folder()
    run_dir, earlier, history = base / "run", base / "earlier", base / "history.jsonl"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_XDIST_WORKER", "PYTEST_CURRENT_TEST")}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "suites/local", "-k", " or ".join(sorted(RAN)),
         "--run-dir", str(run_dir), "-p", "no:randomly", "-p", "no:cacheprovider", "-q"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    records = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines() if line.strip()]
    assert {r["task_id"]: r["outcome"] for r in records} == dict.fromkeys(RAN, "passed"), done.stdout[-3000:]

    earlier.mkdir()
    shutil.copy(run_dir / "population.json", earlier / "population.json")
    for folder in (earlier, run_dir):
        built = webeval("report", str(folder), "--history", str(history), "--single-file")
        assert built.returncode == 0, built.stderr
    assert f"report: {run_dir / 'report' / 'index.html'}" in built.stdout
    assert "history: " in built.stdout and "(2 runs)" in built.stdout
    assert re.search(r"single file: .*report\.html \(\d+\.\d MB: every screenshot in it again\)", built.stdout)

    # Built again: nothing is doubled (the same files, the same bytes stored), and the history still has two runs.
    before = stored(run_dir)
    again = webeval("report", str(run_dir), "--history", str(history), "--single-file")
    assert again.returncode == 0 and "(2 runs)" in again.stdout, again.stderr
    assert stored(run_dir) == before
    return run_dir


def stored(run_dir: Path) -> tuple[int, int]:
    """(files, bytes stored) of the results and the report folder, each inode counted once, as `du` counts."""
    seen, files, size = set(), 0, 0
    for folder in (run_dir / "allure-results", run_dir / "report", run_dir / "tasks"):
        for path in folder.rglob("*"):
            if path.is_file():
                files += 1
                status = path.stat()
                if status.st_ino not in seen:
                    seen.add(status.st_ino)
                    size += status.st_blocks * 512
    return files, size


def test_screenshots_are_stored_once_the_results_and_the_report_link_them(reported):
    """Each step's screenshot is one inode: the attempt's file, linked from the Allure results and the report."""
    shots = sorted((reported / "tasks").rglob("step-*.png"))
    assert shots
    report_files = [path for path in (reported / "report").rglob("*.png")]
    for shot in shots:
        assert shot.stat().st_nlink == 3, f"{shot}: {shot.stat().st_nlink} names, not the attempt's, the results' " \
                                          "and the report's"
    by_inode = {path.stat().st_ino for path in report_files}
    assert {shot.stat().st_ino for shot in shots} <= by_inode


async def open_tree(page: Page) -> None:
    """Expand the population, then every site."""
    await page.get_by_test_id("tree-section").first.hover()
    await page.get_by_test_id("tree-subtree-toggle").first.click()
    sites = page.get_by_test_id("tree-section-title")
    await sites.nth(5).wait_for()  # the population and its five sites
    for index in range(1, await sites.count()):
        await sites.nth(index).click()
    await page.get_by_test_id("tree-leaf").nth(N - 1).wait_for()


async def test_the_report_shows_every_task_with_its_status_steps_screenshots_and_trend(reported, serve):
    run_dir = reported
    base = serve(run_dir)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=find_chromium(None), headless=True)
        try:
            page = await browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(120_000)  # a loaded machine: the report's 2.7 MB app takes its time
            await page.goto(f"{base}/report/index.html")
            await page.get_by_test_id("tree-section").first.wait_for()
            total = page.get_by_test_id("metadata-item-total")
            assert (await total.get_by_test_id("metadata-value").inner_text()).strip() == str(N)
            metadata = await page.get_by_test_id("metadata-list").inner_text()
            assert "score" in metadata and "3/45 = 6.7%" in metadata
            await page.screenshot(path=str(run_dir / "report-overview.png"))

            await open_tree(page)
            assert await page.get_by_test_id("tree-leaf").count() == N
            assert await page.get_by_test_id("tree-leaf-status-skipped").count() == N - len(RAN)
            passed = page.get_by_test_id("tree-leaf").filter(has=page.get_by_test_id("tree-leaf-status-passed"))
            titles = await passed.get_by_test_id("tree-leaf-title").all_inner_texts()
            assert set(titles) == RAN
            await page.screenshot(path=str(run_dir / "report-tree.png"))

            await page.get_by_test_id("tree-leaf-title").filter(has_text="News--0").click()
            await page.get_by_test_id("test-result-step-title").first.wait_for()  # the result renders after the click
            steps = await page.get_by_test_id("test-result-step-title").all_inner_texts()
            assert steps[0].startswith("1. click (") and steps[-1].startswith("3. terminate success: ")
            step = page.get_by_test_id("test-result-step").first
            await step.get_by_test_id("test-result-step-header").click()
            await step.get_by_text("screenshot", exact=True).click()  # a hard link to the attempt's file: shown whole
            shot = step.locator("img").first
            await shot.wait_for()
            await shot.scroll_into_view_if_needed()
            await page.wait_for_function("img => img.complete && img.naturalWidth === 1280",
                                         arg=await shot.element_handle())
            await step.get_by_text(CLICKED, exact=True).click()
            marks = step.locator("img").nth(1)
            await marks.wait_for()
            await page.wait_for_function("img => img.complete && img.naturalWidth === 480",
                                         arg=await marks.element_handle())
            await marks.scroll_into_view_if_needed()
            await page.screenshot(path=str(run_dir / "report-task.png"))

            await page.goto(f"{base}/report/index.html#charts")
            dynamics = page.locator("[data-drop-shadow]").filter(has=page.get_by_text("Status dynamics", exact=True))
            ticks = dynamics.locator('svg text[transform*="rotate(45)"]')
            await ticks.first.wait_for()
            assert await ticks.count() == 2  # the earlier run and this one
            assert "Latest" in await ticks.all_text_contents()
            await dynamics.scroll_into_view_if_needed()
            await page.screenshot(path=str(run_dir / "report-trend.png"))

            await page.goto(f"{base}/report.html")  # the single file shows the same report
            total = page.get_by_test_id("metadata-item-total")
            await total.wait_for()
            assert (await total.get_by_test_id("metadata-value").inner_text()).strip() == str(N)
        finally:
            await browser.close()
    print(f"report screenshots: {run_dir}/report-*.png")
