"""Curator clusters against the truth: lessons with no unique token, in many phrasings.

    .venv/bin/python bench/lessons.py                     # 10k and 100k entries
    .venv/bin/python bench/lessons.py --sizes 2000 --examples
    .venv/bin/python bench/lessons.py --sizes 10000 --judge   # with a perfect judge

The lessons are combinations over one shared vocabulary: a command (tool, subcommand,
flag), a file, a setting (env var, config key, port or version, with its value) and an
effect. They come in families of four, a 2x2 grid over two of the slots subcommand, flag,
file and value, so every term of a lesson is in another lesson too and each lesson has
near misses that share everything but one technical term. Each note is one lesson in one
of four voices (imperative, first person, reordered, shortened), its code in backticks or
bare, the tool by its full or short name (`kubectl`/`k`), sometimes after a clause about
what went wrong first, with a trailing result (`-> 14s instead of 3min`), or lower-cased;
every phrasing keeps all the lesson's technical terms. Every lesson is noted at least
twice, the rest with a long-tailed popularity.

A mission's raw.md of N entries (about 65% TRICK, FAIL and FORGOT notes from workers on
400 features, the rest plain notes) goes through the real curator
(`harness.curator.curate.curate`, default settings), after a candidate record of N/10
notes from three other missions. Then the candidate record the run wrote is read back
(`record.read_record`: the other missions' lines, then this run's notes in raw.md order)
and clustered with the curator's own `PromotionTracker.assign_text` per role and kind, in that
order: what the run's planner did (`PromotionTracker.add` for the record, then the pass's
notes). The sizes of those clusters are checked against the digest the run wrote (each
lesson's evidence count), so a replay that drifted from the run stops the benchmark
instead of reporting. Pairwise precision and recall are counted from the contingency
table of (cluster, true lesson), never by listing pairs.

With --judge, the run and the replay have a judge that answers every question the
curator asks (`judge`) from the true lessons, at once and without a budget: what
`curator.mode: model` reaches with a model that never errs, if every question could be
asked (a real pass asks `curator.questions` at most).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from corpus_quality import PerfectJudge, stored_lessons  # noqa: E402 - after the path is set

from harness.curator.curate import CuratorSettings, curate  # noqa: E402
from harness.curator.judge import Judgments  # noqa: E402
from harness.curator.promotion import PromotionTracker  # noqa: E402
from harness.curator.record import RecordRead, read_record  # noqa: E402


class Tool(NamedTuple):
    full: str
    short: str  # another name for it, "" when it has none
    subs: tuple[str, ...]
    flags: tuple[str, ...]


class Setting(NamedTuple):
    name: str
    sep: str
    values: tuple[str, ...]


TOOLS = (
    Tool("docker compose", "docker-compose", ("up", "build", "run", "pull"),
         ("--build", "--no-cache", "--force-recreate", "--remove-orphans", "--wait")),
    Tool("kubectl", "k", ("apply", "diff", "delete", "logs"),
         ("--prune", "--force", "--server-side", "--dry-run=client", "--wait")),
    Tool("terraform", "tf", ("plan", "apply", "init", "import"),
         ("-refresh=false", "-lock=false", "-upgrade", "-auto-approve", "-parallelism=4")),
    Tool("uv run pytest", "pytest", ("",), ("-x", "--lf", "--ff", "-q", "--no-cov")),
    Tool("pnpm run", "pnpm", ("test", "build", "lint", "typecheck"),
         ("--filter=web", "--silent", "--parallel", "-r", "--if-present")),
    Tool("npx playwright", "playwright", ("test", "install", "show-report"),
         ("--headed", "--workers=1", "--retries=2", "--project=chromium", "--update-snapshots")),
    Tool("git", "", ("stash", "rebase", "clean", "push"),
         ("-u", "--autostash", "-fdx", "--force-with-lease", "--no-verify")),
    Tool("alembic", "", ("upgrade", "downgrade", "revision", "stamp"),
         ("--sql", "--autogenerate", "--purge", "-x")),
    Tool("cargo", "", ("test", "build", "clippy", "run"),
         ("--release", "--locked", "--all-features", "-j2", "--offline")),
    Tool("helm", "", ("upgrade", "install", "template", "rollback"),
         ("--atomic", "--wait", "--install", "--reuse-values", "--dry-run")),
    Tool("npm", "", ("ci", "install", "test", "audit"),
         ("--legacy-peer-deps", "--omit=dev", "--ignore-scripts", "--no-audit",
          "--prefer-offline")),
    Tool("go", "", ("test", "build", "vet", "generate"),
         ("-race", "-count=1", "-short", "-v", "-mod=vendor")),
)
FILES = ("docker-compose.yml", "docker-compose.override.yml", ".env", ".env.local", ".env.test",
         "pyproject.toml", "package.json", "pnpm-lock.yaml", "Cargo.lock", "alembic.ini",
         "conftest.py", "playwright.config.ts", "values.yaml", "main.tf", "terraform.tfvars",
         "tsconfig.json", "Dockerfile", "Makefile", "k8s/deploy.yaml", "migrations/env.py",
         "vite.config.ts", "go.mod", ".npmrc", "setup.cfg")
SETTINGS = (
    Setting("PGPORT", "=", ("5432", "5433", "55432")),
    Setting("NODE_ENV", "=", ("test", "production", "development")),
    Setting("CI", "=", ("1", "true")),
    Setting("PYTHONPATH", "=", ("src", ".", "app")),
    Setting("TZ", "=", ("UTC", "Europe/Berlin")),
    Setting("PORT", "=", ("3000", "8080", "5173")),
    Setting("LOG_LEVEL", "=", ("debug", "warn")),
    Setting("node", " ", ("18", "20", "22")),
    Setting("python", " ", ("3.11", "3.12")),
    Setting("testTimeout", "=", ("30000", "60000")),
    Setting("workers", "=", ("1", "4")),
    Setting("retries", "=", ("0", "2")),
    Setting("NODE_OPTIONS", "=", ("--max-old-space-size=4096", "--max-old-space-size=8192")),
    Setting("DOCKER_BUILDKIT", "=", ("0", "1")),
    Setting("REDIS_URL", "=", ("redis://localhost:6379", "redis://localhost:6380")),
)
EFFECTS = (  # (as a clause, in brief)
    ("the containers keep serving the old image", "stale image"),
    ("the test database stays empty", "empty test db"),
    ("migrations run against the dev database", "wrong database"),
    ("the build cache hides the change", "stale cache"),
    ("the job hangs waiting for a prompt", "hangs on a prompt"),
    ("CI reads a different config than the laptop", "config drift"),
    ("snapshots get rewritten without review", "snapshots overwritten"),
    ("the lockfile changes under you", "lockfile churn"),
    ("half the tests are silently skipped", "tests skipped"),
    ("the server dies on start with a port clash", "port clash"),
    ("secrets from the laptop leak into the build", "secrets leak"),
    ("the rollout never picks up the new config", "old config"),
    ("date tests fail after midnight", "date flakes"),
    ("memory runs out halfway through", "out of memory"),
    ("the old schema sticks around", "stale schema"),
    ("every retry starts from scratch", "no resume"),
    ("the watcher never exits", "never exits"),
    ("the logs are too quiet to debug", "quiet logs"),
    ("the fixtures load in the wrong order", "fixture order"),
    ("dependencies resolve to other versions", "version drift"),
)
# per kind, a template per voice: C the command, S the setting, F the file, E/e the effect
VOICES = {
    "TRICK": {"imperative": "run {C} with {S} and {F} in place, otherwise {E}",
              "first-person": "I ran {C} with {S} and {F} in place and it worked; without "
                              "them {E}",
              "reordered": "{E} unless {F} and {S} are in place before {C}",
              "shortened": "{C} + {S} + {F} ({e})"},
    "FAIL": {"imperative": "expect {C} to fail with {S} and {F}: {E}",
             "first-person": "I ran {C} with {S} and {F} and it failed: {E}",
             "reordered": "{E}: {C} fails when {F} has {S}",
             "shortened": "{C} fails on {S} + {F} ({e})"},
    "FORGOT": {"imperative": "forgot to set {S} and check {F} before {C}, so {E}",
               "first-person": "I forgot {S} and {F} when I ran {C}, so {E}",
               "reordered": "{E} because {S} and {F} were missing for {C}",
               "shortened": "forgot {S} + {F} for {C} ({e})"},
}
CONTEXTS = ("the first attempt timed out in CI", "after a red build on main",
            "lost an hour on this", "the seed step broke first",
            "tests passed locally but not in CI", "the review bot flagged it first",
            "staging went down before this")
RESULTS = ("14s instead of 3min", "40s instead of 6min", "green on the second try",
           "2 flaky tests gone", "build went from 9min to 90s", "fixed for good")
PLAIN = ("{f} done, tests green", "started on {f}", "{f} verified via curl + DB row inspection",
         "{f} needs a migration, writing it now", "read the plan, {f} is next",
         "{f}: refactored the handler into lib/", "{f} acceptance criteria all met")
SLOTS = ("sub", "flag", "file", "value")
KINDS = ("TRICK",) * 4 + ("FAIL",) * 3 + ("FORGOT",) * 3
MISSIONS = ("alpha", "beta", "gamma")  # the other missions in the candidate record
STYLES = ("imperative", "first-person", "reordered", "shortened", "backticks", "bare",
          "short-name", "context", "result", "lower-case")
START = 1767225600  # 2026-01-01
NOW = "2026-07-01T00:00:00Z"


class Lesson(NamedTuple):
    """One true lesson: its bucket and its combination of terms."""

    id: int
    family: int
    role: str
    kind: str
    tool: int
    sub: str
    flag: str
    file: str
    setting: int
    value: str
    effect: int

    def terms(self) -> tuple:
        """What makes it distinct: its technical terms."""
        return self.tool, self.sub, self.flag, self.file, self.setting, self.value


@dataclass(frozen=True)
class Note:
    """One TRICK, FAIL or FORGOT note and the lesson it truly says."""

    lesson: int
    styles: tuple[str, ...]
    ts: str
    mission: str
    role: str
    kind: str
    feature: str
    run: str
    text: str

    def line(self) -> str:
        """The raw.md line."""
        return f"[{self.ts}] {self.role} {self.feature} {self.kind}: {self.text} (run {self.run})"

    def record_line(self, seq: int) -> str:
        """The candidate record line (as another mission's curator wrote it)."""
        return "\t".join((f"seed{self.mission}:{seq}", self.ts, self.mission, self.role,
                          self.kind, self.feature, self.run, self.text))


def make_family(rng: random.Random, family: int, first: int) -> list[Lesson]:
    """Four lessons: a base and its variants in two slots, each varied alone and together."""
    tool = rng.randrange(len(TOOLS))
    subs, flags = TOOLS[tool].subs, TOOLS[tool].flags
    setting = rng.randrange(len(SETTINGS))
    options = {"sub": subs, "flag": flags, "file": FILES, "value": SETTINGS[setting].values}
    base = {slot: rng.choice(options[slot]) for slot in SLOTS}
    varied = rng.sample([s for s in SLOTS if len(options[s]) > 1], 2)
    other = {s: rng.choice([v for v in options[s] if v != base[s]]) for s in varied}
    kind, effect = rng.choice(KINDS), rng.randrange(len(EFFECTS))
    out = []
    for n, (a, b) in enumerate(((0, 0), (0, 1), (1, 0), (1, 1))):
        terms = dict(base)
        terms.update({s: other[s] for s, on in zip(varied, (a, b), strict=True) if on})
        out.append(Lesson(first + n, family, "worker", kind, tool, terms["sub"], terms["flag"],
                          terms["file"], setting, terms["value"], effect))
    return out


def make_lessons(pool: int, seed: int) -> list[Lesson]:
    """At least `pool` lessons in families of four, no two with the same terms."""
    rng = random.Random(seed)
    lessons: list[Lesson] = []
    seen: set[tuple] = set()
    while len(lessons) < pool:
        family = make_family(rng, len(lessons) // 4, len(lessons))
        terms = [lesson.terms() for lesson in family]
        if seen.isdisjoint(terms):
            seen.update(terms)
            lessons += family
    return lessons


def phrase(lesson: Lesson, rng: random.Random) -> tuple[str, tuple[str, ...]]:
    """One note's text for `lesson` in a random style, and the style's labels."""
    tool = TOOLS[lesson.tool]
    voice = rng.choice(tuple(VOICES[lesson.kind]))
    quoted = rng.random() < 0.5
    styles = [voice, "backticks" if quoted else "bare"]
    name = tool.full
    if tool.short and rng.random() < 0.5:
        name = tool.short
        styles.append("short-name")
    setting = SETTINGS[lesson.setting]
    parts = {"C": " ".join(w for w in (name, lesson.sub, lesson.flag) if w), "F": lesson.file,
             "S": f"{setting.name}{setting.sep}{lesson.value}"}
    if quoted:
        parts = {k: f"`{v}`" for k, v in parts.items()}
    effect, brief = EFFECTS[lesson.effect]
    text = VOICES[lesson.kind][voice].format(**parts, E=effect, e=brief)
    if rng.random() < 0.2:
        text = f"{rng.choice(CONTEXTS)}; {text}"
        styles.append("context")
    if rng.random() < 0.2:
        text = f"{text} -> {rng.choice(RESULTS)}"
        styles.append("result")
    if rng.random() < 0.2:
        styles.append("lower-case")
        return text.lower(), tuple(styles)
    return text[0].upper() + text[1:], tuple(styles)


def popular(rng: random.Random, pool: int, count: int) -> list[int]:
    """`count` lesson numbers: each of `pool` twice, the rest long-tailed, shuffled."""
    picks = [k for k in range(pool) for _ in (0, 1)][:count]
    picks += [int(pool * rng.random() ** 3) for _ in range(count - len(picks))]
    rng.shuffle(picks)
    return picks


def generate(n: int, seed: int = 1) -> tuple[list[Lesson], list[Note], list[Note | str]]:
    """The lessons, the other missions' record notes and raw.md's `n` lines (a Note or a
    plain note's line each), byte for byte the same for the same `n` and `seed`."""
    rng = random.Random(seed)
    lessons = make_lessons(max(n // 10, 8), seed)
    is_lesson = [rng.random() < 0.65 for _ in range(n)]
    n_record = n // 10
    picks = iter(popular(rng, len(lessons), n_record + sum(is_lesson)))
    record = [make_note(rng, lessons[next(picks)], START - 30 * 86400 + i * 60,
                        rng.choice(MISSIONS)) for i in range(n_record)]
    raw: list[Note | str] = []
    t, step = START, max(1, 180 * 86400 // max(n, 1))
    for lesson_note in is_lesson:
        t += rng.randint(1, 2 * step)
        if lesson_note:
            raw.append(make_note(rng, lessons[next(picks)], t, "bench"))
        else:
            role = rng.choice(("worker", "worker", "validator", "planner"))
            feature = f"F-{rng.randint(1, 400):03d}"
            text = rng.choice(PLAIN).format(f=feature)
            raw.append(f"[{stamp(t)}] {role} {feature} -: {text} (run {t}-{role}-{feature})")
    return lessons, record, raw


def make_note(rng: random.Random, lesson: Lesson, t: int, mission: str) -> Note:
    text, styles = phrase(lesson, rng)
    feature = f"F-{rng.randint(1, 400):03d}"
    run = f"{t - rng.randint(0, 3000)}-{lesson.role}-{feature}"
    return Note(lesson.id, styles, stamp(t), mission, lesson.role, lesson.kind, feature, run,
                text)


def stamp(t: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def write(folder: Path, record: list[Note], raw: list[Note | str]) -> tuple[Path, Path]:
    """raw.md and the candidate record under `folder`: (state, identity)."""
    state, identity = folder / "state", folder / "identity"
    state.mkdir(parents=True)
    identity.mkdir(parents=True)
    (identity / ".candidates.log").write_text(
        "".join(note.record_line(i) + "\n" for i, note in enumerate(record)), encoding="utf-8")
    (state / "raw.md").write_text(
        "".join((x.line() if isinstance(x, Note) else x) + "\n" for x in raw), encoding="utf-8")
    return state, identity


# ---- the curator's clusters against the truth ----


@dataclass(frozen=True)
class Pairs:
    """Pairs of notes of one role and kind: in one cluster and of one lesson, in one
    cluster, and of one lesson."""

    both: int
    clustered: int
    related: int

    @property
    def precision(self) -> float:
        return self.both / self.clustered if self.clustered else 1.0

    @property
    def recall(self) -> float:
        return self.both / self.related if self.related else 1.0


def count_pairs(clusters: Sequence[Hashable], lessons: Sequence[Hashable]) -> Pairs:
    """Pair counts from the contingency table of (cluster, lesson): n*(n-1)/2 per cell."""
    def pairs(counts: Counter) -> int:
        return sum(n * (n - 1) // 2 for n in counts.values())

    return Pairs(pairs(Counter(zip(clusters, lessons, strict=True))), pairs(Counter(clusters)),
                 pairs(Counter(lessons)))


def curator_clusters(identity: Path, notes: list[Note], similarity: float,
                     judge: Judgments | None = None) -> list[tuple]:
    """Each note's cluster as the run made it, (role, kind, cluster id), from the record it
    wrote (see the module docstring), with the run's `judge`; checked against the run's
    digest."""
    clusters = PromotionTracker(similarity)
    clusters.index.judge = judge
    out = []
    candidates = list(read_record(identity, RecordRead()))
    if [c.text for c in candidates] != [n.text for n in notes]:
        raise SystemExit("bench: the candidate record does not hold the generated notes")
    for c in candidates:
        out.append((c.role, c.kind, clusters.assign_text((c.role, c.kind), c.text)))
    kept = Counter((ev.role, ev.kind, ev.count) for ev in stored_lessons(identity, similarity))
    replayed = Counter((role, kind, n) for (role, kind, _), n in Counter(out).items())
    if kept != replayed:
        raise SystemExit("bench: the replayed clusters differ from the run's lesson database")
    return out


@dataclass(frozen=True)
class Figures:
    entries: int
    notes: int  # TRICK, FAIL and FORGOT notes scored: the record's and raw.md's
    lessons: int
    clusters: int
    pairs: Pairs
    curate_seconds: float
    seconds: float  # generating, curating and scoring


def measure(n: int, seed: int = 1, judged: bool = False) -> Figures:
    """Run the curator over `n` generated entries and score its clusters; `judged`: with a
    perfect judge (see the module docstring)."""
    started = time.perf_counter()
    _, record, raw = generate(n, seed)
    notes = record + [x for x in raw if isinstance(x, Note)]
    settings = CuratorSettings()
    lesson_of = {note.text: str(note.lesson) for note in notes}
    with tempfile.TemporaryDirectory(prefix=f"lessons-bench-{n}-") as tmp:
        state, identity = write(Path(tmp), record, raw)
        curating = time.perf_counter()
        curate(state, identity, "bench", settings, now=NOW,
               judge=PerfectJudge(lesson_of, []) if judged else None)
        curate_seconds = time.perf_counter() - curating
        clusters = curator_clusters(identity, notes, settings.similarity,
                                    PerfectJudge(lesson_of, []) if judged else None)
    truth = [(note.role, note.kind, note.lesson) for note in notes]
    return Figures(n, len(notes), len(set(truth)), len(set(clusters)),
                   count_pairs(clusters, truth), curate_seconds,
                   time.perf_counter() - started)


def show_examples(n: int, seed: int = 1) -> None:
    """Notes of the most noted lesson in different styles, and one of a near miss."""
    lessons, record, raw = generate(n, seed)
    notes = record + [x for x in raw if isinstance(x, Note)]
    top = Counter(note.lesson for note in notes).most_common(1)[0][0]
    styles: dict[tuple, Note] = {}
    for note in notes:
        if note.lesson == top:
            styles.setdefault(note.styles[:1], note)
    for note in styles.values():
        print(f"lesson {top} ({', '.join(note.styles)}): {note.text}")
    mine = lessons[top]
    near = next(x for x in lessons if x.family == mine.family
                and sum(a != b for a, b in zip(x.terms(), mine.terms(), strict=True)) == 1)
    note = next(note for note in notes if note.lesson == near.id)
    print(f"near miss, lesson {near.id} ({', '.join(note.styles)}): {note.text}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--examples", action="store_true", help="print example notes first")
    parser.add_argument("--judge", action="store_true",
                        help="with a judge that answers from the true lessons")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    if args.examples:
        show_examples(sizes[0], args.seed)
    print(f"{'entries':>8} {'notes':>7} {'lessons':>7} {'clusters':>8} {'precision':>9} "
          f"{'recall':>6} {'curate-s':>8} {'total-s':>7}")
    for n in sizes:
        f = measure(n, args.seed, args.judge)
        print(f"{n:>8} {f.notes:>7} {f.lessons:>7} {f.clusters:>8} {f.pairs.precision:>9.4f} "
              f"{f.pairs.recall:>6.4f} {f.curate_seconds:>8.2f} {f.seconds:>7.2f}", flush=True)


if __name__ == "__main__":
    main()
