"""Supervisor trees, the worker supervisor, and the sans-IO lease state machines."""
