"""An ensemble of judges deciding by majority vote; every member's verdict is kept, and a split is flagged.

A member that cannot decide (a JudgeError) abstains; the others vote. With no majority (a tie, or every member
abstaining) the ensemble has no verdict: judge_failed, masked and re-judgeable, never the agent's failure.
"""

from __future__ import annotations

from webeval.outcomes.record import JudgeError
from webeval.outcomes.verdict import Verdict


def vote(names: list[str], results: list[Verdict | BaseException]) -> Verdict:
    """The majority verdict of the members' results, with each member's verdict (or error) in its details."""
    for result in results:
        if isinstance(result, BaseException) and not isinstance(result, JudgeError):
            raise result
    verdicts = [(name, r) for name, r in zip(names, results) if isinstance(r, Verdict)]
    yes = sum(1 for _, v in verdicts if v.success)
    no = len(verdicts) - yes
    members = {name: (r.model_dump(mode="json") if isinstance(r, Verdict) else {"error": str(r), "kind": r.kind})
               for name, r in zip(names, results)}
    if yes == no:
        raise JudgeError(f"the ensemble has no majority ({yes} SUCCESS, {no} NOT SUCCESS, "
                         f"{len(names) - len(verdicts)} abstained)", kind="unparseable")
    success = yes > no
    split = yes > 0 and no > 0
    reason = "; ".join(f"{name}: {'SUCCESS' if v.success else 'NOT SUCCESS'}" for name, v in verdicts)
    return Verdict(success=success, judge="ensemble", reason=(f"ensemble split {max(yes, no)}-{min(yes, no)}: "
                                                              if split else "ensemble agrees: ") + reason,
                   details={"members": members, "disagreement": split, "votes": {"success": yes, "not": no}})
