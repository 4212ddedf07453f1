"""Live-cluster tests (fake API server by default)."""
