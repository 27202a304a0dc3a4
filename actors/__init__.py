"""The actor runtime (mailboxes, transition tables, registries, passivation) and the
per-aggregate actors: Session, Routine, Webhook and MachineAssignment."""
