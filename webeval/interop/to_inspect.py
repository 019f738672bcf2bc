"""A run as Inspect AI's eval log, written with inspect_ai's own log API, so that `inspect view` opens it.

One sample per task of the population that has a final record (its epoch from a K-epoch run's `<id>.e<k>`):
the task as the input, the episode as messages (the task; per step the page's URL and the model's reply; the last
screenshot as an image), the answer as the output. A passed or failed task is scored `C` or `I` by the scorer
`webeval`, with the judge's reason as the explanation. A masked task (infra_error, judge_failed, not_run,
harness_error) is a sample error with its kind and reason, and has no score: it is never a 0. Tasks that never ran
have no sample; the results' metadata names them, and the log's status is `error` while the run is incomplete.
"""

from __future__ import annotations

import base64
from datetime import datetime, timezone
from importlib import metadata as package_metadata
from pathlib import Path
from typing import Any

from inspect_ai._util.error import EvalError
from inspect_ai.log import (EvalConfig, EvalDataset, EvalLog, EvalMetric, EvalPlan, EvalResults, EvalSample,
                            EvalScore, EvalSpec, EvalStats, write_eval_log)
from inspect_ai.model import ChatMessageAssistant, ChatMessageUser, ContentImage, ContentText, ModelOutput, ModelUsage
from inspect_ai.scorer import CORRECT, INCORRECT, Score

from webeval.interop.final_attempts import FinalAttempt, RunView, read_run
from webeval.outcomes import epochs
from webeval.outcomes.record import Outcome
from webeval.report.steps import step_title

SCORER = "webeval"
FORMATS = (".eval", ".json")


def _image(path: Path) -> ContentImage:
    kind = "jpeg" if path.suffix.lower() in (".jpg", ".jpeg") else "png"
    return ContentImage(image=f"data:image/{kind};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}")


def messages(attempt: FinalAttempt) -> list[ChatMessageUser | ChatMessageAssistant]:
    goal = attempt.evidence.goal if attempt.evidence else ""
    said: list[ChatMessageUser | ChatMessageAssistant] = [ChatMessageUser(content=goal or attempt.task_id)]
    for number, step in enumerate(attempt.steps, start=1):
        said.append(ChatMessageUser(content=f"Step {step.get('step', number)}. URL: {step.get('url') or '-'} "
                                            f"(screenshot {step.get('screenshot') or '-'})"))
        said.append(ChatMessageAssistant(content=step.get("raw") or step_title(
            number, step.get("actions") or [], step.get("error"))))
    shots = attempt.evidence.screenshot_paths(1) if attempt.evidence else []
    if shots:
        said.append(ChatMessageUser(content=[ContentText(text=f"The last screenshot ({shots[0].name})."),
                                             _image(shots[0])]))
    return said


def _usage(usage: dict[str, float]) -> ModelUsage | None:
    if not usage.get("prompt_tokens") and not usage.get("completion_tokens"):
        return None
    given, taken = int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))
    return ModelUsage(input_tokens=given, output_tokens=taken, total_tokens=given + taken,
                      reasoning_tokens=int(usage["reasoning_tokens"]) if usage.get("reasoning_tokens") else None,
                      input_tokens_cache_read=int(usage["cached_tokens"]) if usage.get("cached_tokens") else None)


def sample(attempt: FinalAttempt, model: str, epoch_count: int) -> EvalSample:
    record = attempt.record
    task_id, epoch = epochs.base_id(record.task_id) if epoch_count > 1 else (record.task_id, 1)
    verdict = record.verdict or {}
    scores = None
    if record.outcome.valid:
        scores = {SCORER: Score(value=CORRECT if record.outcome is Outcome.passed else INCORRECT,
                                answer=record.answer, explanation=verdict.get("reason") or record.reason or None,
                                metadata={"judge": verdict.get("judge"), "protocol": verdict.get("protocol"),
                                          "judge_model": verdict.get("model")})}
    error = None if record.outcome.valid else EvalError(
        message=f"{record.masked_key}: {record.reason}", traceback=str(record.extra.get("traceback", "")),
        traceback_ansi=str(record.extra.get("traceback", "")))
    usage = _usage(record.usage)
    return EvalSample(
        id=task_id, epoch=epoch, input=(attempt.evidence.goal if attempt.evidence else "") or record.task_id,
        target="", messages=messages(attempt), output=ModelOutput.from_content(model=model, content=record.answer or ""),
        scores=scores, error=error, total_time=record.duration_s or None, model_usage={model: usage} if usage else {},
        metadata={"site": record.site, "outcome": record.outcome.value, "kind": record.kind, "steps": record.steps,
                  "failure_class": record.failure_class.value if record.failure_class else None,
                  "attempt": record.attempt, "attempt_path": record.path, "verdict": record.verdict,
                  "lacks": getattr(attempt.evidence, "lacks", None) if attempt.evidence else None})


def results(view: RunView) -> EvalResults:
    summary = view.summary
    completed = summary.passed + summary.failed
    metrics = {"accuracy": EvalMetric(name="accuracy", value=summary.score_completed or 0.0),
               "score_low": EvalMetric(name="score_low", value=summary.score_low),
               "score_high": EvalMetric(name="score_high", value=summary.score_high)}
    return EvalResults(
        total_samples=summary.n, completed_samples=completed,
        scores=[EvalScore(name=SCORER, scorer=SCORER, scored_samples=completed,
                          unscored_samples=summary.n - completed, metrics=metrics)],
        metadata={"headline": summary.headline(), "complete": summary.complete, "n": summary.n,
                  "passed": summary.passed, "failed": summary.failed, "masked": summary.masked,
                  "missing": summary.missing, "duplicates": summary.duplicates, "unexpected": summary.unexpected})


def _times(view: RunView) -> tuple[str, str]:
    stamps = sorted(a.record.finished_at for a in view.attempts if a.record.finished_at)
    now = datetime.now(timezone.utc).isoformat()
    return (stamps[0], stamps[-1]) if stamps else (now, now)


def eval_log(path: Path, model: str = "unknown") -> EvalLog:
    view = read_run(path)
    summary = view.summary
    epoch_count = int(view.run_dir.conventions().get(epochs.CONVENTION, "1") or 1)
    ids = list(dict.fromkeys(epochs.base_id(i)[0] if epoch_count > 1 else i
                             for i in view.run_dir.population().ids))
    started, finished = _times(view)
    spec = EvalSpec(
        created=started, task=summary.population, task_id=summary.sha256[:12], model=model,
        dataset=EvalDataset(name=summary.population, location=str(path.resolve()), samples=len(ids), sample_ids=ids),
        config=EvalConfig(epochs=epoch_count), packages={"pytest-webeval": _version()},
        metadata={"run_dir": str(path.resolve()), "sha256": summary.sha256, "conventions": summary.conventions})
    return EvalLog(
        status="success" if summary.complete else "error", eval=spec, plan=EvalPlan(name=SCORER),
        results=results(view), stats=EvalStats(started_at=started, completed_at=finished),
        error=None if summary.complete else EvalError(message=summary.headline(), traceback="", traceback_ansi=""),
        samples=[sample(attempt, model, epoch_count) for attempt in view.attempts])


def _version() -> str:
    try:
        return package_metadata.version("pytest-webeval")
    except package_metadata.PackageNotFoundError:
        return "unknown"


def write(path: Path, out: Path, model: str = "unknown") -> dict[str, Any]:
    """The run's eval log at `out` (.eval or .json); what it holds, for the command's line."""
    log = eval_log(path, model)
    write_eval_log(log, str(out))
    counts = {"samples": len(log.samples or []), "scored": sum(1 for s in log.samples or [] if s.scores),
              "errors": sum(1 for s in log.samples or [] if s.error),
              "missing": len(log.results.metadata["missing"]) if log.results and log.results.metadata else 0}
    return counts
