"""`run.sh report`: a static, self-contained HTML report of a mission (no server, no network).

`site` writes the pages (incrementally), `mission` reads the plan, ledgers and memory,
`run_page` turns one run's records into its page, `chart` draws cost and runs over time.
Templates are Jinja with autoescaping on, and each page's Content-Security-Policy lets only
the report's own script run: notes and tool output are untrusted and show as text.
"""
