"""`python -m tests.support.stray_entry`: the stray-output test server, started like the real one.

Signals are caught from the first instant (as `mcp_suite.entry` does), then the test server loads.
"""

from mcp_suite.entry import install_early_signal_handlers

install_early_signal_handlers()

from tests.support.stray_server import main  # noqa: E402  # after the handlers, on purpose

raise SystemExit(main())
