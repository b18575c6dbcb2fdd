#!/usr/bin/env python3
"""A `tool.before` hook: refuse shell commands an unattended agent should never run.

In <state>/config.yaml:

    hooks:
      tool.before: [/path/to/autonomous-harness/examples/hooks/refuse-dangerous.py]

The harness gives the tool call as JSON on stdin ({"event": "tool.before", "tool": "bash",
"input": {"command": ...}, ...}). Exit 2 refuses the call; what this prints on stderr is
what the agent reads as the tool's error. Exit 0 lets it run.
"""

import json
import re
import sys

REFUSED = [
    (r"\bgit\b.*\bpush\b.*(\s--force(-with-lease)?\b|\s-[a-zA-Z]*f\b|\s\+\S)",
     "git push --force rewrites shared history"),
    # git takes a long option's unique prefix: --ha is --hard
    (r"\bgit\b.*\breset\b.*\s--ha(rd?)?\b", "git reset --hard throws away work"),
    (r"(^|[\s;&|(`$])(\S*/)?sudo\b", "sudo: the agent does not act as root"),
    (r"\b(curl|wget)\b[^|;&]*\|\s*(sudo\s+)?(env\s+)?(\S*/)?(ba|z|da|k)?sh\b",
     "piping a download into a shell runs code nobody read"),
    (r"(\b(ba|z|da|k)?sh|\bsource|(^|[\s;&|])\.)\s[^;&|]*(<\(|\$\(|`)\s*(curl|wget)\b",
     "running a download in a shell runs code nobody read"),
]


def main() -> int:
    event = json.load(sys.stdin)
    if event.get("tool") != "bash":
        return 0
    command = str((event.get("input") or {}).get("command", ""))
    for pattern, why in REFUSED:
        if re.search(pattern, command):
            print(f"refused by the mission's tool.before hook: {why}. Find another way, "
                  "or finish with status blocked and say what you need.", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
