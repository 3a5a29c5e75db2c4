"""`python -m mcp_suite`: the same as the `mcp-suite` console script."""

from mcp_suite.entry import main

raise SystemExit(main())
