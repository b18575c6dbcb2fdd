"""A person steers a feature: `answer` a blocked feature's question (it goes back to pending,
the answer in its next prompt), or `guide` it (guidance in each of its prompts until removed).

Both are records in the feature's ledger, so they are kept, and what is current is read back
from it: the guidance added and not removed, and the latest answers.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from harness.errors import UsageError
from harness.state import plan as plan_mod
from harness.state.ledger import append_verdict, ledger_path
from harness.state.reading import parse_json_line
from harness.state.redact import redact
from harness.state.runs import last_run_id

ANSWERS_SHOWN = 3  # the latest answers a prompt shows; older ones stay in the ledger
SHOWN_MIN = 100  # characters a prompt gives each guidance or answer at least
GUIDE, UNGUIDE, ANSWER = "guide", "unguide", "answer"
KINDS = (GUIDE, UNGUIDE, ANSWER)  # their `verdict` in the ledger


def _text(text: str, what: str) -> str:
    text = " ".join(text.split())
    if not text:
        raise UsageError(f"{what} needs a text")
    return redact(text)


def answer_feature(state: Path, feature_id: str, text: str) -> plan_mod.Feature:
    """Return a blocked feature to pending with a person's answer to what it needs; its
    attempts stay as they are (a block is no attempt), as `unblock` leaves them. The answer
    is kept in the ledger first, under the plan's lock: one that cannot be kept leaves the
    feature blocked, to be answered again."""
    plan_mod.check_feature_id(feature_id)
    answer = _text(text, "answer")

    def change(f: plan_mod.Feature) -> plan_mod.Feature:
        if f.status != "blocked":
            raise UsageError(f"{feature_id} is {f.status}, not blocked; `run.sh guide "
                             f"{feature_id} TEXT` steers a feature that is not waiting")
        append_verdict(state, feature_id, {"run_id": ANSWER, "verdict": ANSWER,
                                           "question": f.blocked_reason or "",
                                           "reason": answer,
                                           "after_run": last_run_id(state, "worker",
                                                                    feature_id)})
        return f.model_copy(update={"status": "pending", "blocked_reason": None})

    return plan_mod.update_feature(state, feature_id, change)


def add_guidance(state: Path, feature_id: str, text: str) -> list[str]:
    """Guidance for every next prompt of the feature; the guidance now current."""
    check_known(state, feature_id)
    append_verdict(state, feature_id, {"run_id": GUIDE, "verdict": GUIDE,
                                       "reason": _text(text, "guide")})
    return current(state, feature_id)["guidance"]


def remove_guidance(state: Path, feature_id: str, which: str) -> str:
    """Remove the guidance numbered `which` (as `show` lists it, from 1) or `all`."""
    guidance = current(state, check_known(state, feature_id))["guidance"]
    if which == "all":
        gone = list(guidance)
    elif re.fullmatch(r"[0-9]{1,9}", which) and 1 <= int(which) <= len(guidance):
        gone = [guidance[int(which) - 1]]
    else:
        raise UsageError(f"--remove takes a number from 1 to {len(guidance)} or `all`; "
                         f"{feature_id} has {len(guidance)} guidance")
    for text in gone:
        append_verdict(state, feature_id, {"run_id": GUIDE, "verdict": UNGUIDE, "reason": text})
    return "; ".join(gone) or "(none)"


def current(state: Path, feature_id: str) -> dict[str, Any]:
    """The feature's guidance (oldest first) and its latest answers, from its ledger."""
    try:
        lines = ledger_path(state, feature_id).read_bytes().splitlines()
    except FileNotFoundError:
        lines = []
    return fold([parse_json_line(line) for line in lines])  # a damaged line is None


def fold(records: list[Any]) -> dict[str, Any]:
    """The guidance added and not removed, and the latest answers, in ledger records."""
    guidance: list[str] = []
    answers: list[dict[str, str]] = []
    for record in records:
        if not isinstance(record, dict):
            continue
        kind, text = record.get("verdict"), str(record.get("reason", ""))
        if kind == GUIDE:
            guidance.append(text)
        elif kind == UNGUIDE and text in guidance:
            guidance.remove(text)
        elif kind == ANSWER:
            answers.append({"time": record.get("time", "?"), "answer": text,
                            "question": str(record.get("question", ""))})
    return {"guidance": guidance, "answers": answers[-ANSWERS_SHOWN:]}


def prompt_view(steering: dict[str, Any], limit: int) -> dict[str, Any]:
    """The guidance and answers as a prompt shows them, within `limit` characters in all:
    each gets at least SHOWN_MIN, so of more guidance than that allows, the newest shows and
    the rest is counted (thousands of it were a line of " [...]" each, past the cap)."""
    guidance, answers = steering.get("guidance", []), steering.get("answers", [])
    shown = guidance[len(guidance) - max(limit // SHOWN_MIN - len(answers), 1):]
    each = limit // max(len(shown) + len(answers), 1)
    cut = (lambda text: text if len(text) <= each else text[:each] + " [...]")  # noqa: E731
    return {"guidance": [cut(g) for g in shown], "guidance_omitted": len(guidance) - len(shown),
            "answers": [{**a, "answer": cut(a["answer"]), "question": cut(a["question"])}
                        for a in answers]}


def check_known(state: Path, feature_id: str) -> str:
    plan_mod.check_feature_id(feature_id)
    plan_mod.find_feature(plan_mod.load_plan(state), feature_id)
    return feature_id
