"""The command line: the click app, the click-free fast path for `run.sh note`, and
the console script's entry.
"""
