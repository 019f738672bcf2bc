"""BrowserGym's side of bench/browsergym.py, run by the interpreter of its own virtual environment (.tools/browsergym,
Playwright 1.44): MiniWoB++ tasks reset and stepped through BrowserGym's own environment, each step timed.

It answers requests on stdin, one JSON line each (a task, its seed, its steps, and BrowserEnv keyword arguments),
with one JSON line on stdout: the reset's and each step's time, the goal, the reward.
The steps are webeval's oracle steps (selectors); each becomes BrowserGym's own action on the element BrowserGym
marked (its `bid`), looked up before the step's clock starts. It imports nothing of webeval: its venv has none.
"""

from __future__ import annotations

import json
import sys
import time

import gymnasium as gym

import browsergym.miniwob  # noqa: F401 (registers the browsergym/miniwob.* environments)
from browsergym.core.action.highlevel import HighLevelActionSet

KEYS = {"enter": "Enter", "left": "ArrowLeft", "right": "ArrowRight", "up": "ArrowUp", "down": "ArrowDown",
        "tab": "Tab", "backspace": "Backspace", "escape": "Escape", "ctrl": "Control", "alt": "Alt", "shift": "Shift"}
# BrowserGym's default action set, and its keyboard actions (the "coord" subset) for typing after a click.
ACTIONS = HighLevelActionSet(subsets=["chat", "infeas", "bid", "coord", "nav", "tab"])


def bid(page, selector: str) -> str:
    found = page.locator(selector).first.get_attribute("bid", timeout=5000)
    if found is None:
        raise LookupError(f"BrowserGym marked no element {selector!r}")
    return found


def actions(page, step: dict) -> list[str]:
    """BrowserGym's actions for one oracle step: a typing step with a selector clicks first, as the oracle does."""
    do = step["do"]
    if do == "click":
        return [f"click({json.dumps(bid(page, step['selector']))})"]
    if do == "type":
        typed = f"keyboard_type({json.dumps(step['text'])})"
        return [f"click({json.dumps(bid(page, step['selector']))})", typed] if step.get("selector") else [typed]
    if do == "key":
        combo = "+".join(KEYS.get(key.lower(), key) for key in step["keys"])
        return [f"keyboard_press({json.dumps(combo)})"]
    if do == "drag":
        return [f"drag_and_drop({json.dumps(bid(page, step['selector']))}, {json.dumps(bid(page, step['to']))})"]
    raise ValueError(f"no BrowserGym action for oracle step {do!r}")


def run_task(name: str, seed: int, steps: list[dict], options: dict, miniwob_url: str) -> dict:
    env = gym.make(f"browsergym/miniwob.{name}", task_kwargs={"base_url": miniwob_url},
                   action_mapping=ACTIONS.to_python_code, **options)
    result = {"name": name, "seed": seed, "steps_s": [], "errors": []}
    try:
        began = time.perf_counter()
        obs, info = env.reset(seed=seed)
        result["reset_s"] = time.perf_counter() - began
        result["goal"] = obs["goal"]
        page = env.unwrapped.page
        done, reward = False, 0.0
        pending = [action for step in steps for action in ([] if step["do"] == "answer" else [step])]
        for step in pending:
            for action in actions(page, step):
                began = time.perf_counter()
                obs, reward, done, truncated, info = env.step(action)
                result["steps_s"].append(time.perf_counter() - began)
                if obs.get("last_action_error"):
                    result["errors"].append(obs["last_action_error"][:200])
                if done:
                    break
            if done:
                break
        result.update(reward=reward, done=bool(done))
    finally:
        env.close()
    return result


def main() -> None:
    """One request per line: {"setting", "options", "name", "seed", "steps", "miniwob_url"}; one reply per line."""
    for line in sys.stdin:
        request = json.loads(line)
        try:
            result = run_task(request["name"], request["seed"], request["steps"], request["options"],
                              request["miniwob_url"])
        except Exception as exc:  # one task's failure is reported, the others still run
            result = {"name": request["name"], "seed": request["seed"], "failed": f"{type(exc).__name__}: {exc}"[:300]}
        print(json.dumps({"setting": request["setting"], **result}), flush=True)


if __name__ == "__main__":
    main()
