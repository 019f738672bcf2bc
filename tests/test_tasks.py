"""Task files: rejected at collection with the file and line named; populations carry the sha256 of their source."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from webeval.tasks import (
    OracleStep, Population, StateCheck, Task, TaskFileError, VerifierSpec, population_of, read_jsonl, sha256_of,
)


def task_row(task_id: str = "Shop--0", **changes) -> dict:
    row = {
        "id": task_id,
        "site": "Shop",
        "goal": "Find the cheapest laptop.",
        "start_url": "http://offline.webeval.test/shop/",
    }
    row.update(changes)
    return {k: v for k, v in row.items() if v is not None}


def write(tmp_path: Path, *lines: str | dict, name: str = "tasks.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join((json.dumps(l) if isinstance(l, dict) else l) + "\n" for l in lines), encoding="utf-8")
    return path


def file_error(path: Path) -> str:
    with pytest.raises(TaskFileError) as info:
        read_jsonl(path)
    return str(info.value)


# --- a good file ------------------------------------------------------------------------------------------------

def test_good_file_is_read_in_order(tmp_path):
    full = task_row(
        "Shop--1",
        reference_answers=["Vantage 14 Slim"],
        verifier={"answer": ["$535", "$535.00"], "state": [{"path": "cart.items", "contains": [{"sku": "A"}]}]},
        rubric=[["fact a", "fact b"], ["fact c"]],
        solution=[{"do": "click", "selector": "#buy"}, {"do": "answer", "text": "$535"}],
        max_steps=15,
        tags=["info", "cart"],
    )
    path = write(tmp_path, task_row("Shop--0"), "", "   ", full, task_row("Flights--0", site="Flights"))
    tasks = read_jsonl(path)
    assert [t.id for t in tasks] == ["Shop--0", "Shop--1", "Flights--0"]
    assert all(isinstance(t, Task) for t in tasks)
    task = tasks[1]
    assert task.verifier.answer == ["$535", "$535.00"]
    assert task.verifier.state[0] == StateCheck(path="cart.items", contains=[{"sku": "A"}])
    assert task.solution == [OracleStep(do="click", selector="#buy"), OracleStep(do="answer", text="$535")]
    assert task.max_steps == 15 and task.tags == ["info", "cart"] and task.rubric == [["fact a", "fact b"], ["fact c"]]
    assert tasks[0].verifier is None and tasks[0].solution is None and tasks[0].tags == []


def test_to_task_maps_foreign_rows(tmp_path):
    path = write(tmp_path, {"web_name": "Allrecipes", "id": 3, "ques": "Find a recipe.", "web": "https://www.allrecipes.com/"})

    def to_task(row):
        return {"id": f"{row['web_name']}--{row['id']}", "site": row["web_name"], "goal": row["ques"],
                "start_url": row["web"]}

    (task,) = read_jsonl(path, to_task)
    assert task.id == "Allrecipes--3" and task.goal == "Find a recipe."


def test_to_task_key_error_names_file_and_line(tmp_path):
    path = write(tmp_path, {"x": 1}, {"y": 2})
    with pytest.raises(TaskFileError, match=rf"^{path}:1: "):
        read_jsonl(path, lambda row: {"id": row["y"]})


def test_tasks_are_frozen():
    task = Task(**task_row())
    with pytest.raises(ValidationError):
        task.goal = "something else"


# --- malformed files: the file and the line are named ----------------------------------------------------------

def test_bad_json_names_file_and_line(tmp_path):
    path = write(tmp_path, task_row("A--0"), "", '{"id": "A--1", "site": ', task_row("A--2"))
    message = file_error(path)
    assert message.startswith(f"{path}:3: invalid JSON")
    assert "column" in message


def test_row_that_is_not_an_object_is_rejected(tmp_path):
    path = write(tmp_path, task_row("A--0"), '["A--1"]')
    assert file_error(path) == f"{path}:2: a task must be a JSON object"


@pytest.mark.parametrize("field", ["id", "site", "goal", "start_url"])
def test_missing_field_names_file_line_and_field(tmp_path, field):
    row = task_row("A--1")
    del row[field]
    path = write(tmp_path, task_row("A--0"), row)
    assert file_error(path) == f"{path}:2: {field}: Field required"


def test_empty_goal_is_rejected(tmp_path):
    path = write(tmp_path, task_row(goal=""))
    assert file_error(path).startswith(f"{path}:1: goal: String should have at least 1 character")


def test_unknown_field_is_rejected(tmp_path):
    path = write(tmp_path, task_row(question="typo of goal"))
    assert file_error(path) == f"{path}:1: question: Extra inputs are not permitted"


def test_duplicate_id_names_both_lines(tmp_path):
    path = write(tmp_path, task_row("A--0"), task_row("A--1"), "", task_row("A--0", goal="again"))
    assert file_error(path) == f"{path}:4: duplicate task id 'A--0' (first on line 1)"


@pytest.mark.parametrize(
    "url", ["ftp://example.com/", "javascript:alert(1)", "file:///etc/passwd", "example.com/shop", "http:///x",
            "about:blank", ""],
)
def test_non_http_start_url_is_rejected(tmp_path, url):
    path = write(tmp_path, task_row("A--0"), task_row("A--1", start_url=url))
    assert file_error(path) == f"{path}:2: start_url: start_url {url!r} is not an http(s) URL"


@pytest.mark.parametrize("url", ["http://localhost:8000/", "https://www.example.com/a?b=c#d", "HTTP://EXAMPLE.COM/"])
def test_http_start_urls_are_accepted(tmp_path, url):
    (task,) = read_jsonl(write(tmp_path, task_row(start_url=url)))
    assert task.start_url == url


@pytest.mark.parametrize("task_id", ["../x", "a/b", "", "..", ".", ".hidden", "a..b", "a\\b", "a  b", "a ", " a", "-rf", "a\x00b"])
def test_unsafe_id_is_rejected(tmp_path, task_id):
    path = write(tmp_path, task_row(task_id))
    message = file_error(path)
    assert message.startswith(f"{path}:1: id: task id {task_id!r} is not a safe path segment")


@pytest.mark.parametrize("task_id", ["Shop--0", "allrecipes--12", "a.b_c-d", "X"])
def test_safe_ids_are_accepted(tmp_path, task_id):
    assert read_jsonl(write(tmp_path, task_row(task_id)))[0].id == task_id


@pytest.mark.parametrize("task_id", ["abc\n", "Shop--0\n"])
def test_id_with_a_trailing_newline_is_rejected(tmp_path, task_id):
    """`$` in SAFE_ID matches before a final newline: such an id is not a safe path segment (currently failing)."""
    path = write(tmp_path, task_row(task_id))
    assert file_error(path).startswith(f"{path}:1: id: task id")


def test_empty_file_is_rejected(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    assert file_error(path) == f"{path}: no tasks in file"


def test_blank_lines_only_file_is_rejected(tmp_path):
    path = write(tmp_path, "", "  ", "\t")
    assert file_error(path) == f"{path}: no tasks in file"


def test_missing_file_is_rejected(tmp_path):
    path = tmp_path / "nope.jsonl"
    assert file_error(path).startswith(f"{path}: cannot read task file")


@pytest.mark.parametrize(
    "step, missing",
    [
        ({"do": "click"}, "selector"),
        ({"do": "double_click"}, "selector"),
        ({"do": "type", "selector": "#q"}, "text"),
        ({"do": "key"}, "keys"),
        ({"do": "scroll"}, "direction"),
        ({"do": "navigate"}, "url"),
        ({"do": "answer"}, "text"),
    ],
)
def test_oracle_step_missing_its_field_is_rejected(tmp_path, step, missing):
    row = task_row(solution=[{"do": "click", "selector": "#ok"}, step])
    path = write(tmp_path, task_row("A--0"), row)
    assert file_error(path) == f"{path}:2: solution.1: oracle step {step['do']!r} needs {missing}"


def test_oracle_step_back_needs_nothing(tmp_path):
    (task,) = read_jsonl(write(tmp_path, task_row(solution=[{"do": "back"}])))
    assert task.solution[0].do == "back"


def test_unknown_oracle_step_is_rejected(tmp_path):
    path = write(tmp_path, task_row(solution=[{"do": "hover", "selector": "#x"}]))
    assert file_error(path).startswith(f"{path}:1: solution.0.do: Input should be")


@pytest.mark.parametrize("verifier", [{}, {"answer": []}, {"answer": None, "state": []}])
def test_verifier_with_neither_answer_nor_state_is_rejected(tmp_path, verifier):
    path = write(tmp_path, task_row(verifier=verifier))
    assert file_error(path) == f"{path}:1: verifier: a verifier needs 'answer' references or 'state' checks"


@pytest.mark.parametrize(
    "check",
    [{"path": "cart", "equals": [], "contains": []}, {"path": "cart", "equals": 1, "contains": {"a": 1}},
     {"path": "cart"}],
)
def test_state_check_needs_exactly_one_of_equals_or_contains(tmp_path, check):
    path = write(tmp_path, task_row(verifier={"state": [{"path": "ok", "equals": True}, check]}))
    assert file_error(path) == f"{path}:1: verifier.state.1: a state check needs exactly one of 'equals' or 'contains'"


@pytest.mark.parametrize("value", [False, 0, "", []])
def test_state_check_with_a_falsy_expectation_is_accepted(value):
    assert StateCheck(path="x", equals=value).equals == value
    assert StateCheck(path="x", contains=value).contains == value


def test_max_steps_must_be_positive(tmp_path):
    path = write(tmp_path, task_row(max_steps=0))
    assert file_error(path).startswith(f"{path}:1: max_steps: Input should be greater than or equal to 1")


def test_first_bad_line_is_reported(tmp_path):
    path = write(tmp_path, task_row("A--0"), task_row("A--1", start_url="ftp://x/"), "{bad")
    assert file_error(path).startswith(f"{path}:2: ")


def test_verifier_spec_direct():
    assert VerifierSpec(answer=["x"]).state == []
    with pytest.raises(ValidationError):
        VerifierSpec()


# --- populations -------------------------------------------------------------------------------------------------

def test_population_sha256_is_over_the_file_bytes(tmp_path):
    path = write(tmp_path, task_row("A--0"), task_row("A--1"), task_row("B--0"))
    tasks = read_jsonl(path)
    population = population_of("local", tasks, [path])
    assert population.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert population.ids == ("A--0", "A--1", "B--0")
    assert population.size == 3
    assert population.name == "local"
    assert population.sources == (str(path),)


def test_population_sha256_over_several_files_in_order(tmp_path):
    first = write(tmp_path, task_row("A--0"), name="a.jsonl")
    second = write(tmp_path, task_row("B--0"), name="b.jsonl")
    expected = hashlib.sha256(first.read_bytes() + second.read_bytes()).hexdigest()
    assert sha256_of([first, second]) == expected
    assert sha256_of([second, first]) != expected
    tasks = read_jsonl(first) + read_jsonl(second)
    population = population_of("two", tasks, [first, second])
    assert population.sha256 == expected and population.ids == ("A--0", "B--0")


def test_population_sha256_changes_with_one_byte(tmp_path):
    path = write(tmp_path, task_row("A--0"))
    before = sha256_of([path])
    path.write_bytes(path.read_bytes().replace(b"cheapest", b"cheapesT"))
    assert sha256_of([path]) != before


def test_population_round_trips_through_json():
    population = Population(name="p", ids=("a", "b"), sha256="0" * 64, sources=("x.jsonl",))
    assert Population.model_validate_json(population.model_dump_json()) == population


# --- with_origin -------------------------------------------------------------------------------------------------

def test_with_origin_moves_the_start_url():
    task = Task(**task_row(start_url="http://offline.webeval.test/shop/item?id=3"))
    moved = task.with_origin("http://offline.webeval.test", "http://127.0.0.1:40123")
    assert moved.start_url == "http://127.0.0.1:40123/shop/item?id=3"
    assert moved.id == task.id and moved.goal == task.goal
    assert task.start_url == "http://offline.webeval.test/shop/item?id=3"  # the original is unchanged


def test_with_origin_leaves_other_origins_alone():
    task = Task(**task_row(start_url="https://www.example.com/"))
    assert task.with_origin("http://offline.webeval.test", "http://127.0.0.1:1") is task


@pytest.mark.parametrize(
    "start_url, old",
    [("http://localhost:8000/a", "http://localhost:800"), ("http://shop.example.com/", "http://shop")],
)
def test_with_origin_matches_a_whole_origin_only(start_url, old):
    """'http://shop' is not the origin of 'http://shop.example.com/' (currently failing: prefix match)."""
    task = Task(**task_row(start_url=start_url))
    assert task.with_origin(old, "http://127.0.0.1:9").start_url == start_url
