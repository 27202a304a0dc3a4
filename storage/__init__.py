"""The storage actor and everything it keeps: migrations, tables, the event journal,
receipts, idempotency keys and preview proofs. All persistence of the Node goes through it."""
