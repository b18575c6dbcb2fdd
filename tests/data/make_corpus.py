"""Write the labelled curator corpus: `python tests/data/make_corpus.py`.

The lesson families below are written by hand: each lists paraphrases of one
lesson, who reported it (mission, feature, run tag) and whether, by judgment,
it should be promoted to identity. Near-miss families are different lessons
that look alike; each is reported once, so merging any two of them would be a
false promotion. The script only lays the reports out on a timeline (seeded,
so the output is byte-stable) and adds unlabelled noise: plain notes,
gotchas, decisions and lines that do not parse.

Output, in tests/data/curator_corpus/:
  corpus.tsv    mission <TAB> family <TAB> raw.md line ("-" family: noise)
  expected.tsv  role <TAB> kind <TAB> family, one per expected promotion
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

OUT = Path(__file__).resolve().parent / "curator_corpus"
MISSIONS = ("shop", "blog", "crm", "infra")
START = {"shop": 1776000000, "blog": 1776400000, "crm": 1776800000, "infra": 1777200000}


@dataclass
class Family:
    name: str
    role: str
    kind: str
    promote: bool
    texts: list[str]
    # "mission feature tag": the same tag on the same feature is the same run
    reports: list[str]


FAMILIES = [
    # --- TRICKs that two or more distinct workers report: promoted -------------
    Family("psql-order", "worker", "TRICK", True, [
        "psql -f drizzle/*.sql applies migrations in filename order",
        "running `psql -f` on drizzle/*.sql applies the migrations sorted by file name",
        "psql -f with drizzle/*.sql runs the migration files in file name order, "
        "so number them",
    ], ["shop F-003 a", "shop F-007 a", "blog F-002 a"]),
    Family("vitest-watch", "worker", "TRICK", True, [
        "pnpm test starts vitest in watch mode; use `pnpm test --run` for a single pass",
        "vitest via pnpm test keeps watching forever unless you pass --run",
    ], ["shop F-004 a", "crm F-010 a"]),
    Family("curl-health", "worker", "TRICK", True, [
        "curl -s localhost:3000/api/health | jq . is the quickest way to check the API is up",
        "check that the API is up with curl -s localhost:3000/api/health piped into jq",
    ], ["shop F-005 a", "blog F-006 a"]),
    # two runs on one feature: the retry echoes the note it read, so one worker
    Family("stash-untracked", "worker", "TRICK", False, [
        "git stash -u also stashes untracked files, plain git stash leaves them behind",
        "plain `git stash` leaves untracked files in place; add -u to stash them too",
    ], ["crm F-011 a", "crm F-011 b"]),
    Family("playwright-trace", "worker", "TRICK", True, [
        "npx playwright test --trace on writes a trace.zip you can open with "
        "npx playwright show-trace",
        "run npx playwright test with --trace on, then open the trace.zip using "
        "npx playwright show-trace",
    ], ["shop F-008 a", "infra F-001 a"]),
    Family("env-local-restart", "worker", "TRICK", True, [
        "Next.js only reads .env.local at startup; restart pnpm dev after editing it",
        "edits to .env.local are ignored until pnpm dev is restarted, Next.js loads it once "
        "at startup",
    ], ["blog F-003 a", "blog F-009 a"]),
    Family("drizzle-generate", "worker", "TRICK", True, [
        "pnpm drizzle-kit generate creates a new SQL migration from the changes in schema.ts",
        "after editing schema.ts run pnpm drizzle-kit generate to get a fresh SQL migration",
    ], ["shop F-009 a", "crm F-004 a"]),
    Family("pytest-k-x", "worker", "TRICK", True, [
        "pytest -k name -x runs only the matching tests and stops at the first failure",
        "run only the matching tests with pytest -k name and add -x to stop at the first "
        "failure",
    ], ["infra F-002 a", "infra F-005 a"]),
    Family("compose-logs", "worker", "TRICK", True, [
        "docker compose logs -f api shows the api container's output live",
        "follow the api container output with docker compose logs -f api",
        "docker compose logs -f api streams the api logs as they happen",
    ], ["infra F-003 a", "shop F-010 a", "crm F-006 a"]),
    Family("jq-raw", "worker", "TRICK", True, [
        "jq -r '.id' prints the id without quotes, handy in shell scripts",
        "use jq -r '.id' to get the raw id string with no JSON quotes",
    ], ["blog F-004 a", "infra F-004 a"]),
    Family("sqlite-count", "validator", "TRICK", True, [
        "sqlite3 app.db 'select count(*) from orders' confirms the row was written",
        "confirm the write with sqlite3 app.db 'select count(*) from orders'",
    ], ["shop F-025 v", "blog F-019 v"]),
    Family("alembic-head", "worker", "TRICK", True, [
        "alembic upgrade head applies every pending migration",
        "run alembic upgrade head to bring the database schema up to date",
    ], ["infra F-020 a", "crm F-026 a"]),
    Family("uv-run", "worker", "TRICK", True, [
        "uv run pytest uses the project venv without activating it",
        "no need to activate the venv: uv run pytest picks it up automatically",
    ], ["infra F-021 a", "infra F-022 a"]),
    Family("bisect-run", "worker", "TRICK", True, [
        "git bisect run pnpm test finds the breaking commit automatically",
        "let git bisect run pnpm test hunt down the commit that broke the build",
    ], ["shop F-028 a", "blog F-022 a"]),
    Family("psql-expanded", "worker", "TRICK", True, [
        "psql \\x turns on expanded output so wide rows are readable",
        "use \\x in psql for expanded display when rows are too wide",
    ], ["crm F-027 a", "shop F-029 a"]),
    Family("next-turbo", "worker", "TRICK", True, [
        "pnpm dev --turbo starts Next.js with turbopack and rebuilds much faster",
        "the Next.js dev server is a lot faster with pnpm dev --turbo (turbopack)",
    ], ["blog F-023 a", "blog F-024 a"]),
    Family("journalctl-follow", "worker", "TRICK", True, [
        "journalctl -u api -f follows the service log live",
        "follow the api service log as it is written with journalctl -u api -f",
    ], ["infra F-023 a", "infra F-024 a"]),
    Family("gh-checks-watch", "worker", "TRICK", True, [
        "gh pr checks --watch waits until CI finishes and shows the result",
        "wait for CI with gh pr checks --watch instead of polling the web page",
    ], ["shop F-030 a", "crm F-028 a"]),
    Family("rg-hidden", "worker", "TRICK", True, [
        "rg --hidden -g '!.git' searches dotfiles too",
        "ripgrep skips dotfiles unless you pass --hidden; add -g '!.git' to leave out the "
        "git folder",
    ], ["blog F-025 a", "infra F-025 a"]),
    Family("tsx-script", "worker", "TRICK", True, [
        "npx tsx scripts/seed.ts runs a TypeScript script without compiling it first",
        "run TypeScript scripts directly with npx tsx scripts/seed.ts, no build step needed",
    ], ["crm F-029 a", "shop F-031 a"]),
    Family("psql-count-users", "validator", "TRICK", True, [
        "psql $DATABASE_URL -c 'select count(*) from users' is a quick check that the signup "
        "wrote a row",
        "check the signup row landed with psql $DATABASE_URL -c 'select count(*) from users'",
    ], ["crm F-030 v", "blog F-026 v"]),
    # --- TRICKs that must stay where they are ------------------------------------
    # one worker run saying the same thing twice is one worker
    Family("tsc-noemit", "worker", "TRICK", False, [
        "tsc --noEmit -p tsconfig.json type-checks without writing any files",
        "type-check without emitting anything: tsc --noEmit -p tsconfig.json",
    ], ["shop F-011 a", "shop F-011 a"]),
    Family("sqlite-schema", "worker", "TRICK", False, [
        "sqlite3 db.sqlite .schema dumps the whole schema in one go",
    ], ["shop F-012 a"]),
    Family("make-dry", "worker", "TRICK", False, [
        "make -n prints the commands make would run without running them",
    ], ["infra F-006 a"]),
    # the same trick from a worker and from a validator: one report per role
    Family("lsof-port-w", "worker", "TRICK", False, [
        "lsof -i :3000 shows which process holds port 3000",
    ], ["crm F-023 a"]),
    Family("lsof-port-v", "validator", "TRICK", False, [
        "lsof -i :3000 tells you what is holding port 3000",
    ], ["infra F-017 v"]),
    # near-miss pairs: different tricks that look alike, one worker each
    Family("nm-coverage", "worker", "TRICK", False, [
        "pnpm test --coverage needs @vitest/coverage-v8 installed first",
    ], ["shop F-013 a"]),
    Family("nm-reporter", "worker", "TRICK", False, [
        "pnpm test --reporter=verbose prints every test name as it runs",
    ], ["crm F-012 a"]),
    Family("nm-rebase", "worker", "TRICK", False, [
        "git rebase -i HEAD~3 lets you squash the last three commits",
    ], ["blog F-010 a"]),
    Family("nm-reset-soft", "worker", "TRICK", False, [
        "git reset --soft HEAD~3 undoes the last three commits but keeps the changes staged",
    ], ["infra F-007 a"]),
    Family("nm-cookie-send", "worker", "TRICK", False, [
        "curl -s -b cookies.txt localhost:3000/api/users sends the saved session cookie",
    ], ["crm F-013 a"]),
    Family("nm-cookie-save", "worker", "TRICK", False, [
        "curl -s -c cookies.txt localhost:3000/api/login saves the session cookie for later "
        "requests",
    ], ["shop F-014 a"]),
    Family("nm-up-db", "worker", "TRICK", False, [
        "docker compose up -d db starts only the database container",
    ], ["infra F-008 a"]),
    Family("nm-up-build", "worker", "TRICK", False, [
        "docker compose up -d --build api rebuilds and restarts only the api container",
    ], ["blog F-011 a"]),
    Family("nm-pytest-lf", "worker", "TRICK", False, [
        "pytest --lf reruns only the tests that failed last time",
    ], ["shop F-015 a"]),
    Family("nm-pytest-ff", "worker", "TRICK", False, [
        "pytest --ff runs the tests that failed last time first, then the rest",
    ], ["crm F-014 a"]),
    Family("nm-lint-fix", "worker", "TRICK", False, [
        "pnpm lint --fix rewrites the files eslint can fix automatically",
    ], ["blog F-012 a"]),
    Family("nm-format-check", "worker", "TRICK", False, [
        "pnpm format --check lists the files prettier would change without touching them",
    ], ["infra F-009 a"]),
    Family("nm-log-branch", "worker", "TRICK", False, [
        "git log --oneline lists the commits on the current branch",
    ], ["shop F-016 a"]),
    Family("nm-log-all", "worker", "TRICK", False, [
        "git log --oneline --all lists the commits on every branch, remotes included",
    ], ["crm F-015 a"]),
    Family("nm-ssh-pg", "worker", "TRICK", False, [
        "ssh -L 5432:localhost:5432 bastion forwards the remote postgres to the local port",
    ], ["infra F-010 a"]),
    Family("nm-ssh-redis", "worker", "TRICK", False, [
        "ssh -L 6379:localhost:6379 bastion forwards the remote redis to the local port",
    ], ["infra F-011 a"]),
    Family("nm-seeds", "worker", "TRICK", False, [
        "psql -f seeds/*.sql loads the seed files in filename order",
    ], ["blog F-007 a"]),
    Family("nm-psql-stop", "worker", "TRICK", False, [
        "psql -v ON_ERROR_STOP=1 -f drizzle/0001_init.sql stops at the first failing statement",
    ], ["crm F-008 a"]),
    # same command, different effect
    Family("nm-jq-null", "worker", "TRICK", False, [
        "jq -r '.id' prints null when the field is missing",
    ], ["crm F-024 a"]),
    Family("nm-health-503", "worker", "TRICK", False, [
        "curl -s localhost:3000/api/health returns 503 until the migrations have run",
    ], ["infra F-018 a"]),
    Family("nm-alembic-downgrade", "worker", "TRICK", False, [
        "alembic downgrade -1 rolls back only the last migration",
    ], ["shop F-026 a"]),
    Family("nm-uv-sync", "worker", "TRICK", False, [
        "uv sync --frozen installs exactly what uv.lock pins",
    ], ["blog F-021 a"]),
    Family("nm-tsx-watch", "worker", "TRICK", False, [
        "npx tsx watch scripts/seed.ts reruns the script on every save",
    ], ["crm F-025 a"]),
    Family("nm-gh-pr-view", "worker", "TRICK", False, [
        "gh pr view --web opens the pull request in the browser",
    ], ["infra F-019 a"]),
    # --- FAILs: promoted when they recur across missions ------------------------
    Family("lockfile", "worker", "FAIL", True, [
        "pnpm install --frozen-lockfile failed with ERR_PNPM_OUTDATED_LOCKFILE after "
        "package.json was edited by hand",
        "ERR_PNPM_OUTDATED_LOCKFILE from pnpm install --frozen-lockfile: package.json "
        "changed but pnpm-lock.yaml was not updated",
    ], ["shop F-017 a", "blog F-013 a"]),
    Family("suspense", "worker", "FAIL", True, [
        "next build failed: useSearchParams() should be wrapped in a suspense boundary",
        "next build fails because useSearchParams() is not wrapped in a Suspense boundary",
    ], ["shop F-018 a", "blog F-014 a", "crm F-016 a"]),
    Family("e2e-no-server", "validator", "FAIL", True, [
        "e2e tests failed because the dev server was not running on port 3000",
        "playwright e2e suite failed: nothing listening on port 3000, the dev server was "
        "never started",
    ], ["shop F-019 v", "infra F-012 v"]),
    Family("db-url-500", "validator", "FAIL", True, [
        "curl to /api/orders returned 500 because DATABASE_URL was unset",
        "GET /api/orders gave HTTP 500: DATABASE_URL missing from the environment",
    ], ["shop F-021 v", "crm F-020 v"]),
    Family("hydration-locale", "worker", "FAIL", True, [
        "hydration failed because the server HTML used toLocaleString() with a different locale",
        "React hydration mismatch: toLocaleString() renders differently on the server and in "
        "the browser",
    ], ["shop F-032 a", "crm F-031 a"]),
    Family("eaddrinuse", "worker", "FAIL", True, [
        "pnpm dev failed with EADDRINUSE: port 3000 was held by an old dev server",
        "EADDRINUSE on :3000 when starting pnpm dev, a stale dev server still had the port",
    ], ["blog F-027 a", "infra F-026 a"]),
    Family("csrf-403", "validator", "FAIL", True, [
        "POST /api/login returned 403: the CSRF token header was missing from the curl request",
        "login via curl fails with 403 unless the CSRF token header is sent",
    ], ["shop F-033 v", "blog F-028 v"]),
    Family("nm-eaddrinuse-vite", "worker", "FAIL", False, [
        "pnpm dev failed with EADDRINUSE: port 5173 was held by vite",
    ], ["crm F-032 a"]),
    Family("users-exists", "worker", "FAIL", False, [
        "drizzle migration failed: relation \"users\" already exists",
        "migration failed since relation \"users\" already exists in the database",
    ], ["crm F-017 a", "crm F-018 a"]),
    Family("no-space", "worker", "FAIL", False, [
        "docker build failed: no space left on device",
    ], ["infra F-013 a"]),
    Family("nm-port-pg", "worker", "FAIL", False, [
        "docker compose up failed: port 5432 is already allocated",
    ], ["shop F-020 a"]),
    Family("nm-port-redis", "worker", "FAIL", False, [
        "docker compose up failed: port 6379 is already allocated",
    ], ["blog F-015 a"]),
    Family("nm-module-db", "worker", "FAIL", False, [
        "tsc failed: Cannot find module '@/lib/db' or its corresponding type declarations",
    ], ["crm F-019 a"]),
    Family("nm-module-auth", "worker", "FAIL", False, [
        "tsc failed: Cannot find module '@/lib/auth' or its corresponding type declarations",
    ], ["infra F-014 a"]),
    # --- FORGOTs: promoted when they recur on separate occasions ---------------
    Family("db-generate", "worker", "FORGOT", True, [
        "forgot to run pnpm db:generate after changing schema.ts",
        "changed schema.ts but forgot pnpm db:generate, so the types were stale",
    ], ["shop F-022 a", "shop F-023 a"]),
    Family("sidebar-nav", "worker", "FORGOT", True, [
        "forgot to add the new route to the sidebar nav",
        "forgot the sidebar nav entry for the new route again",
        "new route added but forgot to link it in the sidebar nav",
    ], ["blog F-016 a", "blog F-017 a", "crm F-021 a"]),
    Family("migrate-test-db", "worker", "FORGOT", True, [
        "forgot to run the migrations against the test database before pnpm test",
        "pnpm test failed again because I forgot to migrate the test database first",
    ], ["crm F-033 a", "crm F-034 a"]),
    Family("export-index", "worker", "FORGOT", True, [
        "forgot to export the new component from components/index.ts",
        "new component was not exported from components/index.ts, forgot it again",
    ], ["shop F-034 a", "infra F-027 a"]),
    Family("nm-export-hook", "worker", "FORGOT", False, [
        "forgot to export the new hook from hooks/index.ts",
    ], ["shop F-027 a"]),
    Family("changelog", "worker", "FORGOT", False, [
        "forgot to update the CHANGELOG.md entry",
    ], ["infra F-015 a"]),
    # the same run restating what it forgot is one occasion
    Family("restart-dev", "worker", "FORGOT", False, [
        "forgot to restart pnpm dev after editing next.config.js",
        "again: next.config.js changes need a pnpm dev restart, forgot it",
    ], ["blog F-020 a", "blog F-020 a"]),
    Family("nm-lint", "worker", "FORGOT", False, [
        "forgot to run pnpm lint before committing",
    ], ["shop F-024 a"]),
    Family("nm-typecheck", "worker", "FORGOT", False, [
        "forgot to run pnpm typecheck before committing",
    ], ["crm F-022 a"]),
    Family("nm-node-env", "worker", "FORGOT", False, [
        "forgot to set NODE_ENV=test for the integration tests",
    ], ["blog F-018 a"]),
    Family("nm-database-url", "worker", "FORGOT", False, [
        "forgot to set DATABASE_URL for the integration tests",
    ], ["infra F-016 a"]),
]

# Kinds that are never promoted, some repeated across workers and missions.
GOTCHAS = [
    "localStorage is not available during SSR, guard it with typeof window",
    "the staging database is reset every night at 02:00 UTC",
    "Date.now() in a server component makes the page dynamic",
    "the seed script truncates every table before inserting",
    "port 3000 is taken by the docs site when it runs",
    "CI uses node 20 while the laptop has node 22",
    "vitest mocks leak between files unless restoreMocks is set",
    "the orders table has a soft-delete column; filter deleted_at IS NULL",
]
DECISIONS = [
    "db: use postgres 16 in docker compose",
    "db: move to postgres 17 for the json_table support",
    "auth: sessions in an http-only cookie, no JWT in localStorage",
    "package manager: pnpm 9, no npm or yarn lockfiles",
    "tests: vitest for units, playwright for e2e",
    "styling: tailwind only, no css modules",
    "api: REST under /api, no GraphQL",
    "auth: switch to better-auth sessions, still in an http-only cookie",
]
PLAIN = [
    "{f} done, tests green",
    "started on {f}",
    "{f} verified via curl + DB row inspection",
    "{f} needs a migration, writing it now",
    "{f}: refactored the handler into lib/",
    "{f} blocked on a missing env var, asked in the ledger",
    "{f} acceptance criteria all met",
    "read the plan, {f} is next",
]
UNPARSED = [
    "stray output: npm WARN deprecated glob@7.2.3",
    "[2026-04-24 10:05:12] worker F-1 TRICK: timestamp without T and Z",
    "worker F-003 TRICK: no timestamp at all",
    "",
    "   ",
    "[2026-04-24T10:05:12Z] worker F-003 HINT: unknown kind",
]


def run_id(mission: str, feature: str, tag: str, role: str) -> str:
    """A run id unique per (mission, feature, tag), shaped like the harness's."""
    n = START[mission] + int(feature[2:]) * 1000 + (ord(tag) - ord("a")) * 17
    return f"{n}-{role}-{feature}"


Row = tuple[str, str, str, str, str, str | None]  # family, role, feature, kind, text, run


def build(seed: int = 4) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
    """The corpus rows (mission, family, line) in time order per mission, and expectations."""
    rng = random.Random(seed)
    rows = _reports()
    for mission in MISSIONS:
        rows[mission] += _noise(rng, mission)
    corpus = [row for mission in MISSIONS for row in _timeline(rng, mission, rows[mission])]
    expected = [(f.role, f.kind, f.name) for f in FAMILIES if f.promote]
    return corpus, expected


def _reports() -> dict[str, list[Row]]:
    """Each mission's labelled reports, in the order the families list them."""
    rows: dict[str, list[Row]] = {m: [] for m in MISSIONS}
    for fam in FAMILIES:
        for i, report in enumerate(fam.reports):
            mission, feature, tag = report.split()
            text = fam.texts[i % len(fam.texts)]
            rows[mission].append((fam.name, fam.role, feature, fam.kind, text,
                                  run_id(mission, feature, tag, fam.role)))
    return rows


def _noise(rng: random.Random, mission: str) -> list[Row]:
    """A mission's unlabelled lines: plain notes, gotchas, decisions and unparsable lines."""
    rows: list[Row] = []
    features = [f"F-{n:03d}" for n in range(1, 35)]
    for _ in range(55):
        f = rng.choice(features)
        role = rng.choice(("worker", "worker", "validator"))
        rows.append(("-", role, f, "-", rng.choice(PLAIN).format(f=f),
                     run_id(mission, f, "n", role) if rng.random() < 0.7 else None))
    for text in rng.sample(GOTCHAS, 5):
        f = rng.choice(features)
        run = run_id(mission, f, "g", "worker")
        rows.append(("-", "worker", f, "GOTCHA", text, run))
    for text in rng.sample(DECISIONS, 3):
        rows.append(("-", "planner", "-", "DECISION", text, None))
    for text in rng.sample(UNPARSED, 2):
        rows.append(("-", "", "", "", text, None))
    return rows


def _timeline(rng: random.Random, mission: str, items: list[Row]) -> list[tuple[str, str, str]]:
    """A mission's rows shuffled (in place) and written as raw.md lines at rising times."""
    corpus: list[tuple[str, str, str]] = []
    rng.shuffle(items)
    t = START[mission]
    for fam, role, feature, kind, text, run in items:
        t += rng.randint(60, 3600)
        if not role:
            corpus.append((mission, "-", text))
            continue
        ts = _iso(t)
        tail = f" (run {run})" if run else ""
        corpus.append((mission, fam, f"[{ts}] {role} {feature} {kind}: {text}{tail}"))
    return corpus


def _iso(t: int) -> str:
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def main() -> None:
    corpus, expected = build()
    texts: dict[str, str] = {}
    for fam in FAMILIES:
        for text in fam.texts:
            assert texts.setdefault(text, fam.name) == fam.name, f"text in two families: {text}"
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "corpus.tsv").write_text("".join(f"{m}\t{f}\t{line}\n" for m, f, line in corpus))
    (OUT / "expected.tsv").write_text("".join(f"{r}\t{k}\t{f}\n" for r, k, f in expected))
    print(f"{len(corpus)} lines, {len(expected)} expected promotions -> {OUT}")


if __name__ == "__main__":
    main()
