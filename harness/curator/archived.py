"""Which archived identity lines may say a lesson, without reading the whole archive.

`identity/archive/<role>.md` only grows: each time identity passes its bound, the weakest
lines are appended to it (`identity.bound_role_file`). With a judge, a due lesson that
identity does not hold is looked for there (`identity.IdentityIndex.archived_line_of`), and
after a long history the archive holds tens of thousands of lines: reading and normalising
them all took a cron pass over 10 new entries from 0.09 s to 5.4 s (`bench/cron.py
--answers`, 1M entries of history).

So a full-text index of the archives in the curator database (`curatordb`: SQLite FTS5)
holds each archived line's lesson, and a lookup reads only the CANDIDATES lines sharing
the most of a lesson's rarer words (bm25). The files stay the truth: the index records
how many bytes of each it has read and reads on from there, and starts over when a file
is shorter than that (a person cut it); a damaged database is set aside and made anew. A
dry run writes nothing: the part not indexed yet is read from the file. Without FTS5 in
the SQLite at hand, every line of the archive is a candidate.
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from pathlib import Path

from harness.curator import curatordb
from harness.curator.identity import archive_path, identity_lessons
from harness.curator.text import STOPWORDS

CANDIDATES = 8  # archived lines scored per due lesson, sharing the most of its rarer words
RAREST = 4  # of a lesson's words, the rarest searched for,
SCORED = 512  # while the lines holding them are at most this many (bm25 scores each)
_WORD = re.compile(r"[a-z0-9]+")
class ArchiveSearch:
    """Candidate archived lines for a lesson, per role (see the module docstring)."""

    def __init__(self, identity: Path, *, write: bool = True,
                 said: list[str] | None = None) -> None:
        self.identity, self.write, self.said = identity, write, said
        self._conn: sqlite3.Connection | None = None
        self._tails: dict[str, list[str]] = {}  # role -> archived lines not in the index

    def lines(self, role: str, lesson: str) -> list[str]:
        """The archived lines of `role` that may say `lesson`."""
        if role not in self._tails:
            self._tails[role] = self._caught_up(role)
        words = sorted(_words(lesson))
        if not words or self._conn is None:
            return self._tails[role]
        try:
            return self._search(role, words) + self._tails[role]
        except sqlite3.OperationalError:  # locked past the timeout: this pass reads the file
            self.close()
        except sqlite3.DatabaseError:  # a damaged index: the next pass makes it again
            self._drop()
        self._tails[role] = _lines_from(archive_path(self.identity, role), 0)[1]
        return self._tails[role]

    def _search(self, role: str, words: list[str]) -> list[str]:
        """The CANDIDATES indexed lines that share the most of the rarest of `words`."""
        assert self._conn is not None
        # scoring every line with a common word is most of a lookup's cost: only the
        # rarest words are searched for (FTS5's own counts read every line they are in)
        counted = self._conn.execute(
            "SELECT lines, word FROM archive_words WHERE role = ? AND word IN "
            f"({', '.join('?' * len(words))})", (role, *words)).fetchall()
        rarest, rows = [], 0
        for lines, word in sorted(counted)[:RAREST]:
            rows += lines
            if rarest and rows > SCORED:
                break
            rarest.append(word)
        if not rarest:
            return []
        query = " OR ".join(f'"{w}"' for w in rarest)
        return [line for (line,) in self._conn.execute(
            "SELECT line FROM archive_lines WHERE archive_lines MATCH ? AND role = ? "
            "ORDER BY rank LIMIT ?",
            (f"lesson : ({query})", role, CANDIDATES))]

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _drop(self) -> None:
        """Close the damaged database and, unless a dry run, set it aside: the next pass
        makes the index again from the files."""
        self.close()
        if self.write:
            curatordb.set_aside(self.identity, self.said)

    def _caught_up(self, role: str) -> list[str]:
        """Bring the index up to the end of `role`'s archive; the lines it does not hold
        (a dry run's tail, or every line when there is no index to read)."""
        path = archive_path(self.identity, role)
        if not path.exists():
            return []
        conn = self._connect()
        if conn is None:
            return _lines_from(path, 0)[1]
        try:
            conn.execute("BEGIN IMMEDIATE" if self.write else "BEGIN")
            try:
                new = self._read_on(conn, role, path)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        except sqlite3.OperationalError:  # locked past the timeout: this pass reads the file
            self.close()
            return _lines_from(path, 0)[1]
        except sqlite3.DatabaseError:
            self._drop()
            return _lines_from(path, 0)[1]
        return new

    def _read_on(self, conn: sqlite3.Connection, role: str, path: Path) -> list[str]:
        """Within a transaction: index `role`'s archive from where the index stopped, or
        (a dry run) return those lines."""
        row = conn.execute("SELECT bytes FROM archive_read WHERE role = ?", (role,)).fetchone()
        start = row[0] if row else 0
        if start > path.stat().st_size:  # the file was cut: read it all again
            start = 0
            if self.write:
                conn.execute("DELETE FROM archive_lines WHERE role = ?", (role,))
                conn.execute("DELETE FROM archive_words WHERE role = ?", (role,))
        end, new = _lines_from(path, start)
        if not self.write:
            return new
        _insert(conn, role, new)
        conn.execute("INSERT OR REPLACE INTO archive_read VALUES (?, ?)", (role, end))
        return []

    def _connect(self) -> sqlite3.Connection | None:
        """The database (migrated first if need be); None without one to read (a dry run
        before any pass made it), FTS5 to index with, or past a lock's timeout."""
        if self._conn is None:
            try:
                conn = curatordb.connect(self.identity, write=self.write, said=self.said)
            except (sqlite3.OperationalError, OSError):  # locked, a full disk: read the files
                return None
            if conn is None:
                return None
            try:
                conn.execute("SELECT 1 FROM archive_lines LIMIT 1").fetchall()
            except sqlite3.OperationalError:  # no FTS5: no archive_lines
                conn.close()
                return None
            self._conn = conn
        return self._conn


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in STOPWORDS}


def _insert(conn: sqlite3.Connection, role: str, lines: list[str]) -> None:
    """Index `lines` of `role`'s archive, and count their words."""
    counts: Counter[str] = Counter()
    rows = []
    for line in lines:
        lesson = " ".join(identity_lessons(line))
        rows.append((role, line, lesson))
        counts.update(_words(lesson))
    conn.executemany("INSERT INTO archive_lines (role, line, lesson) VALUES (?, ?, ?)", rows)
    conn.executemany("INSERT INTO archive_words VALUES (?, ?, ?) ON CONFLICT (role, word) "
                     "DO UPDATE SET lines = lines + excluded.lines",
                     [(role, word, n) for word, n in counts.items()])


def _lines_from(path: Path, start: int) -> tuple[int, list[str]]:
    """The offset after the last complete line from byte `start`, and those lines (none
    when there is no file)."""
    try:
        with open(path, "rb") as f:
            f.seek(start)
            data = f.read()
    except FileNotFoundError:
        return start, []
    end = data.rfind(b"\n") + 1
    text = data[:end].decode("utf-8", "replace")
    return start + end, [line.strip() for line in text.splitlines() if line.strip()]
