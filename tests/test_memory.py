import random
import re
from datetime import datetime
from pathlib import Path

import pytest

from harness.state.memory import (
    Entry,
    append_entry,
    estimate_tokens,
    fold,
    long_note_titles,
    make_entry,
    parse_entry,
    parse_fields,
    parse_sections,
    render_sections,
    tail_entries,
    write_long_note,
)


def test_entry_line_round_trips_with_and_without_run() -> None:
    e = Entry("2026-04-24T10:05:12Z", "worker", "F-023", "TRICK",
              "psql -f drizzle/*.sql applies migrations in filename order", "1745-worker-F-023")
    assert e.line() == ("[2026-04-24T10:05:12Z] worker F-023 TRICK: psql -f drizzle/*.sql "
                        "applies migrations in filename order (run 1745-worker-F-023)")
    assert parse_entry(e.line()) == e
    plain = "[2026-04-24T10:18:33Z] validator F-023 -: F-023 verified via curl + DB row inspection"
    parsed = parse_entry(plain)
    assert parsed is not None and parsed.kind == "-" and parsed.run is None
    assert parsed.line() == plain


@pytest.mark.parametrize("line", [
    "no brackets at all",
    "[2026-04-24 10:05:12] worker F-1 TRICK: bad time",
    "[2026-04-24T10:05:12Z] worker F-023 HINT: unknown kind",
    "[2026-04-24T10:05:12Z] worker F-023 TRICK:missing space",
])
def test_lines_that_do_not_parse_give_none(line: str) -> None:
    assert parse_entry(line) is None


CORPUS = Path(__file__).resolve().parent / "data" / "curator_corpus"
TS = "[2026-04-24T10:05:12Z]"
# The entry grammar written plainly, a lazy text before an optional run: the parser, one
# greedy match with the run split off after, must read every line as this does. Only usable
# fields parse: a real time (the calendar's, by datetime), a role name, a feature id of ASCII
# digits, no control character in the text (a tab aside); one CRLF ending is taken off.
GRAMMAR = re.compile(
    r"^\[(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)\] (?P<role>[a-z][a-z0-9_-]{0,31}) "
    r"(?P<feature>F-[0-9]{3,9}|-) "
    r"(?P<kind>TRICK|GOTCHA|DECISION|FAIL|FORGOT|-): (?P<text>[^\x00-\x08\n-\x1f\x7f-\x9f]*?)"
    r"(?: \(run (?P<run>[A-Za-z0-9_.-]+)\))?\Z", re.ASCII)


def grammar_fields(line: str) -> tuple | None:
    line = line.removesuffix("\n").removesuffix("\r")
    m = GRAMMAR.match(line)
    if m is None:
        return None
    try:
        datetime.fromisoformat(m["ts"].replace("Z", "+00:00"))
    except ValueError:
        return None
    return m["ts"], m["role"], m["feature"], m["kind"], m["text"], m["run"]


@pytest.mark.parametrize("line, fields", [
    (f"{TS} worker F-023 TRICK: psql -f x (run 1745-worker-F-023)\n",
     ("2026-04-24T10:05:12Z", "worker", "F-023", "TRICK", "psql -f x", "1745-worker-F-023")),
    (f"{TS} validator - -: F-023 verified", ("2026-04-24T10:05:12Z", "validator", "-", "-",
                                             "F-023 verified", None)),
    (f"{TS} w F-001 TRICK: a (run b) (run c)", ("2026-04-24T10:05:12Z", "w", "F-001", "TRICK",
                                             "a (run b)", "c")),
    (f"{TS} w F-001 TRICK: a (run b)x (run )", ("2026-04-24T10:05:12Z", "w", "F-001", "TRICK",
                                             "a (run b)x (run )", None)),
    (f"{TS} w F-001 TRICK: a (run b c)", ("2026-04-24T10:05:12Z", "w", "F-001", "TRICK",
                                           "a (run b c)", None)),
    (f"{TS} w F-001 TRICK: ", ("2026-04-24T10:05:12Z", "w", "F-001", "TRICK", "", None)),
    (f"{TS} w F-001 TRICK:", None),
    (f"{TS} w F-001 HINT: unknown kind", None),
])
def test_parse_fields_reads_an_entry_line(line: str, fields: tuple | None) -> None:
    assert parse_fields(line) == fields == grammar_fields(line)
    assert parse_entry(line) == (None if fields is None else Entry(*fields))


def test_parse_fields_reads_the_corpus_and_fuzzed_lines_as_the_grammar_does() -> None:
    lines = [line.rstrip("\n").split("\t", 2)[2]
             for line in (CORPUS / "corpus.tsv").read_text().splitlines(True)]
    rng = random.Random(7)
    alphabet = " \t[]():-_.Z0123456789TFabc\u00a0\r\x1c\x85\u2028\u0663"
    fuzzed = []
    for _ in range(20000):
        chars = list(rng.choice(lines) or "x")
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(chars))
            chars[i:i + rng.randint(0, 1)] = rng.choice(alphabet)
        fuzzed.append("".join(chars))
    expected = [grammar_fields(line) for line in lines + fuzzed]
    assert sum(fields is not None for fields in expected[len(lines):]) > 5000
    assert [parse_fields(line) for line in lines + fuzzed] == expected
    assert [parse_entry(line) for line in lines + fuzzed] == [
        None if fields is None else Entry(*fields) for fields in expected]


def test_make_entry_folds_newlines_and_checks_fields() -> None:
    e = make_entry("worker", "F-001", "GOTCHA", "line one\nline two\t  three", run="1-worker-F-001")
    assert e.text == "line one line two three"
    assert "\n" not in e.line()
    assert fold("  a \n\n b ") == "a b"
    with pytest.raises(ValueError, match="unknown note kind"):
        make_entry("worker", "F-001", "HINT", "x")
    with pytest.raises(ValueError, match="bad feature id"):
        make_entry("worker", "../../etc/passwd", "TRICK", "x")
    with pytest.raises(ValueError, match="empty"):
        make_entry("worker", None, "TRICK", " \n ")
    with pytest.raises(ValueError, match="unknown role"):
        make_entry("Worker X", None, "TRICK", "x")


@pytest.mark.parametrize("role, feature, run, wrong", [
    ("worker\n", "F-001", None, "unknown role"),
    ("wizard", "F-001", None, "unknown role"),
    ("worker", "F-001\n", None, "bad feature id"),
    ("worker", "F-\u0660\u0660\u0661", None, "bad feature id"),
    ("worker", "F-" + "1" * 5000, None, "bad feature id"),
    ("worker", "F-001", "1-worker-F-001\n", "bad run id"),
    ("worker", "F-001", "r" * 129, "bad run id"),
])
def test_make_entry_refuses_ids_a_line_or_a_path_could_not_hold(
        role: str, feature: str, run: str | None, wrong: str) -> None:
    with pytest.raises(ValueError, match=wrong) as e:
        make_entry(role, feature, "TRICK", "x", run=run)
    assert "\n" not in str(e.value) and len(str(e.value)) < 200


def test_make_entry_escapes_control_characters_and_keeps_printable_unicode() -> None:
    e = make_entry("worker", "F-001", "TRICK", "caf\u00e9 \u2713 \x00nul \x1b[31mred\x7f \x9b")
    assert e.text == "caf\u00e9 \u2713 \\x00nul \\x1b[31mred\\x7f \\x9b"
    assert parse_entry(e.line()) == e


@pytest.mark.parametrize("ts", ["2026-02-30T10:00:00Z", "2026-13-01T10:00:00Z",
                                "0000-01-01T10:00:00Z", "2025-02-29T10:00:00Z",
                                "2026-04-31T10:00:00Z", "2026-01-00T10:00:00Z",
                                "2026-01-01T24:00:00Z", "2026-01-01T10:60:00Z"])
def test_a_time_the_calendar_does_not_have_does_not_parse(ts: str) -> None:
    assert parse_entry(f"[{ts}] worker F-001 TRICK: x") is None
    assert parse_entry("[2024-02-29T10:00:00Z] worker F-001 TRICK: x") is not None


def test_appended_entries_are_redacted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", "canary-value-123")
    append_entry(tmp_path, make_entry("worker", "F-001", "-",
                                      "token is canary-value-123 and sk-ant-abcdefghijklmnopqrstu"))
    written = (tmp_path / "raw.md").read_text()
    assert "canary-value-123" not in written and "sk-ant-" not in written
    assert written.count("[REDACTED]") == 2


def test_append_and_tail(tmp_path: Path) -> None:
    for i in range(30):
        entry = make_entry("worker", "F-001", "-", f"note {i}", ts="2026-01-01T00:00:00Z")
        append_entry(tmp_path, entry)
    last = tail_entries(tmp_path, 3)
    assert [parse_entry(line).text for line in last] == ["note 27", "note 28", "note 29"]


def test_long_notes_newest_first_and_capped(tmp_path: Path) -> None:
    write_long_note(tmp_path, "worker", "older", "# Old title\nbody", day="2026-01-01")
    write_long_note(tmp_path, "worker", "newer", "New title\nbody", day="2026-02-01")
    write_long_note(tmp_path, "planner", "third", "## Third\n", day="2026-01-15")
    titles = long_note_titles(tmp_path, 2)
    assert titles == [
        {"file": "memory/2026-02-01-worker-newer.md", "title": "New title"},
        {"file": "memory/2026-01-15-planner-third.md", "title": "Third"},
    ]
    with pytest.raises(ValueError, match="already exists"):
        write_long_note(tmp_path, "worker", "older", "x", day="2026-01-01")
    with pytest.raises(ValueError, match="bad slug"):
        write_long_note(tmp_path, "worker", "../escape", "x")


def test_sections_round_trip() -> None:
    text = "# Summary\n\n## Lessons\n- a\n- b\n\n## Avoid\n- c\n"
    sections = parse_sections(text)
    assert sections["Lessons"] == ["- a", "- b", ""]
    out = render_sections("Summary", sections, ("Lessons", "Decisions (current)", "Avoid"))
    assert out == "# Summary\n\n## Lessons\n- a\n- b\n\n## Decisions (current)\n\n## Avoid\n- c\n"


def test_token_estimate_is_a_quarter_of_characters_rounded_up() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
