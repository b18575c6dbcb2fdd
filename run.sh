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
  # One installer at a time: cron and shell loops may start several runs at once. The lock
  # is an flock on fd 9 taken by python3 (flock(1) is missing on macOS); it is held until
  # fd 9 closes, and the kernel drops it when this shell dies, so it is never stale.
  exec 9>"$HARNESS_HOME/.venv.lock"
  local taken=0 said  # 1: another run.sh holds it; else why no lock can be taken
  said="$(python3 -c 'import fcntl, sys
try: fcntl.flock(9, fcntl.LOCK_EX | fcntl.LOCK_NB)
except BlockingIOError: sys.exit(1)
except OSError as e: sys.exit(e.strerror)' 2>&1)" || taken=$?
  if [ "$taken" = 1 ] && [ -z "$said" ]; then
    echo "run.sh: another run.sh is installing into $venv; waiting for it ..." >&2
    python3 -c 'import fcntl; fcntl.flock(9, fcntl.LOCK_EX)' \
      || { echo "run.sh: cannot lock $HARNESS_HOME/.venv.lock (need python3 >= 3.10)" >&2; exit 2; }
  elif [ "$taken" = 127 ]; then
    echo "run.sh: python3 is not on PATH (need python3 >= 3.10)" >&2; exit 2
  elif [ "$taken" != 0 ]; then
    echo "run.sh: cannot lock $HARNESS_HOME/.venv.lock: ${said:-python3 >= 3.10 is needed}" \
         "(a network folder without file locks? keep the tool on a local disk)" >&2
    exit 2
  fi
  if [ ! -f "$stamp" ] || [ "$HARNESS_HOME/pyproject.toml" -nt "$stamp" ] \
     || ! grep -qxF "$want" "$stamp"; then
    if [ ! -x "$venv/bin/python" ]; then
      echo "run.sh: creating $venv (first use only) ..." >&2
      python3 -m venv "$venv" >&2 || { echo "run.sh: cannot create $venv (need python3 >= 3.10 with venv)" >&2; exit 2; }
    fi
    echo "run.sh: installing autonomous-harness and its dependencies into $venv" \
         "(about a minute on first use; pip's progress follows) ..." >&2
    "$venv/bin/python" -m pip install --disable-pip-version-check --progress-bar on -e "$spec" >&2 \
      || { echo "run.sh: pip install failed (its output is above)" >&2; exit 2; }
    echo "run.sh: installed" >&2
    { cat "$stamp" 2>/dev/null || true; echo "$want"; } | sort -u > "$stamp.tmp" && mv "$stamp.tmp" "$stamp"
    touch "$stamp"
    # a pyproject.toml dated ahead of this clock (skew) must not reinstall on every call
    if [ "$HARNESS_HOME/pyproject.toml" -nt "$stamp" ]; then
      touch -r "$HARNESS_HOME/pyproject.toml" "$stamp"
    fi
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
