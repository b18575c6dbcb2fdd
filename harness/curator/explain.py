"""`run.sh curator --explain TEXT`: why a lesson was promoted to identity, or why not.

The lesson is found as a pass would file a note saying TEXT: in the candidate record,
clustered per role and kind with the judge's recorded answers (`clusters.Clusters.find`).
Its evidence is read against its kind's rule (`promotion.Evidence.due`), and the role's
identity file and archive are searched for it in any words (`identity.IdentityIndex`).
The raw.md lines no pass has read yet are read as a pass reads them (`scan.RawPass`):
named, not counted. Nothing is written.
"""

from __future__ import annotations

from pathlib import Path

from rapidfuzz import fuzz, process

from harness.curator import verdicts
from harness.curator.candidate import PROMOTABLE
from harness.curator.clusters import PromotionTracker
from harness.curator.commit import CuratorPaths, cursor_start, read_json, read_text
from harness.curator.identity import IdentityIndex, archive_path, strength
from harness.curator.judge import Judgments
from harness.curator.lessondb import load
from harness.curator.matching import same_lesson
from harness.curator.promotion import Evidence
from harness.curator.record import read_record
from harness.curator.scan import RawPass
from harness.curator.text import normalize
from harness.errors import UsageError
from harness.state import memory

NEVER = {"GOTCHA": "GOTCHA", "DECISION": "DECISION", "-": "plain"}
CLOSEST = 3  # lessons named when nothing matches
CLOSEST_SCORE = 60.0  # WRatio below this is not "close"
SHOWN = 3  # unread notes of the lesson quoted
RULES = {"TRICK": "A TRICK is promoted once two distinct workers report it: notes from "
                  "different features, or from different missions.",
         "FAIL": "A FAIL is promoted once it happens in two missions.",
         "FORGOT": "A FORGOT is promoted once it is forgotten on two occasions (different "
                   "runs)."}
SEEN = {"TRICK": "was noted", "FAIL": "happened", "FORGOT": "was forgotten"}


def explain(state: Path, identity: Path, text: str, similarity: float,
            role: str | None = None, kind: str | None = None) -> str:
    """The explanation for TEXT (the I/O edge: reads the record, identity and raw.md)."""
    if not text.strip():
        raise UsageError("--explain needs the words of a lesson")
    if role is not None and not memory.NAME.fullmatch(role):
        raise UsageError(f"bad role name {role!r}")
    if kind in NEVER:
        return (f"{NEVER[kind]} notes are never promoted to identity: only TRICK, FAIL and "
                "FORGOT are. They stay in MEMORY.md and summary.md, where the curator merges "
                "and bounds them.")
    tracker, read = load(identity, similarity, write=False)
    recorded = verdicts.open_recorded(identity)
    if recorded is not None:  # a note the model judged one lesson with another is in it
        tracker.clusters.index.judge = Judgments(recorded=recorded.about)
    try:
        for candidate in read_record(identity, read):
            tracker.add(candidate)
        norm = normalize(text)
        found = [tracker.clusters.find(b, norm) for b in _buckets(tracker, role, kind)]
        lessons = [ev for cid in found if cid is not None and (ev := tracker.lesson(cid))]
        answers = verdicts.read_all(identity) if lessons else {}
        blocks = [describe(ev, place(identity, ev, similarity), judged(tracker, ev, answers))
                  for ev in lessons] or [no_lesson(text, closest(tracker, text, role, kind))]
        unread, notes = unread_notes(CuratorPaths(state, identity))
        said = [n for n in notes if role in (None, n[1]) and kind in (None, n[3])
                and says(n, text, tracker, lessons, similarity)]
    finally:
        if recorded is not None:
            recorded.close()
        tracker.store.close()
    return "\n\n".join([*blocks, *([pending(unread, said)] if unread else [])])


def closest(tracker: PromotionTracker, text: str, role: str | None,
            kind: str | None) -> list[Evidence]:
    """Up to CLOSEST lessons of `role` and `kind` whose words come nearest `text`, scored
    on the phrasings the index keeps (stored ones too)."""
    keys, owners = [], []
    for bucket in _buckets(tracker, role, kind):
        for cid, key, _ in tracker.clusters.index.phrasings(bucket):
            if (ev := tracker.lesson(cid)) is not None:
                keys.append(key)
                owners.append(ev)
    best: list[Evidence] = []
    for _, _, i in process.extract(normalize(text).key, keys, scorer=fuzz.WRatio,
                                   limit=4 * CLOSEST, score_cutoff=CLOSEST_SCORE):
        if owners[i] not in best:
            best.append(owners[i])
    return best[:CLOSEST]


def _buckets(tracker: PromotionTracker, role: str | None, kind: str | None) -> list:
    return sorted(b for b in tracker.clusters.index.buckets()
                  if role in (None, b[0]) and kind in (None, b[1]))


def rule(ev: Evidence) -> str:
    """Which rule applies to the lesson's kind, and whether and why it is met or missed."""
    return f"{RULES[ev.kind]} {'Met' if ev.due() else 'Missed'}: {_met(ev) or _missed(ev)}"


def _met(ev: Evidence) -> str:
    if not ev.due():
        return ""
    if len(ev.missions) > 1 or ev.kind == "FAIL":
        return f"it {SEEN[ev.kind]} in missions {ev.show('missions')}."
    if ev.kind == "TRICK":
        return f"it was noted for features {ev.show('features')}."
    runs = f"runs {ev.show('runs')}" if len(ev.runs) > 1 else "different features or times"
    return f"it was forgotten in {runs}."


def _missed(ev: Evidence) -> str:
    notes = "both notes" if ev.count == 2 else f"all {ev.count} notes"
    if ev.kind == "FAIL":
        return (f"it was seen only in mission {ev.missions[0]} ({_notes(ev.count)}); it "
                "needs a second mission.")
    if ev.kind == "FORGOT":
        said = (f"it was forgotten once ({ev.occasion})" if ev.count == 1 else
                f"{notes} came from one occasion ({ev.occasion}): a run restating what it "
                "forgot is one occasion")
        return f"{said}; it needs another run."
    where = f"feature {ev.worker} of mission {ev.missions[0]}"
    if ev.count == 1:
        return f"it was noted once, for {where}."
    return (f"{notes} came from {where}. A retry on the same feature read the earlier note "
            "in its prompt, so its repeats are echoes, not a second worker; a note from "
            "another feature or mission would promote it.")


def _notes(count: int) -> str:
    return "1 note" if count == 1 else f"{count} notes"


def place(identity: Path, ev: Evidence, similarity: float) -> str:
    """Where the lesson is now: in the role's identity file, its archive, or neither."""
    role_file, archive = f"identity/{ev.role}.md", f"identity/archive/{ev.role}.md"
    index = IdentityIndex(similarity)
    if memory.NAME.fullmatch(ev.role):  # a role name from the record: no path of its own
        index.add_text(role_file, read_text(identity / f"{ev.role}.md"))
        index.add_text(archive, read_text(archive_path(identity, ev.role)))
    if (line := index.line_of(role_file, ev.text)) is not None:
        by_hand = " (a line a person wrote)" if strength(line) is None else ""
        return f"now: in {role_file}{by_hand}: {line}"
    if (line := index.line_of(archive, ev.text)) is not None:
        return (f"now: in {archive}, moved out of {role_file} for room; it comes back when "
                f"the lesson recurs: {line}")
    if ev.due():
        return (f"now: in neither {role_file} nor {archive}, though due: a person deleted the "
                "line, and it stays out until the lesson is noted again.")
    return f"now: not in {role_file}; the rule is not met yet."


def describe(ev: Evidence, where: str, judge: str = "") -> str:
    """One lesson: its first words, its evidence, the judge's answers about its notes,
    its rule and where it is now."""
    seen = ev.first if ev.first == ev.last else f"{ev.first}..{ev.last}"
    runs = ev.show("runs") if ev.runs else "none recorded"
    return "\n".join([
        f"{ev.role} {ev.kind}, first noted as: {ev.text}",
        f"  evidence: {_notes(ev.count)}, {seen}; missions: {ev.show('missions')}; "
        f"features: {ev.show('features')}; runs: {runs}",
        *([f"  {judge}"] if judge else []),
        f"  rule: {rule(ev)}", f"  {where}"])


def judged(tracker: PromotionTracker, ev: Evidence, answers: verdicts.Answers) -> str:
    """What the judge's recorded answers say about the lesson's phrasings, or ""."""
    cid = next(c for c, e in tracker.lessons.items() if e is ev)
    keys = {key for c, key, _ in tracker.clusters.index.phrasings((ev.role, ev.kind))
            if c == cid}
    about = [same for (bucket, key, other), same in answers.items()
             if bucket == (ev.role, ev.kind) and (key in keys or other in keys)]
    if not about:
        return ""
    return (f"judge: {len(about)} answers recorded about its notes: {sum(about)} 'same' "
            f"(joined), {len(about) - sum(about)} 'new' (kept apart)")


def no_lesson(text: str, near: list[Evidence]) -> str:
    """What to say when no lesson in the record says `text`."""
    lines = [f"No lesson in the candidate record says this: {text}",
             "  (only TRICK, FAIL and FORGOT notes are recorded; GOTCHA, DECISION and plain "
             "notes are never promoted)"]
    if near:
        lines.append("  closest lessons:")
        lines += [f"    {ev.role} {ev.kind}: {ev.text} ({_notes(ev.count)})" for ev in near]
    return "\n".join(lines)


def says(note: tuple, text: str, tracker: PromotionTracker, lessons: list[Evidence],
         similarity: float) -> bool:
    """Whether an unread raw.md note (`memory.parse_fields`) says this lesson or `text`."""
    cid = tracker.clusters.find((note[1], note[3]), normalize(note[4]))
    return (cid is not None and tracker.lesson(cid) in lessons) or same_lesson(
        text, note[4], similarity)


def pending(unread: int, said: list[tuple]) -> str:
    """The raw.md lines the curator has not read yet, and those that say this."""
    head = (f"raw.md has {unread} line{'s' * (unread != 1)} the curator has not read yet, "
            "not in the record until the next curator pass.")
    if not said:
        return head
    says_it = "1 says" if len(said) == 1 else f"{len(said)} say"
    shown = [f"  {memory.Entry._make(n).line()}" for n in said[:SHOWN]]
    more = [f"  ... and {len(said) - SHOWN} more"] if len(said) > SHOWN else []
    return "\n".join([f"{head} Of those, {says_it} this:", *shown, *more])


def unread_notes(paths: CuratorPaths) -> tuple[int, list[tuple]]:
    """How many raw.md lines the next pass reads that no pass counted, and the promotable
    notes among them, read as that pass reads them (nothing staged)."""
    cursor = read_json(paths.cursor)
    start, counted = cursor_start(paths, cursor)
    raw = RawPass(paths.raw, start or 0, counted=counted)
    count, notes = 0, []
    for fields in raw.entries():
        count += 1
        if fields is not None and fields[3] in PROMOTABLE:
            notes.append(fields)
    # raw.md read again from its start (a hand edit): a line that does not parse is no note
    return count + (raw.scan.unparsed if start is not None else 0), notes
