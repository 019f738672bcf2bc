"""Building the HTML report with Allure 3 (the npm package `allure`), offline: a folder, and on request a single file.

The folder's attachments are hard links to the results' files (webeval.report.links): Allure copies each screenshot
into the report, and the copy is replaced by a link to the file it copied, so the report stores no screenshot again.
The single file cannot link anything: every screenshot is in it again, base64 (a third larger), so it is built only
when asked for (`webeval report --single-file`), and its size is said.

History: Allure 3 keeps it as a JSONL file, one data point per report. Ours holds one point per run: a report built
again for the same run replaces that run's point, so the score's trend counts each run once.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from webeval.report.categories import CATEGORIES
from webeval.report.compared import COMPARISON_CATEGORIES
from webeval.report.links import fingerprints, stored_once

ALLURE_ENV = "WEBEVAL_ALLURE"
LOCAL_INSTALL = Path(".tools/allure/node_modules/.bin/allure")  # where `make setup` installs it
FOLDER = "report"
SINGLE_FILE = "report.html"
# The Allure 3 templates load Google Analytics; a report built offline for reviewers does not phone home.
_ANALYTICS = re.compile(
    r'<script async src="https://www\.googletagmanager\.com/[^"]*"></script>\s*<script>[\s\S]*?</script>')


class ReportError(Exception):
    """The report cannot be built; the message is one line for the user."""


@dataclass(frozen=True)
class Built:
    folder: Path  # index.html with its data beside it
    single_file: Path | None
    history: Path | None
    linked_bytes: int = 0  # what the folder's attachments would have stored again, were they not links


def find_allure(start: Path | None = None) -> Path:
    """$WEBEVAL_ALLURE, else the project-local install found from `start` (default: cwd) or the webeval checkout."""
    explicit = os.environ.get(ALLURE_ENV)
    if explicit:
        path = Path(explicit)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise ReportError(f"${ALLURE_ENV}={explicit} is not an executable file")
        return path
    here = Path(start or Path.cwd()).absolute()
    for root in dict.fromkeys([here, *here.parents, Path(__file__).resolve().parents[2]]):
        candidate = root / LOCAL_INSTALL
        if candidate.is_file():
            return candidate
    raise ReportError(f"Allure 3 is not installed: run `make setup` (it installs the npm package `allure` into "
                      f"{LOCAL_INSTALL.parents[2]}), or set ${ALLURE_ENV} to an Allure 3 binary")


def _forget_run(history: Path, name: str) -> None:
    """Drop this run's earlier point, so that building its report again does not count the run twice."""
    if not history.is_file():
        return
    kept = []
    for number, line in enumerate(history.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            point = json.loads(line)
        except ValueError:
            point = None
        if not isinstance(point, dict):  # Allure would stop on it with a stack trace
            raise ReportError(f"{history}:{number}: not an Allure history point (invalid JSON); "
                              "remove the line, or pass --history with another file")
        if point.get("name") != name:
            kept.append(line)
    aside = history.with_name(history.name + ".tmp")
    aside.write_text("".join(f"{line}\n" for line in kept), encoding="utf-8")
    aside.replace(history)


def _config(name: str, output: Path, history: Path | None, single_file: bool = False) -> dict:
    plugins: dict = {
        "awesome": {"options": {"reportName": name, "singleFile": False}},
        "agent": {"enabled": False},  # Allure's output for coding agents: nothing a reviewer opens
    }
    if single_file:
        plugins["single"] = {"import": "@allurereport/plugin-awesome",
                             "options": {"reportName": name, "singleFile": True}}
    config: dict = {
        "name": name,
        "output": str(output),
        "plugins": plugins,
        "categories": {"rules": [{k: v for k, v in c.items() if k != "description"}
                                 for c in [*COMPARISON_CATEGORIES, *CATEGORIES]]},
    }
    if history is not None:
        config["historyPath"] = str(history)
    return config


def _reason(output: str) -> str:
    """The line of Allure's output that says what went wrong: its error, not Node's version banner."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if re.match(r"^(\w*Error|error)\b", line)]
    return (errors or lines or ["no output"])[0]


def strip_analytics(html: Path) -> None:
    text = html.read_text(encoding="utf-8")
    cleaned = _ANALYTICS.sub("", text)
    if cleaned != text:
        html.write_text(cleaned, encoding="utf-8")


def build(results: Path, output: Path, name: str, history: Path | None, allure: Path,
          timeout_s: float = 600.0, single_file: bool = False) -> Built:
    """Generate the report from `results` into `output/report/` (and `output/report.html` with `single_file`)."""
    # Allure runs in a scratch folder and resolves relative paths from there: every path it gets is absolute.
    output, results = output.absolute(), results.absolute()
    history = history.absolute() if history is not None else None
    output.mkdir(parents=True, exist_ok=True)
    if history is not None:
        history.parent.mkdir(parents=True, exist_ok=True)
        _forget_run(history, name)
    target_folder, target_single = output / FOLDER, output / SINGLE_FILE
    with tempfile.TemporaryDirectory(prefix=".allure-build-", dir=output) as scratch:
        generated = _generate(Path(scratch), results, _config(name, Path(scratch) / "out", history, single_file),
                              allure, timeout_s)
        if target_folder.exists():
            shutil.rmtree(target_folder)
        shutil.move(str(_folder_of(generated)), target_folder)
        if single_file:
            shutil.move(str(generated / "single" / "index.html"), target_single)
    if not single_file:
        target_single.unlink(missing_ok=True)  # an earlier build's would show an older state of the run
    for html in (target_folder / "index.html", *([target_single] if single_file else [])):
        strip_analytics(html)
    _, saved = stored_once(target_folder, fingerprints(results))
    return Built(folder=target_folder, single_file=target_single if single_file else None, history=history,
                 linked_bytes=saved)


def _generate(work: Path, results: Path, config: dict, allure: Path, timeout_s: float) -> Path:
    """`allure generate` in `work`; the folder its plugins wrote into."""
    (work / "allurerc.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    env = {**os.environ, "ALLURE_NO_ANALYTICS": "true", "NO_COLOR": "1"}
    try:
        done = subprocess.run([str(allure), "generate", "--config", "allurerc.json", str(results)],
                              cwd=work, env=env, capture_output=True, text=True, timeout=timeout_s,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise ReportError(f"allure generate took longer than {timeout_s:.0f} s") from None
    except OSError as exc:
        raise ReportError(f"cannot run {allure}: {exc.strerror}") from None
    generated = Path(config["output"])
    wanted = [_folder_of(generated) / "index.html"] + (
        [generated / "single" / "index.html"] if "single" in config["plugins"] else [])
    if done.returncode != 0 or not all(path.is_file() for path in wanted):
        raise ReportError(f"allure generate failed (exit {done.returncode}): {_reason(done.stderr + done.stdout)}")
    return generated


def _folder_of(generated: Path) -> Path:
    """Where the awesome plugin wrote the report folder: its own subfolder when another plugin writes beside it (the
    single file), else the output folder itself."""
    return generated / "awesome" if (generated / "awesome" / "index.html").is_file() else generated
