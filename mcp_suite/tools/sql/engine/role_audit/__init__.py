"""The role audit: what could the DSN's role do besides reading?

`audit.py` is the pipeline (one read-only transaction, the list of checks); each check is a module of
its own, one per finding kind (`attributes`, `membership`, `table_write`, `column_write`, `schema`,
`database`, `functions`, `reach`, `defaults`, `sequences`, `large_objects`, `resources`);
`finding.py` holds the finding, its fix text and the refusal message; `connect.py` makes the one
kind of connection the audits use (`audit_dsn`, `audit_role`, the TLS refusal in `tls.py`);
`reaudit.py` runs the audit again while serving. Sync psycopg only, except `reaudit.serve_reaudit`.
"""
