"""The metrics family: `system_metrics`, a host sample shaped by its pure policy."""
