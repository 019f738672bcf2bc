"""`webeval import agentlab`: experiment folders as BrowserGym's experiment loop writes them (summary_info.json,
screenshot_step_<i>.png, step_<i>.pkl.gz, exp_args.pkl, goal_object.pkl.gz), written here with classes of the same
modules and names as BrowserGym's, pickled as its loop pickles them. The importer reads the pickles as data: it never
imports a module they name, and never runs what they would call."""

from __future__ import annotations

import gzip
import json
import pickle
import shutil
import sys
import types
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fixtures.openai_stub import OpenAIStub, text
from tests.webvoyager_data import ORIGINAL, need_data, records
from webeval.cli import main
from webeval.interop import inert_pickle
from webeval.interop.imported import Unreadable
from webeval.outcomes.evidence import Evidence

SHOTS = ORIGINAL / "results-examples" / "taskHuggingface--3"  # real screenshots of a real agent
GOAL = "Find the cc-by-sa-4.0 model with the most likes on Hugging Face."

pytestmark = need_data


@dataclass
class EnvArgs:
    task_name: str
    task_seed: int = None
    max_steps: int = None
    headless: bool = True


@dataclass
class GenericAgentArgs:
    agent_name: str = None


@dataclass
class ExpArgs:
    agent_args: GenericAgentArgs
    env_args: EnvArgs
    exp_dir: str = None
    exp_name: str = None


@dataclass
class AgentInfo:
    think: str = None
    chat_messages: list = None
    stats: dict = field(default_factory=dict)


@dataclass
class StepTimestamps:
    env_start: float = 0
    env_stop: float = 0


@dataclass
class StepInfo:
    step: int = None
    obs: dict = None
    reward: float = 0
    raw_reward: float = 0
    terminated: bool = None
    truncated: bool = None
    action: str = None
    agent_info: AgentInfo = field(default_factory=AgentInfo)
    stats: dict = None
    profiling: StepTimestamps = field(default_factory=StepTimestamps)
    task_info: dict = None


MODULES = {"browsergym.experiments.loop": (EnvArgs, ExpArgs, StepInfo, StepTimestamps),
           "browsergym.experiments.agent": (AgentInfo,),
           "agentlab.agents.generic_agent.generic_agent": (GenericAgentArgs,)}


@contextmanager
def browsergym_names():
    """BrowserGym's and AgentLab's module names, long enough to pickle objects under them; gone afterwards."""
    names = {".".join(name.split(".")[:depth]) for name in MODULES for depth in range(1, name.count(".") + 2)}
    saved = {name: sys.modules.get(name) for name in names}
    for name in sorted(names):
        sys.modules[name] = types.ModuleType(name)
    for name, classes in MODULES.items():
        for cls in classes:
            cls.__module__ = name
            setattr(sys.modules[name], cls.__name__, cls)
    try:
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def write_experiment(root: Path, task: str, seed: int, actions: list[str], reward: float = 1.0,
                     err_msg: str | None = None, exp_args: bool = True, goal_object: bool = True) -> Path:
    folder = root / f"2025-01-02_10-00-00_GenericAgent-gpt-4o_on_{task}_{seed}"
    folder.mkdir(parents=True)
    with browsergym_names():
        if exp_args:
            args = ExpArgs(GenericAgentArgs("GenericAgent-gpt-4o"), EnvArgs(task, seed, 15), str(folder), folder.name)
            (folder / "exp_args.pkl").write_bytes(pickle.dumps(args))
        if goal_object:
            with gzip.open(folder / "goal_object.pkl.gz", "wb") as out:
                pickle.dump([{"type": "text", "text": GOAL}], out)
        for i, action in enumerate([*actions, None]):  # the last step: the observation after the last action
            obs = {"url": f"https://huggingface.co/models?step={i}", "goal": "" if goal_object else GOAL,
                   "goal_object": None, "last_action": actions[i - 1] if i else "",
                   "open_pages_urls": [f"https://huggingface.co/models?step={i}"],
                   "active_page_index": np.asarray([0]), "elapsed_time": np.asarray([1.5 * i])}
            step = StepInfo(step=i, obs=obs, action=action, terminated=action is None, truncated=False,
                            agent_info=AgentInfo(think=f"think {i}" if action else None, chat_messages=[]),
                            reward=reward if action is None else 0)
            with gzip.open(folder / f"step_{i}.pkl.gz", "wb") as out:
                pickle.dump(step, out)
            shutil.copy(SHOTS / f"screenshot{i + 1}.png", folder / f"screenshot_step_{i}.png")
    (folder / "summary_info.json").write_text(json.dumps({
        "n_steps": len(actions), "cum_reward": reward, "cum_raw_reward": 0, "err_msg": err_msg,
        "stack_trace": "Traceback ..." if err_msg else None, "stats.cum_steps": len(actions) + 1,
        "terminated": True, "truncated": False}))
    (folder / "experiment.log").write_text("INFO - Running experiment\n")
    (folder / "package_versions.txt").write_text("browsergym==0.14.0\n")
    return folder


ANSWERED = ['fill("a12", "cc-by-sa-4.0")', 'click("b7")', 'send_msg_to_user("replit/replit-code-v1-3b, 703 likes")']


def import_from(source: Path, out: Path) -> int:
    return main(["import", "agentlab", str(source), "--out", str(out)])


def test_experiments_import_with_their_goal_actions_answer_and_reward(tmp_path, capsys):
    study = tmp_path / "study"
    write_experiment(study, "webarena.310", 0, ANSWERED)
    write_experiment(study / "more", "webarena.311", 7, ['click("b7")'], reward=0.0, exp_args=False,
                     goal_object=False)
    run = tmp_path / "run"
    assert "browsergym" not in sys.modules
    assert import_from(study, run) == 0
    assert "browsergym" not in sys.modules and "agentlab" not in sys.modules  # nothing they name was imported
    assert capsys.readouterr().out.splitlines()[-1] == \
        f"webeval import agentlab: imported 2 of 2 folders into {run}, skipped 0"
    one = json.loads((run / "tasks/webarena.310--0/attempt-1/evidence.json").read_text())
    assert one["goal"] == GOAL and one["answer"] == "replit/replit-code-v1-3b, 703 likes"
    assert [a["text"] for a in one["actions"]] == ANSWERED and one["actions"][-1]["tool"] == "terminate"
    assert [a.get("thought") for a in one["actions"]] == ["think 0", "think 1", "think 2"]
    assert one["screenshots"] == [f"screenshot_step_{i}.png" for i in range(4)]
    assert one["urls"][3] == "https://huggingface.co/models?step=3" and one["lacks"] == ["titles"]
    details = one["imported"]["details"]
    assert (details["task_name"], details["seed"], details["agent"], details["cum_reward"]) == \
        ("webarena.310", 0, "GenericAgent-gpt-4o", 1.0)
    assert one["imported"]["not_read"] == ["experiment.log", "package_versions.txt"]
    # no exp_args.pkl and no goal object: the folder's name gives the task, a step's observation its text
    two = json.loads((run / "tasks/webarena.311--7/attempt-1/evidence.json").read_text())
    assert two["goal"] == GOAL and two["answer"] is None and "answer" in two["lacks"]
    labels = [json.loads(line) for line in (run / "labels.jsonl").read_text().splitlines()]
    assert labels == [{"task_id": "webarena.310--0", "attempt": 1, "success": True},
                      {"task_id": "webarena.311--7", "attempt": 1, "success": False}]


def test_reverify_judges_them_and_judge_agreement_scores_the_judge_against_the_benchmark_reward(tmp_path, capsys):
    study = tmp_path / "study"
    write_experiment(study, "webarena.310", 0, ANSWERED)
    write_experiment(study, "webarena.311", 7, ['click("b7")'], reward=0.0)
    write_experiment(study, "webarena.312", 1, ['click("b9")'], err_msg="Exception uncaught by agent or environment "
                     "in task webarena.312.\nTimeoutError:\nPage.goto: Timeout 30000ms exceeded.")
    run = tmp_path / "run"
    assert import_from(study, run) == 0
    summary = json.loads((run / "summary.json").read_text())
    assert summary["masked"] == {"infra_error[source_error]": 1, "judge_failed[unjudged]": 2}
    assert (summary["passed"], summary["failed"]) == (0, 0)
    with OpenAIStub([text(json.dumps({"reasoning": "The page shows it.", "verdict": "SUCCESS"}))],
                    models=("judge-model",)) as stub:
        assert main(["reverify", str(run), "--judge-base-url", stub.base_url, "--judge-model", "judge-model"]) == 1
    out = capsys.readouterr().out
    assert "re-judged 2 of 3 tasks; 1 kept as they were" in out
    assert "webarena.312--1: infra_error, kept (its episode did not finish)" in out
    assert len(stub.requests) == 2  # the broken episode was never judged, so never scored 0
    trail = next(t for r in stub.requests if "fill(" in (t := r["messages"][1]["content"][-1]["text"]))
    assert '1. fill("a12", "cc-by-sa-4.0") (on https://huggingface.co/models?step=0)' in trail
    final = {r["task_id"]: r["outcome"] for r in records(run) if r["extra"].get("rejudge")}
    assert final == {"webarena.310--0": "passed", "webarena.311--7": "passed"}
    assert main(["judge-agreement", str(run)]) == 0  # the benchmark's reward is the truth it is scored against
    out = capsys.readouterr().out
    assert "2 attempts judged and labelled" in out and "webarena.311--7 attempt 1: judged SUCCESS, truly failed" in out


def test_a_pickle_that_would_run_code_is_read_as_data(tmp_path):
    mark = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (Path.touch, (mark,))

    hostile = pickle.dumps({"action": Payload()})
    pickle.loads(hostile)  # what an ordinary load does: it runs the call
    assert mark.exists()
    mark.unlink()
    data = inert_pickle.loads(hostile)
    assert not mark.exists()
    assert isinstance(data["action"], inert_pickle.Inert) and data["action"].named == "pathlib.Path.touch"


def test_broken_folders_are_listed_with_their_reason_and_the_rest_imported(tmp_path, capsys):
    study = tmp_path / "study"
    write_experiment(study, "webarena.310", 0, ANSWERED)
    (write_experiment(study, "webarena.400", 0, ANSWERED) / "summary_info.json").unlink()
    (write_experiment(study, "webarena.401", 0, ANSWERED) / "summary_info.json").write_text('{"n_steps": 3,')
    for shot in write_experiment(study, "webarena.402", 0, ANSWERED).glob("screenshot_step_*"):
        shot.unlink()
    damaged = write_experiment(study, "webarena.403", 0, ANSWERED)
    (damaged / "step_1.pkl.gz").write_bytes(b"\x1f\x8b not gzip at all")
    (damaged / "exp_args.pkl").write_bytes(b"\x80\x05 torn")
    old = write_experiment(study, "webarena.404", 0, ANSWERED)
    old.rename(old.with_name("_" + old.name))
    assert import_from(study, tmp_path / "run") == 0
    out = capsys.readouterr().out.splitlines()
    skipped = {line.split(": ", 1)[0].split("_on_")[-1]: line.split(": ", 1)[1] for line in out if line.startswith("  skipped")}
    assert skipped == {"webarena.400_0": "no summary_info.json",
                       "webarena.401_0": "summary_info.json: invalid JSON (line 1, column 15)",
                       "webarena.402_0": "no screenshot_step_<i>.png",
                       "webarena.404_0": "a hidden folder (AgentLab's copy of a relaunched experiment)"}
    assert out[-1] == f"webeval import agentlab: imported 2 of 6 folders into {tmp_path / 'run'}, skipped 4"
    # a damaged file loses only what it held: the task comes from the folder's name, the other steps are kept
    evidence = Evidence.load(tmp_path / "run" / "tasks" / "webarena.403--0" / "attempt-1")
    assert [a["text"] for a in evidence.actions] == [ANSWERED[0], ANSWERED[2]]
    assert evidence.imported["details"]["unreadable"] == ["exp_args.pkl: not a readable pickle (UnpicklingError)",
                                                          "step_1.pkl.gz: cannot read it (Unknown compression method)"]


def test_a_gzip_bomb_is_refused(tmp_path):
    bomb = tmp_path / "step_0.pkl.gz"
    with gzip.open(bomb, "wb") as out:
        out.write(b"\0" * ((64 << 20) + 10))
    try:
        inert_pickle.load(bomb, "step_0.pkl.gz")
    except Unreadable as exc:
        assert str(exc) == "step_0.pkl.gz: unpacks to more than 64 MB"
    else:
        raise AssertionError("a 64 MB pickle was read")
