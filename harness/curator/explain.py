"""`run.sh curator --explain TEXT`: why a lesson was promoted to identity, or why not.

The lesson is found the way a curator run would file a new note saying TEXT: the
candidate record beside the identity files (its digest, then the lines after it), matched
per role and kind (`clusters.Clusters.find`, with the judge's recorded answers). Its
evidence is then read against its kind's rule (`promotion.Evidence.due`), and the role's
identity file and its archive are searched for it in any words, as
`identity.IdentityIndex.knows` does. Nothing is written: the digest is loaded, never saved.
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
from harness.curator.scan import Counted, checked_keys
from harness.curator.text import normalize
from harness.errors import UsageError
from harness.state import memory

NEVER = {"GOTCHA": "GOTCHA", "DECISION": "DECISION", "-": "plain"}
CLOSEST = 3  # lessons named when nothing matches
CLOSEST_SCORE = 60.0  # WRatio below this is not "close"
UNREAD_MATCHED = 4 << 20  # past this many unread raw.md bytes they are counted, not matched
SHOWN = 3  # unread notes of the lesson quoted


def explain(state: Path, identity: Path, text: str, similarity: float,
            role: str | None = None, kind: str | None = None) -> str:
    """The explanation for TEXT (the I/O edge: reads the record, identity and raw.md)."""
    if not text.strip():
        raise UsageError("--explain needs the words of a lesson")
    if role is not None and not memory.NAME.fullmatch(role):
        raise UsageError(f"bad role name {role!r}")
    if kind in NEVER:
        return never_promoted(kind)
    tracker, read = load(identity, similarity, write=False)
    recorded = verdicts.open_recorded(identity)
    if recorded is not None:  # a note the model judged one lesson with another is in it
        tracker.clusters.index.judge = Judgments(recorded=recorded.about)
    try:
        for candidate in read_record(identity, read):
            tracker.add(candidate)
        lessons = find_lessons(tracker, text, role, kind)
        files = {ev.role: (read_text(identity / f"{ev.role}.md"),
                           read_text(archive_path(identity, ev.role)))
                 for ev in lessons if memory.NAME.fullmatch(ev.role)}
        answers = verdicts.read_all(identity) if lessons else {}
        blocks = [describe(ev, place(ev, *files.get(ev.role, ("", "")), similarity),
                           judged(tracker, ev, answers)) for ev in lessons]
        if not blocks:
            blocks = [no_lesson(text, closest(tracker, text, role, kind))]
        unread, notes = unread_lines(CuratorPaths(state, identity))
        said = [n for n in notes if says(n, text, tracker, lessons, similarity, role, kind)]
    finally:
        if recorded is not None:
            recorded.close()
        tracker.store.close()
    return "\n\n".join([*blocks, *([pending(unread, said)] if unread else [])])


def find_lessons(tracker: PromotionTracker, text: str, role: str | None = None,
                 kind: str | None = None) -> list[Evidence]:
    """The lessons, one per role and kind at most, that a note saying `text` would join."""
    norm, clusters = normalize(text), tracker.clusters
    found = []
    for bucket in _buckets(tracker, role, kind):
        cid = clusters.find(bucket, norm)
        if cid is not None and (ev := tracker.lesson(cid)) is not None:
            found.append(ev)
    return found


def closest(tracker: PromotionTracker, text: str, role: str | None = None,
            kind: str | None = None) -> list[Evidence]:
    """Up to CLOSEST lessons whose words come nearest `text`, scored on the phrasings the
    index keeps (already normalised: no lesson is normalised again)."""
    keys: list[str] = []
    owners: list[Evidence] = []
    index = tracker.clusters.index
    for bucket in _buckets(tracker, role, kind):
        for cid, key, _ in index.phrasings(bucket):
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
    if ev.kind == "TRICK":
        return _trick(ev)
    if ev.kind == "FAIL":
        head = "A FAIL is promoted once it happens in two missions."
        if ev.due():
            return f"{head} Met: it happened in missions {ev.show('missions')}."
        return (f"{head} Missed: it was seen only in mission {ev.missions[0]} "
                f"({_notes(ev.count)}); it needs a second mission.")
    return _forgot(ev)


def _trick(ev: Evidence) -> str:
    head = ("A TRICK is promoted once two distinct workers report it: notes from different "
            "features, or from different missions.")
    if ev.due():
        if len(ev.missions) > 1:
            return f"{head} Met: it was noted in missions {ev.show('missions')}."
        return f"{head} Met: it was noted for features {ev.show('features')}."
    where = f"feature {ev.worker} of mission {ev.missions[0]}"
    if ev.count == 1:
        return f"{head} Missed: it was noted once, for {where}."
    return (f"{head} Missed: {_all(ev.count)} came from {where}. A retry on the same "
            "feature read the earlier note in its prompt, so its repeats are echoes, not a "
            "second worker; a note from another feature or mission would promote it.")


def _forgot(ev: Evidence) -> str:
    head = "A FORGOT is promoted once it is forgotten on two occasions (different runs)."
    if ev.due():
        if len(ev.missions) > 1:
            return f"{head} Met: it was forgotten in missions {ev.show('missions')}."
        runs = f"runs {ev.show('runs')}" if len(ev.runs) > 1 else "different features or times"
        return f"{head} Met: it was forgotten in {runs}."
    if ev.count == 1:
        return f"{head} Missed: it was forgotten once ({ev.occasion}); it needs another run."
    return (f"{head} Missed: {_all(ev.count)} came from one occasion ({ev.occasion}): a "
            "run restating what it forgot is one occasion; it needs another run.")


def _notes(count: int) -> str:
    return "1 note" if count == 1 else f"{count} notes"


def _all(count: int) -> str:
    return "both notes" if count == 2 else f"all {count} notes"


def never_promoted(kind: str) -> str:
    """Why a note of a kind no rule promotes never reaches identity."""
    return (f"{NEVER[kind]} notes are never promoted to identity: only TRICK, FAIL and FORGOT "
            "are. They stay in MEMORY.md and summary.md, where the curator merges and bounds "
            "them.")


def find_line(text: str, lesson: str, similarity: float) -> str | None:
    """The line of an identity file (or its archive) that says `lesson` in any words."""
    index = IdentityIndex(similarity)
    index.add_text("", text)
    return index.line_of("", lesson)


def place(ev: Evidence, role_text: str, archive_text: str, similarity: float) -> str:
    """Where the lesson is now, given the role's identity file and its archive."""
    role_file, archive = f"identity/{ev.role}.md", f"identity/archive/{ev.role}.md"
    line = find_line(role_text, ev.text, similarity)
    if line is not None:
        by_hand = " (a line a person wrote)" if strength(line) is None else ""
        return f"now: in {role_file}{by_hand}: {line}"
    line = find_line(archive_text, ev.text, similarity)
    if line is not None:
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
    joined = sum(about)
    return (f"judge: {len(about)} answers recorded about its notes: {joined} 'same' "
            f"(joined), {len(about) - joined} 'new' (kept apart)")


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
         similarity: float, role: str | None, kind: str | None) -> bool:
    """Whether an unread raw.md note (`memory.parse_fields`) says this lesson or `text`."""
    _, n_role, _, n_kind, n_text, _ = note
    if n_kind not in PROMOTABLE or role not in (None, n_role) or kind not in (None, n_kind):
        return False
    cid = tracker.clusters.find((n_role, n_kind), normalize(n_text))
    if cid is not None and tracker.lesson(cid) in lessons:
        return True
    return same_lesson(text, n_text, similarity)


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


def unread_lines(paths: CuratorPaths) -> tuple[int, list[tuple]]:
    """How many complete raw.md lines follow the cursor, and the promotable notes among them
    (past UNREAD_MATCHED bytes the lines are only counted)."""
    cursor = read_json(paths.cursor) if paths.cursor.exists() else {}
    start = cursor_start(paths, cursor)
    # None: the next pass reads raw.md whole, and counts again none of what it counted
    counted = Counted(checked_keys(cursor.get("counted"))) if start is None else None
    count, notes = 0, []
    try:
        with open(paths.raw, "rb") as f:
            f.seek(start or 0)
            big = paths.raw.stat().st_size - (start or 0) > UNREAD_MATCHED
            for raw in f:
                if not raw.endswith(b"\n"):
                    break
                fields = None if big else memory.parse_fields(raw.decode("utf-8", "replace"))
                if counted is not None and not big and (fields is None or counted.take(fields)):
                    continue  # read before the edit: a line that does not parse is no note
                count += 1
                if fields is not None and fields[3] in PROMOTABLE:
                    notes.append(fields)
    except FileNotFoundError:
        pass
    return count, notes
