#!/usr/bin/env bash
# autonomous-harness entry point. Works from any directory and through symlinks.
# First use creates $HARNESS_HOME/.venv and installs the package; later calls exec the CLI.
#   run.sh selftest     install the dev extras and run the test suite
#   run.sh <command>    see `run.sh --help`
set -euo pipefail

# No external commands on this path: `run.sh note` runs inside agents' tool loops.
src="${BASH_SOURCE[0]}"
case "$src" in */*) ;; *) src="./$src" ;; esac
while [ -L "$src" ]; do
  target="$(readlink "$src")"
  case "$target" in /*) src="$target" ;; *) src="${src%/*}/$target" ;; esac
done
HARNESS_HOME="$(cd -P "${src%/*}" && pwd)"
export HARNESS_HOME
venv="$HARNESS_HOME/.venv"
stamp="$venv/.installed"

bootstrap() {  # $1: "base", or "dev" for the test extras
  local want="$1" spec="$HARNESS_HOME"
  [ "$want" = dev ] && spec="$HARNESS_HOME[dev]"
  # One installer at a time: cron and shell loops may start several runs at once.
  exec 9>"$HARNESS_HOME/.venv.lock"
  flock 9
  if [ ! -f "$stamp" ] || [ "$HARNESS_HOME/pyproject.toml" -nt "$stamp" ] \
     || ! grep -qxF "$want" "$stamp"; then
    if [ ! -x "$venv/bin/python" ]; then
      python3 -m venv "$venv" >&2 || { echo "run.sh: cannot create $venv (need python3 >= 3.10 with venv)" >&2; exit 2; }
    fi
    echo "run.sh: installing autonomous-harness into $venv ..." >&2
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e "$spec" >&2 \
      || { echo "run.sh: pip install failed" >&2; exit 2; }
    { cat "$stamp" 2>/dev/null || true; echo "$want"; } | sort -u > "$stamp.tmp" && mv "$stamp.tmp" "$stamp"
    touch "$stamp"
  fi
  exec 9>&-
}

if [ "${1:-}" = "selftest" ]; then
  shift
  bootstrap dev
  cd "$HARNESS_HOME"
  exec "$venv/bin/python" -m pytest "$@"
fi

if [ ! -f "$stamp" ] || [ "$HARNESS_HOME/pyproject.toml" -nt "$stamp" ]; then
  bootstrap base
fi
exec "$venv/bin/harness" "$@"
