"""WebVoyager task files: rows to tasks, the pinned populations and their hashes, date templates."""

from __future__ import annotations

import json
import shutil
from datetime import date
from pathlib import Path

import pytest

from tests.webvoyager_data import DATA, ORIGINAL, MAINTAINED, need_data
from webeval.tasks import TaskFileError
from webeval.tasks.dates import render
from webeval.benchmarks.webvoyager.tasks import (
    POPULATIONS, PinMismatch, load_file, load_population, read_references, read_tasks, task_id,
)


def write_rows(path: Path, *rows: dict | str) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def row(raw_id: str = "Allrecipes--0", **changes) -> dict:
    base = {"web_name": raw_id.split("--")[0], "id": raw_id, "ques": "Find a lasagna.",
            "web": "https://www.allrecipes.com/"}
    base.update(changes)
    return {k: v for k, v in base.items() if v is not None}


# --- the pinned populations -------------------------------------------------------------------------------------

@need_data
def test_original_population_is_643_tasks_pinned_by_sha256():
    population, tasks = load_population("original", ORIGINAL, date(2026, 1, 1))
    assert population.size == 643 == len(tasks)
    assert population.sha256 == POPULATIONS["original"].file("tasks").sha256
    assert tasks[0].id == "Allrecipes--0" and tasks[0].site == "Allrecipes"
    assert tasks[0].start_url == "https://www.allrecipes.com/"
    assert {t.site for t in tasks} >= {"Allrecipes", "BBC News", "Google Flights", "Wolfram Alpha"}
    assert len({t.site for t in tasks}) == 15
    # golden reference answers only ("possible" ones are examples): 143 of them
    assert sum(1 for t in tasks if t.reference_answers) == 143
    by_id = {t.id: t for t in tasks}
    assert by_id["Allrecipes--3"].reference_answers == [
        "'Vegan Chocolate Chip, Oatmeal, and Nut Cookies', 4.9 star, 67 viewers (> 60)"]
    assert by_id["Allrecipes--0"].reference_answers is None
    # the original is verbatim: its dates stay as written
    assert "December 25-26" in by_id["Booking--0"].goal


@need_data
def test_ids_are_kept_as_in_the_data_spaces_included():
    _, tasks = load_population("original", ORIGINAL, date(2026, 1, 1))
    by_id = {t.id: t for t in tasks}
    assert "BBC News--0" in by_id and by_id["BBC News--0"].site == "BBC News"
    assert task_id(" Cambridge Dictionary--12 ") == "Cambridge Dictionary--12"


@need_data
def test_maintained_population_renders_its_dates_exactly_as_its_own_generator_did():
    """Rendered against the file's own date_used, every templated question is the file's question, byte for byte."""
    used = date.fromisoformat(
        dict(line.split("=", 1) for line in (MAINTAINED / "update_time.txt").read_text().split())["date_used"])
    population, tasks = load_population("maintained-595", MAINTAINED, used)
    rows = {task_id(json.loads(line)["id"]): json.loads(line)["ques"]
            for line in (MAINTAINED / "webvoyager.jsonl").read_text().splitlines()}
    assert population.size == 595
    rendered = [t for t in tasks if "date-rendered" in t.tags]
    assert len(rendered) == 79
    assert [t.id for t in tasks if t.goal != rows[t.id]] == []


@need_data
def test_maintained_population_asks_about_the_future_of_today():
    today = date(2031, 3, 15)
    _, tasks = load_population("maintained-595", MAINTAINED, today)
    by_id = {t.id: t for t in tasks}
    assert by_id["Booking--0"].goal == "Find a Mexico hotel with deals for April 14-16"
    # the 41st template of the file: start dates are spread in file order (index 40 -> slot 10, 30 days later)
    assert by_id["Google Flights--1"].goal == \
        "Show me the list of one-way flights on May 29, 2031 from Chicago to Paris."
    rendered = [t.goal for t in tasks if "date-rendered" in t.tags]
    assert len(rendered) == 79 and not any("2026" in goal for goal in rendered)


@need_data
def test_a_population_file_with_another_hash_is_an_error_never_a_fallback(tmp_path):
    copy = tmp_path / "data"
    shutil.copytree(ORIGINAL, copy)
    path = copy / "WebVoyager_data.jsonl"
    path.write_bytes(path.read_bytes().replace(b"vegetarian lasagna", b"vegan lasagna", 1))
    with pytest.raises(PinMismatch) as info:
        load_population("original", copy, date(2026, 1, 1))
    message = str(info.value)
    assert message.startswith(f"{path}: sha256 ")
    assert "does not match the pin of population 'original'" in message
    assert POPULATIONS["original"].file("tasks").sha256 in message


@need_data
def test_a_tampered_reference_file_is_an_error_too(tmp_path):
    copy = tmp_path / "data"
    shutil.copytree(ORIGINAL, copy)
    (copy / "reference_answer.json").write_text("{}")
    with pytest.raises(PinMismatch, match="reference_answer.json: sha256"):
        load_population("original", copy, date(2026, 1, 1))


def test_a_missing_population_file_is_named(tmp_path):
    with pytest.raises(TaskFileError,
                       match=r"no WebVoyager_data.jsonl \(the tasks file of MinorJerry/WebVoyager@5a78967"):
        load_population("original", tmp_path, date(2026, 1, 1))


def test_an_unknown_population_is_named(tmp_path):
    with pytest.raises(TaskFileError, match="population 'webarena' is unknown: use one of original, maintained-595"):
        load_population("webarena", tmp_path, date(2026, 1, 1))


@need_data
def test_gaia_web_rows_read_with_their_final_answers():
    _, tasks = load_file(ORIGINAL / "GAIA_web.jsonl", date(2026, 1, 1))
    assert len(tasks) == 90
    assert tasks[0].id == "level1-0" and tasks[0].reference_answers == ["17"] and tasks[0].site == "google.com"


# --- task files of one's own --------------------------------------------------------------------------------------

def test_a_task_file_in_webvoyager_format(tmp_path):
    path = write_rows(tmp_path / "mine.jsonl", row("Allrecipes--0"), row("Cambridge Dictionary--1",
                      web="https://dictionary.cambridge.org/"))
    population, tasks = load_file(path, date(2026, 1, 1))
    assert population.name == "webvoyager-file-mine" and population.ids == ("Allrecipes--0", "Cambridge Dictionary--1")
    assert tasks[1].site == "Cambridge Dictionary"


@pytest.mark.parametrize("bad, message", [
    ('{"web_name": "A", "id": "A--0", "ques": "q", "web": "https://a.test/"', "invalid JSON"),
    (json.dumps(row(ques=None)), "missing field 'ques'"),
    (json.dumps(row(web=None)), "missing field 'web'"),
    (json.dumps(row(id=None)), "missing field 'id'"),
    (json.dumps(row(ques="  ")), "field 'ques' must be non-empty text"),
    (json.dumps(row(web="ftp://www.allrecipes.com/")), "start_url 'ftp://www.allrecipes.com/' is not an http(s) URL"),
    (json.dumps(row("../etc--1")), "is not a safe path segment"),
    (json.dumps(row("Allrecipes--0")), "duplicate task id 'Allrecipes--0' (first on line 1)"),
    (json.dumps(["a list"]), "a task must be a JSON object"),
    (json.dumps({"web_name": "B", "id": "B--1", "ques_template": "on {date}", "render": {"date": "month_day"},
                 "web": "https://b.test/"}), "a template row needs 'date_policy'"),
    (json.dumps({"web_name": "B", "id": "B--1", "ques_template": "on {date}", "render": {"date": "month_day"},
                 "date_policy": {"type": "moon_landing"}, "web": "https://b.test/"}),
     "date_policy type 'moon_landing' is unknown"),
    (json.dumps({"web_name": "B", "id": "B--1", "ques_template": "on {date}", "render": {"date": "fortnight"},
                 "date_policy": {"type": "one_way_flight", "min_days_from_today": 45}, "web": "https://b.test/"}),
     "render format 'fortnight' of slot {date} is unknown"),
    (json.dumps({"web_name": "B", "id": "B--1", "ques_template": "on {date} and {other}",
                 "render": {"date": "month_day"},
                 "date_policy": {"type": "one_way_flight", "min_days_from_today": 45}, "web": "https://b.test/"}),
     "ques_template slot {other} has no format in render"),
    (json.dumps({"web_name": "B", "id": "B--1", "ques_template": "on {date}", "render": {"date": "month_day"},
                 "date_policy": {"type": "hotel_stay", "min_days_from_today": 30}, "web": "https://b.test/"}),
     "date_policy.duration_days must be a whole number of days >= 0, not None"),
])
def test_a_malformed_task_file_names_the_file_and_line(tmp_path, bad, message):
    path = write_rows(tmp_path / "tasks.jsonl", row("Allrecipes--0"), bad)
    with pytest.raises(TaskFileError) as info:
        read_tasks(path, date(2026, 1, 1))
    assert str(info.value).startswith(f"{path}:2: ")
    assert message in str(info.value)


def test_a_broken_reference_file_is_named(tmp_path):
    path = tmp_path / "reference_answer.json"
    path.write_text('{"Allrecipes": {"answers": [{"id": 0}]}}')
    with pytest.raises(TaskFileError, match=f"{path}: not a WebVoyager reference answer file"):
        read_references(path)


# --- date templates ---------------------------------------------------------------------------------------------

HOTEL = {"type": "hotel_stay", "min_days_from_today": 30, "duration_days": 3}


@pytest.mark.parametrize("fmt, expected", [
    ("month_day_range", "January 31-February 3"),
    ("month_day_range_year", "January 31-February 3, 2027"),
    ("ordinal_month_day_range", "January 31st - February 3rd"),
    ("month_day_to_day", "January 31 to February 3"),
    ("month_day_to_day_year", "January 31, 2027 to February 3, 2027"),
    ("numeric_dmy_range", "31/01/2027 - 03/02/2027"),
    ("sentence_range_year", "January 31, 2027, to February 3, 2027"),
    ("between_ordinal_range_year", "January 31st, 2027, and February 3rd, 2027"),
    ("day_month_range_year", "31 January to 3 February 2027"),
])
def test_range_formats(fmt, expected):
    assert render("{dates}", HOTEL, {"dates": fmt}, date(2027, 1, 1), 0) == expected


def test_single_formats_and_return_dates():
    policy = {"type": "round_trip_flight", "min_days_from_today": 45, "duration_days": 7}
    text = render("{a}|{b}|{c}|{d}|{e}|{f}|{g}", policy,
                  {"a": "month_day", "b": "month_day_year", "c": "month_day_ordinal", "d": "month_day_ordinal_year",
                   "e": "day_month_year", "f": "abbr_month_day", "g": "end_month_day_year"}, date(2027, 1, 1), 0)
    assert text == "February 15|February 15, 2027|February 15th|February 15th, 2027|15 February 2027|Feb. 15|" \
                   "February 22, 2027"


def test_templated_tasks_are_spread_over_thirty_start_dates_three_days_apart():
    policy = {"type": "one_way_flight", "min_days_from_today": 45}
    days = [render("{d}", policy, {"d": "month_day_year"}, date(2027, 1, 1), i) for i in (0, 1, 29, 30)]
    assert days == ["February 15, 2027", "February 18, 2027", "May 13, 2027", "February 15, 2027"]


def test_a_year_boundary_inside_a_range():
    policy = {"type": "hotel_stay", "min_days_from_today": 30, "duration_days": 4}
    assert render("{d}", policy, {"d": "month_day_range_year"}, date(2027, 11, 30), 0) == \
        "December 30, 2027-January 3, 2028"
    assert render("{d}", policy, {"d": "day_month_range_year"}, date(2027, 11, 30), 0) == \
        "30 December 2027 to 3 January 2028"


def test_ordinals():
    policy = {"type": "one_way_flight", "min_days_from_today": 0}
    days = [render("{d}", policy, {"d": "month_day_ordinal"}, date(2027, 1, n), 0) for n in (1, 2, 3, 4, 11, 12, 13,
                                                                                               21, 22, 23, 31)]
    assert [d.split()[1] for d in days] == ["1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd",
                                            "23rd", "31st"]


def test_template_rows_in_a_task_file_render_against_today(tmp_path):
    template = {"web_name": "Booking", "id": "Booking--0", "ques_template": "A hotel for {dates}.",
                "date_policy": HOTEL, "render": {"dates": "month_day_range"}, "web": "https://www.booking.com/"}
    path = write_rows(tmp_path / "t.jsonl", template, {**template, "id": "Booking--1"})
    tasks = read_tasks(path, date(2027, 1, 1))
    assert [t.goal for t in tasks] == ["A hotel for January 31-February 3.", "A hotel for February 3-6."]
    assert tasks[0].tags == ["date-rendered"]


def test_data_folder_is_where_the_tests_expect_it():
    """The task files are a local stand-in for the download; tests that need them skip without them."""
    assert isinstance(DATA, Path)
