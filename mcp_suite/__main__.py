"""`python -m mcp_suite`: the same as the `mcp-suite` console script."""

from mcp_suite.cli import main

raise SystemExit(main())
