"""Tests against a real throwaway PostgreSQL cluster (tests.pgfixtures.demo_cluster)."""
