"""`run.sh curator --explain TEXT`, read-only: the lesson a note saying TEXT would join, its
evidence, rule, place and the judge's answers, and unread raw.md lines that say it."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

from harness.curator import curatordb
from harness.curator.commit import CuratorPaths, cursor_start, read_json, read_text
from harness.curator.identity import IdentityIndex, archive_path, provenance
from harness.curator.judge import Judgments
from harness.curator.matching import same_lesson
from harness.curator.promotion import Evidence, PromotionTracker, load
from harness.curator.record import PROMOTABLE, RawPass
from harness.curator.text import normalize
from harness.errors import UsageError
from harness.state import memory

SHOWN = 3  # unread notes of the lesson quoted
# kind -> its rule; met in two missions or more, in one; missed with one note (or ""), more
RULES = {
    "TRICK": ("A TRICK is promoted once two distinct workers report it: notes from different "
              "features, or from different missions.",
              "it was noted in missions {missions}.", "it was noted for features {features}.",
              "it was noted once, for feature {worker} of mission {mission}.",
              "{all_notes} came from feature {worker} of mission {mission}. A retry on the same "
              "feature read the earlier note in its prompt, so its repeats are echoes, not a "
              "second worker; a note from another feature or mission would promote it."),
    "FAIL": ("A FAIL is promoted once it happens in two missions.",
             "it happened in missions {missions}.", "",  # two missions: never met in one
             "", "it was seen only in mission {mission} ({notes}); it needs a second mission."),
    "FORGOT": ("A FORGOT is promoted once it is forgotten on two occasions (different runs).",
               "it was forgotten in missions {missions}.", "it was forgotten in runs {runs}.",
               "it was forgotten once ({occasion}); it needs another run.",
               "{all_notes} came from one occasion ({occasion}): a run restating what it forgot "
               "is one occasion; it needs another run."),
}


def explain(state: Path, identity: Path, text: str, similarity: float,
            role: str | None = None, kind: str | None = None) -> str:
    """The explanation for TEXT (the I/O edge: reads the record, identity and raw.md)."""
    if not text.strip():
        raise UsageError("--explain needs the words of a lesson")
    if role is not None and not memory.NAME.fullmatch(role):
        raise UsageError(f"bad role name {role!r}")
    if kind not in (None, *PROMOTABLE):  # the CLI's other kinds: GOTCHA, DECISION, - (plain)
        return (f"{'plain' if kind == '-' else kind} notes are never promoted to identity: "
                "only TRICK, FAIL and FORGOT are. They stay in MEMORY.md and summary.md, "
                "where the curator merges and bounds them.")
    answers = curatordb.read_answers(identity)
    tracker = load(identity, similarity, Judgments(), write=False)  # with the recorded answers
    with closing(tracker.store):
        buckets = sorted(b for b in tracker.index.buckets()
                         if role in (None, b[0]) and kind in (None, b[1]))
        cids = [tracker.find(bucket, normalize(text)) for bucket in buckets]
        found = {cid: ev for cid in cids if cid is not None and (ev := tracker.lesson(cid))}
        blocks = [_describe(tracker, cid, answers, _place(identity, ev, similarity))
                  for cid, ev in found.items()] or [_no_lesson(text)]
        lines, notes = _unread(CuratorPaths(state, identity))
        notes = [n for n in notes if role in (None, n.role) and kind in (None, n.kind)]
        said = [n for n in notes if tracker.find((n.role, n.kind), normalize(n.text))
                in found or same_lesson(text, n.text, similarity)]
    return "\n\n".join([*blocks, *([_pending(lines, said)] if lines else [])])


def rule(ev: Evidence) -> str:
    """Which rule applies to the lesson's kind, and whether and why it is met or missed."""
    text, met_in_missions, met_in_one, missed_once, missed = RULES[ev.kind]
    if ev.due():
        why = met_in_missions if len(ev.missions) > 1 else met_in_one
    else:
        why = missed_once if ev.count == 1 and missed_once else missed
    why = why.format(
        missions=ev.show("missions"), features=ev.show("features"), runs=ev.show("runs"),
        mission=ev.missions[0], worker=ev.worker, occasion=ev.occasion, notes=_notes(ev.count),
        all_notes="both notes" if ev.count == 2 else f"all {ev.count} notes")
    return f"{text} {'Met' if ev.due() else 'Missed'}: {why}"


def _notes(count: int) -> str:
    return "1 note" if count == 1 else f"{count} notes"


def _place(identity: Path, ev: Evidence, similarity: float) -> str:
    role_file, archive = f"identity/{ev.role}.md", f"identity/archive/{ev.role}.md"
    index = IdentityIndex(similarity)
    if memory.NAME.fullmatch(ev.role):  # a role name from the record: no path of its own
        index.add_text(role_file, read_text(identity / f"{ev.role}.md"))
        index.add_text(archive, read_text(archive_path(identity, ev.role)))
    if (line := index.line_of(role_file, ev.text)) is not None:
        by_hand = " (a line a person wrote)" if provenance(line) is None else ""
        return f"now: in {role_file}{by_hand}: {line}"
    if (line := index.line_of(archive, ev.text)) is not None:
        return (f"now: in {archive}, moved out of {role_file} for room; it comes back when "
                f"the lesson recurs: {line}")
    if ev.due():
        return (f"now: in neither {role_file} nor {archive}, though due: a person deleted the "
                "line, and it stays out until the lesson is noted again.")
    return f"now: not in {role_file}; the rule is not met yet."


def _describe(tracker: PromotionTracker, cid: int, answers: curatordb.Answers, where: str) -> str:
    ev = tracker.lessons[cid]
    seen = ev.first if ev.first == ev.last else f"{ev.first}..{ev.last}"
    keys = {key for c, key, _ in tracker.index.phrasings((ev.role, ev.kind)) if c == cid}
    about = [same for (bucket, key, other), same in answers.items()
             if bucket == (ev.role, ev.kind) and (key in keys or other in keys)]
    return "\n".join([
        f"{ev.role} {ev.kind}, first noted as: {ev.text}",
        f"  evidence: {_notes(ev.count)}, {seen}; missions: {ev.show('missions')}; "
        f"features: {ev.show('features')}; runs: {ev.show('runs') if ev.runs else 'none recorded'}",
        *([f"  judge: {len(about)} answers recorded about its notes: {sum(about)} 'same' "
           f"(joined), {len(about) - sum(about)} 'new' (kept apart)"] if about else []),
        f"  rule: {rule(ev)}", f"  {where}"])


def _no_lesson(text: str) -> str:
    return (f"No lesson in the candidate record says this: {text}\n  (only TRICK, FAIL and FORGOT "
            "notes are recorded; GOTCHA, DECISION and plain notes are never promoted)")


def _pending(lines: int, said: list[memory.Entry]) -> str:
    head = (f"raw.md has {lines} line{'s' * (lines != 1)} the curator has not read yet, "
            "not in the record until the next curator pass.")
    if not said:
        return head
    says_it = "1 says" if len(said) == 1 else f"{len(said)} say"
    more = [f"  ... and {len(said) - SHOWN} more"] if len(said) > SHOWN else []
    return "\n".join([f"{head} Of those, {says_it} this:",
                      *(f"  {note.line()}" for note in said[:SHOWN]), *more])


def _unread(paths: CuratorPaths) -> tuple[int, list[memory.Entry]]:
    """How many raw.md lines no pass counted yet, and their promotable notes (nothing staged)."""
    start, counted = cursor_start(paths, read_json(paths.cursor))
    raw = RawPass(paths.raw, start or 0, counted=counted)
    notes = [memory.Entry._make(fields) for fields in raw.entries() if fields[3] in PROMOTABLE]
    # raw.md read again from its start (a hand edit): a line that does not parse is no note
    return raw.processed - (raw.unparsed if start is None else 0), notes
