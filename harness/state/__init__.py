"""On-disk state and nothing else: atomic writes and locked appends (store), the memory
layers' files and the one raw.md parser (memory), the plan, run records, the ledger,
what agents ask of the harness (actions), and secret redaction.

Kept import-light: `run.sh note` imports from here and must start fast.
"""
