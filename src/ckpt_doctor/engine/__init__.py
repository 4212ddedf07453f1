"""The rule engine: catalogue (YAML), checks (Python), graph (networkx), walk (findings)."""
