"""The one run lifecycle (runner): prepare a role's prompt from disk and record it,
call a backend, judge the outcome (outcome), close the record; plus the prompt's
rendering, the validator's evidence (verify), the harness's git, and the curator's
model mode (curation).
"""
