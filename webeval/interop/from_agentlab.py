"""AgentLab's experiment folders (BrowserGym's experiment loop), one per task run: `summary_info.json`,
`screenshot_step_<i>.png` (or `.jpg`) per step, `step_<i>.pkl.gz` (the step's observation, action and agent
info), `exp_args.pkl` (the task name, its seed, the agent) and `goal_object.pkl.gz` (the task text and images).

The pickles are read as data, never as code (webeval.interop.inert_pickle): from `exp_args.pkl` the task name, seed
and agent name; from `goal_object.pkl.gz` the goal's text parts; from each `step_<i>.pkl.gz` its action, the agent's
`think` and the page's URL (and the goal, when there is no goal object). Not read: `experiment.log`,
`package_versions.txt`, the videos, `screenshot_som_step_<i>` (the labelled copies), and everything else a step
holds (its DOM, accessibility tree, chat messages and statistics).

The task id is `<task name>--<seed>`; without `exp_args.pkl` the folder's name (`<date>_<agent>_on_<task>_<seed>`)
gives them. The answer is the last `send_msg_to_user("...")` of the actions, read with Python's parser. An experiment
whose `summary_info.json` names an error broke: it is imported masked (`infra_error[source_error]`), never judged.
The benchmark's own reward (`cum_reward`) is kept, and is a truth label for `webeval judge-agreement`.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from webeval.interop import inert_pickle
from webeval.interop.imported import ImportedTrajectory, SourceAction, Unreadable, read_json
from webeval.interop.inert_pickle import field
from webeval.tasks.model import SAFE_ID

SUMMARY = "summary_info.json"
EXP_ARGS = "exp_args.pkl"
GOAL = "goal_object.pkl.gz"
MARKERS = (SUMMARY, EXP_ARGS, "step_0.pkl.gz")
_SHOT = re.compile(r"^screenshot_step_(\d+)\.(png|jpg|jpeg)$")
_STEP = re.compile(r"^step_(\d+)\.pkl\.gz$")
_NAME = re.compile(r"_on_(.+)_(\d+)(?:_\d+)?$")
ANSWER_CALL = "send_msg_to_user"


def _summary(folder: Path) -> dict[str, Any]:
    summary = read_json(folder, SUMMARY)
    if not isinstance(summary, dict):
        raise Unreadable(f"{SUMMARY}: not a JSON object")
    return summary


def _screenshots(folder: Path) -> list[tuple[int, str]]:
    """(step number, file name) of each screenshot, in step order."""
    return sorted((int(m[1]), p.name) for p in folder.iterdir() if (m := _SHOT.match(p.name)))


def _identity(folder: Path, read: set[str], unreadable: list[str]) -> tuple[str, Any, str | None]:
    """(task name, seed, agent name) from exp_args.pkl, else from the folder's name."""
    if (folder / EXP_ARGS).is_file():
        try:
            args = inert_pickle.load(folder / EXP_ARGS, EXP_ARGS)
        except Unreadable as exc:
            unreadable.append(str(exc))
            args = None
        env, agent = field(args, "env_args"), field(args, "agent_args")
        task = field(env, "task_name")
        if isinstance(task, str) and task:
            read.add(EXP_ARGS)
            agent_name = field(agent, "agent_name")
            return task, field(env, "task_seed"), agent_name if isinstance(agent_name, str) else None
    match = _NAME.search(folder.name)
    if not match:
        raise Unreadable(f"no task name: no readable {EXP_ARGS}, and the folder's name is not "
                         "<date>_<agent>_on_<task>_<seed>")
    return match[1], int(match[2]), None


def _goal_text(goal: Any) -> str:
    """The text parts of a goal object (a list of {"type": "text", "text": ...}), or a goal string."""
    if isinstance(goal, str):
        return goal.strip()
    if isinstance(goal, list):
        return "\n".join(part["text"] for part in goal if isinstance(part, dict) and part.get("type") == "text"
                         and isinstance(part.get("text"), str)).strip()
    return ""


def answer_in(action: str) -> str | None:
    """The text of the last `send_msg_to_user("...")` call in an action's code, parsed, never run."""
    try:
        tree = ast.parse(action)
    except (SyntaxError, ValueError):
        return None
    said = [node.args[0].value for node in ast.walk(tree) if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name) and node.func.id == ANSWER_CALL and node.args
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)]
    return said[-1] if said else None


def _steps(folder: Path, read: set[str], unreadable: list[str]) -> tuple[list[SourceAction], dict[int, str], str]:
    """The actions, the URL by step number and the goal seen in the step pickles; an unreadable step is left out."""
    numbered = sorted((int(m[1]), p) for p in folder.iterdir() if (m := _STEP.match(p.name)))
    actions: list[SourceAction] = []
    urls: dict[int, str] = {}
    goal = ""
    for number, path in numbered:
        try:
            step = inert_pickle.load(path, path.name)
        except Unreadable as exc:
            unreadable.append(str(exc))
            continue
        read.add(path.name)
        obs, info = field(step, "obs"), field(step, "agent_info")
        url = field(obs, "url")
        urls[number] = url if isinstance(url, str) else ""
        goal = goal or _goal_text(field(obs, "goal"))
        action, think = field(step, "action"), field(info, "think")
        if isinstance(action, str) and action:
            actions.append(SourceAction(text=action, thought=think if isinstance(think, str) else None,
                                        final=answer_in(action) is not None))
    return actions, urls, goal


def read_folder(folder: Path) -> ImportedTrajectory:
    read: set[str] = set()
    unreadable: list[str] = []  # files that are there but could not be read: what they hold is not in the evidence
    summary = _summary(folder)
    read.add(SUMMARY)
    shots = _screenshots(folder)
    if not shots:
        raise Unreadable("no screenshot_step_<i>.png")
    task, seed, agent = _identity(folder, read, unreadable)
    task_id = f"{task}--{seed}" if seed is not None else task
    if not SAFE_ID.fullmatch(task_id) or ".." in task_id:
        raise Unreadable(f"task {task_id!r} is not an id webeval can keep (letters, digits, '_', '-', '.')")
    goal = ""
    if (folder / GOAL).is_file():
        try:
            goal = _goal_text(inert_pickle.load(folder / GOAL, GOAL))
            read.add(GOAL)
        except Unreadable as exc:
            unreadable.append(str(exc))
    actions, url_of, seen_goal = _steps(folder, read, unreadable)
    urls = [url_of.get(number, "") for number, _ in shots]
    answers = [answer_in(action.text) for action in actions]
    known = [url for url in urls if url.startswith(("http://", "https://"))]
    reward = summary.get("cum_reward")
    error = summary.get("err_msg")
    trajectory = ImportedTrajectory(
        folder=folder, task_id=task_id, site=task.split(".")[0], goal=goal or seen_goal,
        answer=next((a for a in reversed(answers) if a is not None), None),
        screenshots=[(name, folder / name) for _, name in shots], actions=actions, urls=urls,
        start_url=known[0] if known else None, read=read | {name for _, name in shots},
        details={"task_name": task, "seed": seed, "agent": agent, "cum_reward": reward,
                 **{k: summary[k] for k in ("n_steps", "terminated", "truncated") if k in summary},
                 **({"unreadable": unreadable} if unreadable else {})})
    if isinstance(error, str) and error.strip():
        trajectory.infra = {"kind": "source_error", "message": " ".join(error.split())[:300]}
    elif isinstance(reward, (int, float)) and not isinstance(reward, bool):
        trajectory.label = reward > 0
    trajectory.note_missing()
    trajectory.lacks.append("titles")
    return trajectory


def folders(root: Path) -> list[Path]:
    """Every experiment folder under `root` (itself included), as AgentLab finds them; hidden and `_`-prefixed
    folders too (AgentLab's old copy of a relaunched experiment), which the importer then lists as skipped."""
    found = [path for path in [root, *sorted(root.rglob("*"))] if path.is_dir()
             and any((path / marker).is_file() for marker in MARKERS)]
    return found


def hidden(folder: Path) -> bool:
    return folder.name.startswith(("_", "."))
