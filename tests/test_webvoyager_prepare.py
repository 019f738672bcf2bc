"""`webeval prepare webvoyager`: pinned files downloaded (here from a local mirror of raw.githubusercontent.com),
sha256 checked, stored in the cache the suite reads; a mismatch is an error and nothing is stored."""

from __future__ import annotations

import functools
import shutil
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.webvoyager_data import MAINTAINED, ORIGINAL, need_data, parsed
from webeval.cli import main
from webeval.benchmarks.webvoyager.settings import build
from webeval.benchmarks.webvoyager.tasks import POPULATIONS


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def mirror(tmp_path):
    """A raw-file mirror: MIRROR/OWNER/REPO/COMMIT/PATH, holding the local copies of the pinned files."""
    root = tmp_path / "mirror"
    for name, folder in (("original", ORIGINAL), ("maintained-595", MAINTAINED)):
        for pin in POPULATIONS[name].files:
            target = root / pin.repo / pin.commit / pin.path
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(folder / pin.name, target)
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@need_data
def test_prepare_downloads_checks_and_stores_a_population(mirror, tmp_path, capsys):
    _, url = mirror
    cache = tmp_path / "cache"
    assert main(["prepare", "webvoyager", "--population", "maintained-595", "--cache-dir", str(cache),
                 "--mirror", url]) == 0
    out = capsys.readouterr().out
    assert "webvoyager.jsonl: sha256 67ed53f057d3 ok" in out
    assert "webvoyager.template.jsonl: sha256 5bcc746efa51 ok" in out
    assert "population maintained-595 (595 tasks) is ready" in out
    stored = cache / "maintained-595" / "webvoyager.jsonl"
    assert stored.read_bytes() == (MAINTAINED / "webvoyager.jsonl").read_bytes()
    assert main(["prepare", "webvoyager", "--population", "maintained-595", "--cache-dir", str(cache),
                 "--mirror", "http://127.0.0.1:9"]) == 0  # already there: nothing is fetched again
    assert "already prepared" in capsys.readouterr().out


@need_data
def test_a_download_with_another_hash_is_an_error_and_is_not_stored(mirror, tmp_path, capsys):
    root, url = mirror
    pin = POPULATIONS["original"].file("tasks")
    served = root / pin.repo / pin.commit / pin.path
    served.write_bytes(served.read_bytes().replace(b"lasagna", b"lasagne", 1))
    cache = tmp_path / "cache"
    assert main(["prepare", "webvoyager", "--population", "original", "--cache-dir", str(cache), "--mirror", url]) == 2
    err = capsys.readouterr().err
    assert err.startswith("webeval prepare: error: MinorJerry/WebVoyager@5a78967 data/WebVoyager_data.jsonl: sha256 ")
    assert f"does not match the pin {pin.sha256}; not stored" in err
    assert not (cache / "original").exists()  # nothing prepared: no folder that looks prepared


@need_data
def test_prepare_from_a_local_folder_and_the_suite_reads_the_cache(tmp_path, capsys, monkeypatch):
    cache = tmp_path / "cache"
    assert main(["prepare", "webvoyager", "--population", "original", "--cache-dir", str(cache),
                 "--from", str(ORIGINAL)]) == 0
    monkeypatch.setenv("WEBEVAL_CACHE", str(cache))
    monkeypatch.delenv("WEBEVAL_DATA_DIR", raising=False)
    setup = build(parsed(["--population", "original"]))
    assert setup.population.size == 643 and setup.population.sources[0].startswith(str(cache / "original"))


def test_a_missing_mirror_file_is_named(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["prepare", "webvoyager", "--population", "nemo-552", "--cache-dir", str(tmp_path / "c"),
                 "--from", str(empty)]) == 2
    assert f"{empty}: no webvoyager.jsonl (jayl940712/webarena_benchmarks@6a29779 webvoyager.jsonl)" in \
        capsys.readouterr().err


def test_an_unreachable_mirror_is_an_error(tmp_path, capsys):
    assert main(["prepare", "webvoyager", "--cache-dir", str(tmp_path / "c"), "--mirror", "http://127.0.0.1:9",
                 "--timeout", "5"]) == 2
    assert "webeval prepare: error: http://127.0.0.1:9/MinorJerry/WebVoyager/" in capsys.readouterr().err
