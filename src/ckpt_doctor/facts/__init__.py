"""Facts: derived once from a Scope, each a small pure function of it."""
