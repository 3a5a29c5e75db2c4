"""pytest fixtures for the throwaway PostgreSQL cluster (mcp_suite.devdb). Filled by the devdb work."""
