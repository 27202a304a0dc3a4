"""Session 10 review of configuration admission: regression tests for the defects found
(docs/configuration.md run for real, admission fed garbage)."""
