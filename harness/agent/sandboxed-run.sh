#!/bin/sh
# run.sh as an agent sees it inside `sandbox: bwrap`: the state directory and the harness
# are out of reach there by design, so nothing it would do can be done from here.
cat >&2 <<'MSG'
run.sh: not available inside the sandbox (the role runs with `sandbox: bwrap`): the state
directory and the harness are out of its reach. Use the harness's own tools instead:
`note` for run.sh note, `verdict` for run.sh verdict, `plan` for run.sh plan, and
`finish` with status blocked for run.sh block. An agent CLI, which has no such tools,
needs `sandbox: none` (and the CLI's own sandbox) to call run.sh.
MSG
exit 2
