"""What the role may see of the database, read from the catalogue: the schema listing `sql_schema`
shows (`objects`: fixed queries, keyset pages; `lookup`: the caller's filters and the paging cursor,
pure) and which relations a plan reads that the role may not read in full (`visibility`, used by
`explain_sql`). Every read runs in a database worker thread, inside `Executor.read_catalogue`.
"""
