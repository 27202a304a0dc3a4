"""Migrations: numbered, forward-only, recorded in `PRAGMA user_version`.

Migration N (1-based) is `MIGRATIONS[N - 1]`; a database at version V gets migrations V+1..
in order, each in its own `BEGIN IMMEDIATE` transaction together with the new user_version,
so a crash leaves it at a whole version. A database whose user_version is above what this
code knows was written by a newer Maia: it is refused before anything is written (the version
is read on a read-only connection first). Never edit a shipped migration; append a new one.

Plain SQL rather than sqlite-utils' `Migrations`, which tracks applied migrations by name in a
table of its own and has no notion of a newer database to refuse.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Final

from maia.core import MaiaError

_V1: Final = """
CREATE TABLE node (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    node_id TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    created_ms INTEGER NOT NULL
);
-- Named counters that only move forward (worker_epoch).
CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
INSERT INTO counters (name, value) VALUES ('worker_epoch', 0);
-- Small facts about the store itself (oldest retained journal position).
CREATE TABLE storage_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
INSERT INTO storage_meta (key, value) VALUES ('oldest_retained_position', 1);

CREATE TABLE projects (
    project_id TEXT PRIMARY KEY,
    project_key TEXT NOT NULL UNIQUE,
    root TEXT NOT NULL UNIQUE,
    name TEXT,
    revision INTEGER NOT NULL DEFAULT 1,
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL
);

CREATE TABLE sessions (
    session_id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects (project_id),
    executor TEXT NOT NULL,
    title TEXT,
    labels TEXT NOT NULL DEFAULT '{}',          -- JSON object of label -> value
    cwd TEXT,
    state TEXT NOT NULL,
    activity TEXT NOT NULL DEFAULT 'stopped',
    revision INTEGER NOT NULL DEFAULT 1,
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL,
    archived INTEGER NOT NULL DEFAULT 0 CHECK (archived IN (0, 1)),
    archived_ms INTEGER,
    archive_summary TEXT,
    transcript_path TEXT,
    latest_turn_id TEXT
);
CREATE INDEX sessions_by_project ON sessions (project_id, updated_ms);
CREATE INDEX sessions_by_state ON sessions (state);

CREATE TABLE turns (
    turn_id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (session_id),
    seq INTEGER NOT NULL,                       -- send order within the Session, from 1
    state TEXT NOT NULL,
    revision INTEGER NOT NULL DEFAULT 1,
    text TEXT NOT NULL,
    failure_reason TEXT,
    created_ms INTEGER NOT NULL,
    started_ms INTEGER,
    finished_ms INTEGER,
    UNIQUE (session_id, seq)
);
CREATE INDEX turns_by_state ON turns (state, session_id, seq);

CREATE TABLE turn_items (
    item_id TEXT PRIMARY KEY,
    turn_id TEXT NOT NULL REFERENCES turns (turn_id),
    seq INTEGER NOT NULL,                       -- order within the turn, from 1
    kind TEXT NOT NULL,
    text TEXT NOT NULL DEFAULT '',
    state TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL,
    UNIQUE (turn_id, seq)
);

CREATE TABLE worker_attempts (
    attempt_id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (session_id),
    epoch INTEGER NOT NULL UNIQUE,              -- from counters.worker_epoch, never reused
    node_epoch INTEGER NOT NULL,
    state TEXT NOT NULL,
    pid INTEGER,
    started_ms INTEGER NOT NULL,
    ended_ms INTEGER,
    end_reason TEXT
);
CREATE INDEX worker_attempts_by_session ON worker_attempts (session_id, epoch);

-- The event journal. AUTOINCREMENT: a position is never handed out twice, even after pruning.
CREATE TABLE events (
    position INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id TEXT NOT NULL UNIQUE,
    event_type TEXT NOT NULL,
    owner_type TEXT NOT NULL,
    owner_id TEXT NOT NULL,
    owner_seq INTEGER NOT NULL,
    aggregate_revision INTEGER,
    project_id TEXT,
    session_id TEXT,
    actor_id TEXT,
    causation_id TEXT,
    correlation_id TEXT,
    classification TEXT NOT NULL,
    occurred_ms INTEGER NOT NULL,
    payload TEXT NOT NULL,
    UNIQUE (owner_id, owner_seq)
);
-- The last sequence of owners whose newest events were pruned, so sequences stay gap-free.
CREATE TABLE pruned_owner_heads (
    owner_id TEXT PRIMARY KEY,
    last_seq INTEGER NOT NULL
) WITHOUT ROWID;

-- A receipt row is also the idempotency key (actor, operation, command) and its stored result.
CREATE TABLE receipts (
    receipt_id TEXT PRIMARY KEY,
    actor_id TEXT NOT NULL,
    operation_id TEXT NOT NULL,
    command_id TEXT NOT NULL,
    project_id TEXT,
    input_digest TEXT NOT NULL,
    outcome TEXT NOT NULL,
    targets TEXT NOT NULL,
    event_ids TEXT NOT NULL,
    effect_ids TEXT NOT NULL,
    evidence_digest TEXT NOT NULL,
    result TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    target_id TEXT,                             -- the first target, indexed for lists
    -- command before operation: the same key, and receipt.get by (actor, command) is a
    -- prefix look-up instead of a scan of the actor's receipts
    UNIQUE (actor_id, command_id, operation_id)
);
CREATE INDEX receipts_by_operation ON receipts (operation_id, created_ms);
CREATE INDEX receipts_by_time ON receipts (created_ms);
CREATE INDEX receipts_by_target ON receipts (target_id);
-- Targets after the first (most receipts have one, which receipts.target_id holds).
CREATE TABLE receipt_targets (
    target_id TEXT NOT NULL,
    -- No foreign key: SQLite would scan this table for children on every receipt insert.
    receipt_id TEXT NOT NULL,
    PRIMARY KEY (target_id, receipt_id)
) WITHOUT ROWID;

CREATE TABLE previews (
    preview_id TEXT PRIMARY KEY,
    actor_id TEXT NOT NULL,
    operation_id TEXT NOT NULL,
    input_digest TEXT NOT NULL,
    proof_hash TEXT NOT NULL,                   -- sha256 of the proof; the proof is never kept
    targets TEXT NOT NULL,
    node_epoch INTEGER NOT NULL,                -- expiry is judged on this epoch's clock only
    expires_monotonic_ms INTEGER NOT NULL,
    expires_ms INTEGER NOT NULL,                -- wall time, for people; decides nothing
    created_ms INTEGER NOT NULL,
    spent_ms INTEGER,
    spent_command_id TEXT
);
CREATE INDEX previews_by_creation ON previews (created_ms);
"""

# Durable timers of the actor runtime (actors/_timers.py): one row per armed timer, keyed by
# the kind, the actor it wakes and its name; written with the transition that arms it.
_V2_ACTOR_TIMERS: Final = """
CREATE TABLE actor_timers (
    kind TEXT NOT NULL,
    actor_id TEXT NOT NULL,
    name TEXT NOT NULL,                         -- state:<aggregate id>, or the actor's own name
    event TEXT,                                 -- a state timer's on_timeout event
    subject_id TEXT,
    subject_revision INTEGER,                   -- the aggregate's revision when armed
    due_wall_ms INTEGER NOT NULL,               -- what survives a restart
    due_monotonic_ms INTEGER NOT NULL,          -- meaningful within node_epoch only
    node_epoch INTEGER NOT NULL,
    PRIMARY KEY (kind, actor_id, name)
) WITHOUT ROWID;
"""

# Configuration admission (spec: Resolution and admission) and the Projects' repository block.
_CONFIG_ADMISSION: Final = """
ALTER TABLE projects ADD COLUMN repository TEXT;            -- JSON repository block, if any
ALTER TABLE projects ADD COLUMN repository_identity TEXT;   -- normalized remote + ref
CREATE UNIQUE INDEX projects_by_repository ON projects (repository_identity)
    WHERE repository_identity IS NOT NULL;

-- Every admitted configuration, kept: scope is 'user' or a project_id.
CREATE TABLE config_snapshots (
    snapshot_id TEXT PRIMARY KEY,
    scope TEXT NOT NULL,
    revision INTEGER NOT NULL,                  -- the scope's revision this admission made
    manifest TEXT NOT NULL,                     -- canonical manifest JSON
    manifest_digest TEXT NOT NULL,
    source_digest TEXT NOT NULL,                -- sha256 of the file's bytes, or 'absent'
    actor_id TEXT NOT NULL,
    admitted_ms INTEGER NOT NULL,
    UNIQUE (scope, revision)
);
-- What is admitted now, per scope.
CREATE TABLE config_admitted (
    scope TEXT PRIMARY KEY,
    snapshot_id TEXT NOT NULL REFERENCES config_snapshots (snapshot_id),
    revision INTEGER NOT NULL
) WITHOUT ROWID;
"""


# Webhooks (docs/webhooks.md): the webhooks, their deliveries (an outbox the webhook outbox
# processor fills from the journal), each delivery's attempts, and the checkpoints of journal
# processors (ObservationProcessorCheckpointV1), which advance in the transaction that writes
# what they produced.
_WEBHOOKS: Final = """
CREATE TABLE webhooks (
    webhook_id TEXT PRIMARY KEY,
    url TEXT NOT NULL,
    event_types TEXT NOT NULL,                  -- JSON list of event types
    project_id TEXT,
    session_id TEXT,
    secret_env TEXT NOT NULL,                   -- the variable's name; never its value
    description TEXT,
    state TEXT NOT NULL,                        -- active, disabled, removed
    state_reason TEXT,
    revision INTEGER NOT NULL,
    after_position INTEGER NOT NULL,            -- only journal events after it are delivered
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL
);
CREATE INDEX webhooks_by_state ON webhooks (state);

CREATE TABLE webhook_deliveries (
    delivery_id TEXT PRIMARY KEY,
    webhook_id TEXT NOT NULL REFERENCES webhooks (webhook_id),
    seq INTEGER NOT NULL,                       -- order of first attempts within the webhook
    message_id TEXT NOT NULL,                   -- the webhook-id header, the same every attempt
    event_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    body BLOB NOT NULL,                         -- fixed at creation: every attempt sends it
    state TEXT NOT NULL,                        -- pending, succeeded, failed, cancelled
    attempts INTEGER NOT NULL DEFAULT 0,        -- attempts in this round (a redelivery resets)
    next_attempt_ms INTEGER,                    -- wall time; set exactly while pending
    last_status_code INTEGER,
    last_reason TEXT,
    redeliveries INTEGER NOT NULL DEFAULT 0,
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL,
    finished_ms INTEGER,
    UNIQUE (webhook_id, event_id),
    UNIQUE (webhook_id, seq)
);
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (webhook_id, state, next_attempt_ms);

CREATE TABLE webhook_attempts (
    delivery_id TEXT NOT NULL,
    number INTEGER NOT NULL,                    -- 1.. over the delivery's whole life
    started_ms INTEGER NOT NULL,
    finished_ms INTEGER,                        -- NULL while in flight, or the Node died
    outcome TEXT NOT NULL,                      -- sending, succeeded, failed, gone, unknown
    status_code INTEGER,
    reason TEXT,
    PRIMARY KEY (delivery_id, number)
) WITHOUT ROWID;

CREATE TABLE processor_checkpoints (
    processor_id TEXT NOT NULL,
    partition_id INTEGER NOT NULL,
    processor_version TEXT NOT NULL,
    acknowledged_sequence INTEGER NOT NULL,     -- the last journal position processed
    input_schema_digest TEXT NOT NULL,
    projection_revision INTEGER NOT NULL,
    state TEXT NOT NULL,                        -- running, lagging, blocked, rebuilding
    updated_ms INTEGER NOT NULL,
    PRIMARY KEY (processor_id, partition_id)
) WITHOUT ROWID;
"""

# Routines (actors/routine): the routine rows and one row per fire (spec: Scheduled Session
# operations). `nextFireAt` is present exactly while a routine is active; a cron slot has at
# most one row (the claim and the advance of next_fire_ms commit together).
_ROUTINES: Final = """
CREATE TABLE routines (
    routine_id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects (project_id),
    name TEXT NOT NULL,
    cron TEXT NOT NULL,
    timezone TEXT NOT NULL,
    prompt TEXT NOT NULL,
    executor TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('active', 'paused', 'disabled')),
    revision INTEGER NOT NULL,
    next_fire_ms INTEGER,
    actor_id TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL,
    CHECK ((state = 'active') = (next_fire_ms IS NOT NULL))
);
CREATE INDEX routines_by_project ON routines (project_id, state);
CREATE INDEX routines_due ON routines (next_fire_ms) WHERE state = 'active';

CREATE TABLE routine_fires (
    fire_id TEXT PRIMARY KEY,
    routine_id TEXT NOT NULL REFERENCES routines (routine_id),
    trigger_kind TEXT NOT NULL CHECK (trigger_kind IN ('cron', 'manual')),
    scheduled_ms INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('launching', 'started', 'failed', 'skipped')),
    reason TEXT,
    claimed_ms INTEGER,                         -- NULL: a manual fire no tick has claimed
    session_id TEXT,
    turn_id TEXT,
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL
);
CREATE UNIQUE INDEX routine_fires_one_per_slot ON routine_fires (routine_id, scheduled_ms)
    WHERE trigger_kind = 'cron';
CREATE INDEX routine_fires_newest ON routine_fires (routine_id, scheduled_ms);
CREATE INDEX routine_fires_launching ON routine_fires (routine_id) WHERE state = 'launching';
"""

# Issue 17, the Session side of the agent executors: the harness's conversation id and
# usage totals on the Session, per-turn usage, an item's structured fields, and approvals.
_AGENT_SESSIONS = """
ALTER TABLE sessions ADD COLUMN conversation_id TEXT;   -- the harness's own, to resume it
ALTER TABLE sessions ADD COLUMN usage TEXT;             -- JSON totals over its turns
ALTER TABLE turns ADD COLUMN usage TEXT;                -- JSON per-turn figures
ALTER TABLE turn_items ADD COLUMN data TEXT;            -- JSON fields of a structured item

CREATE TABLE approvals (
    approval_id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (session_id),
    turn_id TEXT NOT NULL REFERENCES turns (turn_id),
    call_id TEXT NOT NULL,                      -- the worker's maia.approval tool call
    kind TEXT NOT NULL,
    summary TEXT NOT NULL,                      -- at most 8 KiB
    options TEXT NOT NULL,                      -- JSON list, at most 8
    can_remember INTEGER NOT NULL,
    state TEXT NOT NULL,                        -- pending, allowed, denied, withdrawn, expired
    remember INTEGER,
    message TEXT,
    revision INTEGER NOT NULL,
    created_ms INTEGER NOT NULL,
    expires_ms INTEGER,
    resolved_ms INTEGER
);
CREATE INDEX approvals_by_session ON approvals (session_id, state, created_ms);
CREATE INDEX approvals_by_state ON approvals (state, created_ms);
"""

# Issue 18: why a Session's last worker launch failed (cwd gone, executor unknown), or why
# it failed, NULL once a worker came up again (session.show: failureMessage); an item whose
# text passed the 262,144-character bound keeps the rest in an artifact file.
_SESSION_FAILURE = """
ALTER TABLE sessions ADD COLUMN failure_message TEXT;
ALTER TABLE turn_items ADD COLUMN truncated INTEGER NOT NULL DEFAULT 0;
ALTER TABLE turn_items ADD COLUMN artifact TEXT;
"""

# Issue 20 item 4, the event envelope: an event's schema version, the worker attempt and the
# activation (one dispatch of a turn) it belongs to, and the command it answers; a receipt's
# correlation. Rows written before keep NULL and read with defaults (`storage/_events.py`).
_EVENT_ENVELOPE = """
ALTER TABLE events ADD COLUMN schema_version TEXT;
ALTER TABLE events ADD COLUMN attempt_id TEXT;
ALTER TABLE events ADD COLUMN activation_id TEXT;
ALTER TABLE events ADD COLUMN command_id TEXT;
ALTER TABLE receipts ADD COLUMN correlation_id TEXT;
"""

# Issue 16: Execution Nodes enrolled on this Control Node (actors/machine/_sql.py). Secrets
# are stored hashed (the enrollment token's and the machine credential's sha256); the token
# key is the HMAC key the one-time tokens are derived from, so a receipt never holds one.
_MACHINES = """
CREATE TABLE machines (
    machine_id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    state TEXT NOT NULL,
    incarnation INTEGER NOT NULL,
    revocation_revision INTEGER NOT NULL,
    credential_revision INTEGER,
    recovery_required INTEGER NOT NULL DEFAULT 0,
    token_hash TEXT,
    token_expires_ms INTEGER,
    credential_hash TEXT,
    execution_node_id TEXT,
    revision INTEGER NOT NULL,
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL,
    enrolled_ms INTEGER,
    last_seen_ms INTEGER
);
CREATE TABLE machine_keys (
    name TEXT PRIMARY KEY,
    secret TEXT NOT NULL
);
"""

# Issue 16: machine assignments (one Project on one Execution Node; the lease epoch is
# durable, never reused) and which Sessions are placed on one (session create --machine).
_MACHINE_ASSIGNMENTS = """
CREATE TABLE machine_assignments (
    assignment_id TEXT PRIMARY KEY,
    machine_id TEXT NOT NULL,
    project_id TEXT NOT NULL,
    lease_epoch INTEGER NOT NULL DEFAULT 0,
    next_sequence INTEGER NOT NULL DEFAULT 1,
    phase TEXT NOT NULL,
    environment_revision INTEGER NOT NULL DEFAULT 1,
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL,
    UNIQUE (machine_id, project_id)
);
CREATE TABLE machine_placements (
    session_id TEXT PRIMARY KEY,
    assignment_id TEXT NOT NULL,
    created_ms INTEGER NOT NULL
);
"""

# Issue 21 goal 4 (write amplification): indexes every turn rewrote and the Node's queries
# never need (docs/storage.md lists the EXPLAIN QUERY PLAN of each). (project_id,
# updated_ms) moved at every transition, since each one stamps updated_ms: an index on the
# Project alone never moves, and lists a Project's Sessions in rowid order, as session.list
# pages. Sessions by state (status counts scan the small sessions table, once per 250 ms),
# receipts by operation and by time (receipt lists page by rowid; pruning deletes the oldest
# rowids) were read by nothing on the hot path.
_PERF_STORE_LEAN_INDEXES = """
DROP INDEX sessions_by_project;
DROP INDEX sessions_by_state;
CREATE INDEX sessions_by_project_id ON sessions (project_id);
DROP INDEX receipts_by_operation;
DROP INDEX receipts_by_time;
"""

# Issue 21 goal 4: the journal without AUTOINCREMENT, which rewrote its sqlite_sequence row
# (one more page) in every transaction that appended an event. A position is still never
# handed out twice: the rowid continues after the newest event, and only pruning deletes
# events (a prefix), so the newest survives unless the journal was pruned empty; then the
# next position is the oldest retained one (`append_event`), which the old high-water mark
# is folded into here. Same columns, same order, same constraints otherwise.
_PERF_STORE_JOURNAL_ROWID = """
UPDATE storage_meta SET value = max(value,
    (SELECT coalesce(max(seq), 0) + 1 FROM sqlite_sequence WHERE name = 'events'))
    WHERE key = 'oldest_retained_position' AND NOT EXISTS (SELECT 1 FROM events);
CREATE TABLE events_next (
    position INTEGER PRIMARY KEY,
    event_id TEXT NOT NULL UNIQUE,
    event_type TEXT NOT NULL,
    owner_type TEXT NOT NULL,
    owner_id TEXT NOT NULL,
    owner_seq INTEGER NOT NULL,
    aggregate_revision INTEGER,
    project_id TEXT,
    session_id TEXT,
    actor_id TEXT,
    causation_id TEXT,
    correlation_id TEXT,
    classification TEXT NOT NULL,
    occurred_ms INTEGER NOT NULL,
    payload TEXT NOT NULL,
    schema_version TEXT,
    attempt_id TEXT,
    activation_id TEXT,
    command_id TEXT,
    UNIQUE (owner_id, owner_seq)
);
INSERT INTO events_next SELECT position, event_id, event_type, owner_type, owner_id, owner_seq,
    aggregate_revision, project_id, session_id, actor_id, causation_id, correlation_id,
    classification, occurred_ms, payload, schema_version, attempt_id, activation_id, command_id
    FROM events ORDER BY position;
DROP TABLE events;
ALTER TABLE events_next RENAME TO events;
"""

# Issue 16: the machine assignment as a runtime actor kind: its row's revision (the
# compare-and-set of the one write path) and the restart barrier it stands behind, durable.
_MACHINE_ASSIGNMENT_ACTOR = """
ALTER TABLE machine_assignments ADD COLUMN revision INTEGER NOT NULL DEFAULT 1;
ALTER TABLE machine_assignments ADD COLUMN barrier_epoch INTEGER;
ALTER TABLE machine_assignments ADD COLUMN barrier_sequence INTEGER;
"""

# Issue 21 goal 4: `turns_by_state` held an entry for every turn ever sent, and each turn
# moved its entry three times across a growing B-tree. Only unfinished turns are ever read by
# state (recovery, the queue, the status counts), so the index holds only those: a few
# entries, one small page. A query must name the states inline (`UNFINISHED_TURNS` in
# actors/session/_sql_turns.py) for SQLite to prove it may use a partial index.
_PAGES_UNFINISHED_TURNS = """
DROP INDEX turns_by_state;
CREATE INDEX turns_unfinished ON turns (state, session_id, seq)
    WHERE state IN ('queued', 'dispatching', 'running');
"""

# Issue 16: the Execution Node's evidence outbox, durable: each record's frame, written
# before it is sent and deleted once Control acknowledges it, so a restart sends it again;
# per source, the last sequence written and the acknowledgement (never reused after a restart).
_MACHINE_OUTBOX = """
CREATE TABLE machine_outbox (
    source_id TEXT NOT NULL,
    sequence INTEGER NOT NULL CHECK (sequence >= 1),
    frame TEXT NOT NULL,
    size INTEGER NOT NULL CHECK (size >= 1),
    attempt_id TEXT,
    PRIMARY KEY (source_id, sequence)
) STRICT, WITHOUT ROWID;
CREATE TABLE machine_outbox_sources (
    source_id TEXT PRIMARY KEY,
    last_sequence INTEGER NOT NULL CHECK (last_sequence >= 0),
    acknowledged_through INTEGER NOT NULL CHECK (acknowledged_through >= 0),
    CHECK (acknowledged_through <= last_sequence)
) STRICT, WITHOUT ROWID;
"""

# Issue 21 goal 4: an event's ID carries its journal position (`positioned_id`,
# `<prefix>_f<17 hex position><32 hex random>`), so the journal drops its unique index of
# event IDs, which every appended event updated (a B-tree of 56-byte keys that SQLite
# rebalances over three siblings at each split: ~5 of a turn's ~35 pages). A look-up by ID
# reads the position from it (`_events._event_row`). The events written before keep their
# IDs and are found through a partial index of exactly those IDs (a new ID is 56 characters
# and starts `event_f`; an older one starts `event_0` or is 38 characters), so its entries
# never grow. Same columns, same order, the owner sequence's unique index kept.
_PAGES_EVENT_ID_FROM_POSITION = """
CREATE TABLE events_next (
    position INTEGER PRIMARY KEY,
    event_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    owner_type TEXT NOT NULL,
    owner_id TEXT NOT NULL,
    owner_seq INTEGER NOT NULL,
    aggregate_revision INTEGER,
    project_id TEXT,
    session_id TEXT,
    actor_id TEXT,
    causation_id TEXT,
    correlation_id TEXT,
    classification TEXT NOT NULL,
    occurred_ms INTEGER NOT NULL,
    payload TEXT NOT NULL,
    schema_version TEXT,
    attempt_id TEXT,
    activation_id TEXT,
    command_id TEXT,
    UNIQUE (owner_id, owner_seq)
);
INSERT INTO events_next SELECT position, event_id, event_type, owner_type, owner_id, owner_seq,
    aggregate_revision, project_id, session_id, actor_id, causation_id, correlation_id,
    classification, occurred_ms, payload, schema_version, attempt_id, activation_id, command_id
    FROM events ORDER BY position;
DROP TABLE events;
ALTER TABLE events_next RENAME TO events;
CREATE UNIQUE INDEX events_by_legacy_id ON events (event_id)
    WHERE (length(event_id) <> 56 OR event_id < 'event_f');
"""

# Issue 21 goal 4: a receipt's ID carries its sequence (`positioned_id`), so `receipts`
# drops the unique index of receipt IDs, which every command's receipt updated (one page per
# mutation, and its splits). The sequence, the rowid lists page by and receipt IDs now name,
# becomes an explicit INTEGER PRIMARY KEY: kept as is by the copy, and never renumbered (a
# VACUUM may renumber an implicit rowid). Receipts written before keep their IDs and are found
# through a partial index of exactly those IDs (a new ID is 58 characters and starts
# `receipt_f`), as the journal's older event IDs are. Same columns otherwise, same key.
_PAGES_RECEIPT_ID_FROM_SEQUENCE = """
CREATE TABLE receipts_next (
    sequence INTEGER PRIMARY KEY,
    receipt_id TEXT NOT NULL,
    actor_id TEXT NOT NULL,
    operation_id TEXT NOT NULL,
    command_id TEXT NOT NULL,
    project_id TEXT,
    input_digest TEXT NOT NULL,
    outcome TEXT NOT NULL,
    targets TEXT NOT NULL,
    event_ids TEXT NOT NULL,
    effect_ids TEXT NOT NULL,
    evidence_digest TEXT NOT NULL,
    result TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    target_id TEXT,                             -- the first target, indexed for lists
    correlation_id TEXT,
    UNIQUE (actor_id, command_id, operation_id)
);
INSERT INTO receipts_next SELECT rowid, receipt_id, actor_id, operation_id, command_id,
    project_id, input_digest, outcome, targets, event_ids, effect_ids, evidence_digest, result,
    created_ms, target_id, correlation_id FROM receipts ORDER BY rowid;
DROP TABLE receipts;
ALTER TABLE receipts_next RENAME TO receipts;
CREATE INDEX receipts_by_target ON receipts (target_id);
CREATE UNIQUE INDEX receipts_by_legacy_id ON receipts (receipt_id)
    WHERE (length(receipt_id) <> 58 OR receipt_id < 'receipt_f');
"""

# Issue 21 goal 4: `turn_items` without the unique index of item IDs, which every item's
# insert updated (a random 37-character key: one more page per item, a split every ~70).
# Every reader finds items by their turn (`UNIQUE (turn_id, seq)`, kept), and the two
# updates by their turn and place, checking the ID on the row (actors/session/_sql_turns.py).
# An item ID is 128 random bits, made once per item. Same columns, same order, same rowids.
_PAGES_TURN_ITEMS_BY_TURN = """
CREATE TABLE turn_items_next (
    item_id TEXT NOT NULL,
    turn_id TEXT NOT NULL REFERENCES turns (turn_id),
    seq INTEGER NOT NULL,                       -- order within the turn, from 1
    kind TEXT NOT NULL,
    text TEXT NOT NULL DEFAULT '',
    state TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL,
    data TEXT,
    truncated INTEGER NOT NULL DEFAULT 0,
    artifact TEXT,
    UNIQUE (turn_id, seq)
);
INSERT INTO turn_items_next (rowid, item_id, turn_id, seq, kind, text, state, created_ms,
    updated_ms, data, truncated, artifact)
    SELECT rowid, item_id, turn_id, seq, kind, text, state, created_ms, updated_ms, data,
    truncated, artifact FROM turn_items ORDER BY rowid;
DROP TABLE turn_items;
ALTER TABLE turn_items_next RENAME TO turn_items;
"""

# Issue 21 goal 4: the journal's owner index keyed by a small integer per owner instead of
# the owner's 40-character ID. A Session's run of entries sits mid-index, and each time its
# leaf fills SQLite rebalances it with two siblings and rewrites their parent (4 frames):
# with text keys that was about once a turn (5.5 of a turn's ~25 frames; a simulation of the
# journal alone: 5.5 → 2.7 with integer keys). `event_owners` numbers each owner once (its
# first event); every event stores its owner's number beside its owner ID, and
# `UNIQUE (owner_no, owner_seq)` replaces `UNIQUE (owner_id, owner_seq)` (the same constraint:
# owner ID and number correspond one to one). Queries by owner name the number through
# `event_owners` (`_events.OWNER_NO`). Columns as before, `owner_no` last.
_PAGES_EVENT_OWNER_NUMBERS = """
CREATE TABLE event_owners (
    owner_no INTEGER PRIMARY KEY,
    owner_id TEXT NOT NULL UNIQUE
);
INSERT INTO event_owners (owner_id)
    SELECT owner_id FROM events GROUP BY owner_id ORDER BY min(position);
CREATE TABLE events_next (
    position INTEGER PRIMARY KEY,
    event_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    owner_type TEXT NOT NULL,
    owner_id TEXT NOT NULL,
    owner_seq INTEGER NOT NULL,
    aggregate_revision INTEGER,
    project_id TEXT,
    session_id TEXT,
    actor_id TEXT,
    causation_id TEXT,
    correlation_id TEXT,
    classification TEXT NOT NULL,
    occurred_ms INTEGER NOT NULL,
    payload TEXT NOT NULL,
    schema_version TEXT,
    attempt_id TEXT,
    activation_id TEXT,
    command_id TEXT,
    owner_no INTEGER NOT NULL,
    UNIQUE (owner_no, owner_seq)
);
INSERT INTO events_next SELECT e.position, e.event_id, e.event_type, e.owner_type, e.owner_id,
    e.owner_seq, e.aggregate_revision, e.project_id, e.session_id, e.actor_id, e.causation_id,
    e.correlation_id, e.classification, e.occurred_ms, e.payload, e.schema_version,
    e.attempt_id, e.activation_id, e.command_id, o.owner_no
    FROM events e JOIN event_owners o ON o.owner_id = e.owner_id ORDER BY e.position;
DROP TABLE events;
ALTER TABLE events_next RENAME TO events;
CREATE UNIQUE INDEX events_by_legacy_id ON events (event_id)
    WHERE (length(event_id) <> 56 OR event_id < 'event_f');
"""

# Issue 21 goal 4: a turn.send's receipt was the only row of `receipts_by_target` most
# turns wrote (a random 40-character key: one page per turn). Its turn now records the
# receipt's sequence (`turns.send_receipt`, `storage.claim_receipt_target`) and the receipt
# leaves `target_id` empty for it, so the index holds only receipts no row claimed (a partial
# index: `target_id = ?` implies `target_id IS NOT NULL`). The turns sent before get their
# send's sequence from the index, before it is rebuilt; their receipts keep `target_id`.
_PAGES_RECEIPT_TARGET_ON_TURN = """
ALTER TABLE turns ADD COLUMN send_receipt INTEGER;
UPDATE turns SET send_receipt = (SELECT min(r.sequence) FROM receipts r
    WHERE r.target_id = turns.turn_id AND r.operation_id = 'turn.send');
DROP INDEX receipts_by_target;
CREATE INDEX receipts_by_target ON receipts (target_id) WHERE target_id IS NOT NULL;
"""

# Issue 21 goal 4: leaner journal rows. A Session's events repeated its 40-character ID as
# `session_id` beside `owner_id`, every event since the envelope spelled out
# `maia.event.v1`, and a command's events stored its ID three times (command, cause,
# correlation): ~53 of an event's ~380 bytes in process, more over the API, so a turn's
# ~11 events overflowed a page most turns (bench/_pages.py: events 4.0 -> 3.0 frames per
# turn). These are now generated columns, read and filtered by name as before, computed from
# what is stored: `session_stored` '' is "the owner's ID", `schema_stored` '' the current
# version, `causation_stored`/`correlation_stored` '' "the command's ID" ('' is never an ID
# or a version); anything else (NULL too) is stored as it was. Same columns, same order,
# the four stored ones last.
_PAGES_LEAN_EVENT_ROWS = """
CREATE TABLE events_next (
    position INTEGER PRIMARY KEY,
    event_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    owner_type TEXT NOT NULL,
    owner_id TEXT NOT NULL,
    owner_seq INTEGER NOT NULL,
    aggregate_revision INTEGER,
    project_id TEXT,
    session_id TEXT GENERATED ALWAYS AS
        (CASE session_stored WHEN '' THEN owner_id ELSE session_stored END) VIRTUAL,
    actor_id TEXT,
    causation_id TEXT GENERATED ALWAYS AS
        (CASE causation_stored WHEN '' THEN command_id ELSE causation_stored END) VIRTUAL,
    correlation_id TEXT GENERATED ALWAYS AS
        (CASE correlation_stored WHEN '' THEN command_id ELSE correlation_stored END) VIRTUAL,
    classification TEXT NOT NULL,
    occurred_ms INTEGER NOT NULL,
    payload TEXT NOT NULL,
    schema_version TEXT GENERATED ALWAYS AS
        (CASE schema_stored WHEN '' THEN 'maia.event.v1' ELSE schema_stored END) VIRTUAL,
    attempt_id TEXT,
    activation_id TEXT,
    command_id TEXT,
    owner_no INTEGER NOT NULL,
    session_stored TEXT,
    schema_stored TEXT,
    causation_stored TEXT,
    correlation_stored TEXT,
    UNIQUE (owner_no, owner_seq)
);
INSERT INTO events_next (position, event_id, event_type, owner_type, owner_id, owner_seq,
    aggregate_revision, project_id, actor_id, classification, occurred_ms, payload,
    attempt_id, activation_id, command_id, owner_no, session_stored, schema_stored,
    causation_stored, correlation_stored)
    SELECT position, event_id, event_type, owner_type, owner_id, owner_seq,
    aggregate_revision, project_id, actor_id, classification, occurred_ms, payload,
    attempt_id, activation_id, command_id, owner_no,
    CASE WHEN session_id = owner_id THEN '' ELSE session_id END,
    CASE WHEN schema_version = 'maia.event.v1' THEN '' ELSE schema_version END,
    CASE WHEN causation_id = command_id THEN '' ELSE causation_id END,
    CASE WHEN correlation_id = command_id THEN '' ELSE correlation_id END
    FROM events ORDER BY position;
DROP TABLE events;
ALTER TABLE events_next RENAME TO events;
CREATE UNIQUE INDEX events_by_legacy_id ON events (event_id)
    WHERE (length(event_id) <> 56 OR event_id < 'event_f');
"""

# The triggers that keep `sessions.unfinished_from` (below); a rebuild of `turns` (which
# drops its triggers) creates them again.
_UNFINISHED_TRIGGERS: Final = """
CREATE TRIGGER turns_unfinished_insert AFTER INSERT ON turns
    WHEN new.state IN ('queued', 'dispatching', 'running')
BEGIN
    UPDATE sessions SET unfinished_from = new.seq WHERE session_id = new.session_id
        AND (unfinished_from IS NULL OR unfinished_from > new.seq);
END;
CREATE TRIGGER turns_unfinished_enter AFTER UPDATE OF state ON turns
    WHEN new.state IN ('queued', 'dispatching', 'running')
        AND old.state NOT IN ('queued', 'dispatching', 'running')
BEGIN
    UPDATE sessions SET unfinished_from = new.seq WHERE session_id = new.session_id
        AND (unfinished_from IS NULL OR unfinished_from > new.seq);
END;
CREATE TRIGGER turns_unfinished_leave AFTER UPDATE OF state ON turns
    WHEN old.state IN ('queued', 'dispatching', 'running')
        AND new.state NOT IN ('queued', 'dispatching', 'running')
BEGIN
    UPDATE sessions SET unfinished_from = (SELECT min(t.seq) FROM turns t
        WHERE t.session_id = new.session_id AND t.seq > new.seq
        AND t.state IN ('queued', 'dispatching', 'running'))
        WHERE session_id = new.session_id AND unfinished_from = new.seq;
END;
CREATE TRIGGER turns_unfinished_delete AFTER DELETE ON turns
    WHEN old.state IN ('queued', 'dispatching', 'running')
BEGIN
    UPDATE sessions SET unfinished_from = (SELECT min(t.seq) FROM turns t
        WHERE t.session_id = old.session_id AND t.seq > old.seq
        AND t.state IN ('queued', 'dispatching', 'running'))
        WHERE session_id = old.session_id AND unfinished_from = old.seq;
END;
CREATE TRIGGER turns_unfinished_move AFTER UPDATE OF session_id, seq ON turns
    WHEN old.session_id IS NOT new.session_id OR old.seq IS NOT new.seq
BEGIN
    UPDATE sessions SET unfinished_from = (SELECT min(t.seq) FROM turns t
        WHERE t.session_id = sessions.session_id
        AND t.state IN ('queued', 'dispatching', 'running'))
        WHERE session_id IN (old.session_id, new.session_id);
END;
"""

# Issue 21 goal 4: the partial index `turns_unfinished` took one page in each of a turn's
# two commits (its entry in at the send, out at the end). A Session's row, which both commits
# rewrite anyway, now holds `unfinished_from`: the lowest send order of its unfinished turns
# (NULL when none), kept by triggers on `turns`, so every writer keeps it and no page moves
# for it. Readers of unfinished turns search `UNIQUE (session_id, seq)` from there (a Session
# runs its turns in send order, so the range holds its unfinished ones and any cancelled
# between); across Sessions they scan `sessions` first (actors/session/_sql_turns.py).
_PAGES_UNFINISHED_ON_SESSION = (
    """
ALTER TABLE sessions ADD COLUMN unfinished_from INTEGER;
UPDATE sessions SET unfinished_from = (SELECT min(t.seq) FROM turns t
    WHERE t.session_id = sessions.session_id AND t.state IN ('queued', 'dispatching', 'running'));
DROP INDEX turns_unfinished;
"""
    + _UNFINISHED_TRIGGERS
)

# Issue 21 goal 4: `turn_items` keyed by its turn and place, `item_key = turn_no << 24 |
# seq`, instead of a rowid beside the unique index `(turn_id, seq)`, which every item's insert
# updated (a random 37-character key: one more page per turn, and its splits). A turn's items
# are the key range of its `turn_no`, an explicit INTEGER PRIMARY KEY that `turns` now
# declares (the rowid it had, which a VACUUM could renumber; its triggers made again), so
# appending a new turn's items appends to the table. A trigger refuses a row whose key is
# not its turn's (an unknown turn too) or whose place is outside 0..2**24-1, whoever writes
# it. Items of a turn that no longer exists keep a negative key (-rowid). Same columns
# otherwise, the keys added (`item_key` first, `turn_no` last).
_PAGES_TURN_ITEMS_ON_TURN_KEY = (
    """
CREATE TABLE turns_next (
    turn_id TEXT NOT NULL UNIQUE,
    session_id TEXT NOT NULL REFERENCES sessions (session_id),
    seq INTEGER NOT NULL,                       -- send order within the Session, from 1
    state TEXT NOT NULL,
    revision INTEGER NOT NULL DEFAULT 1,
    text TEXT NOT NULL,
    failure_reason TEXT,
    created_ms INTEGER NOT NULL,
    started_ms INTEGER,
    finished_ms INTEGER,
    usage TEXT,
    send_receipt INTEGER,
    turn_no INTEGER PRIMARY KEY,
    UNIQUE (session_id, seq)
);
INSERT INTO turns_next (turn_no, turn_id, session_id, seq, state, revision, text,
    failure_reason, created_ms, started_ms, finished_ms, usage, send_receipt)
    SELECT rowid, turn_id, session_id, seq, state, revision, text, failure_reason, created_ms,
    started_ms, finished_ms, usage, send_receipt FROM turns ORDER BY rowid;
DROP TABLE turns;
ALTER TABLE turns_next RENAME TO turns;
CREATE TABLE turn_items_next (
    item_key INTEGER PRIMARY KEY,               -- its turn's turn_no << 24 | seq
    item_id TEXT NOT NULL,
    turn_id TEXT NOT NULL REFERENCES turns (turn_id),
    seq INTEGER NOT NULL,                       -- order within the turn, from 1
    kind TEXT NOT NULL,
    text TEXT NOT NULL DEFAULT '',
    state TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL,
    data TEXT,
    truncated INTEGER NOT NULL DEFAULT 0,
    artifact TEXT
);
INSERT INTO turn_items_next (item_key, item_id, turn_id, seq, kind, text, state, created_ms,
    updated_ms, data, truncated, artifact)
    SELECT coalesce((SELECT (t.turn_no << 24) + i.seq FROM turns t WHERE t.turn_id = i.turn_id
    AND i.seq BETWEEN 0 AND 16777215), -i.rowid), i.item_id, i.turn_id, i.seq, i.kind, i.text,
    i.state, i.created_ms, i.updated_ms, i.data, i.truncated, i.artifact
    FROM turn_items i ORDER BY i.rowid;
DROP TABLE turn_items;
ALTER TABLE turn_items_next RENAME TO turn_items;
CREATE TRIGGER turn_items_key_insert BEFORE INSERT ON turn_items
    WHEN new.seq NOT BETWEEN 0 AND 16777215 OR new.item_key IS NOT
        (SELECT (t.turn_no << 24) + new.seq FROM turns t WHERE t.turn_id = new.turn_id)
BEGIN
    SELECT RAISE(ABORT, 'turn_items: item_key is not its turn''s turn_no << 24 | seq');
END;
CREATE TRIGGER turn_items_key_update BEFORE UPDATE OF item_key, turn_id, seq ON turn_items
    WHEN new.seq NOT BETWEEN 0 AND 16777215 OR new.item_key IS NOT
        (SELECT (t.turn_no << 24) + new.seq FROM turns t WHERE t.turn_id = new.turn_id)
BEGIN
    SELECT RAISE(ABORT, 'turn_items: item_key is not its turn''s turn_no << 24 | seq');
END;
"""
    + _UNFINISHED_TRIGGERS
)

# Issue 21 goal 4: the two triggers that moved `sessions.unfinished_from` when a turn entered
# or left the unfinished states, as one: SQLite runs each trigger's WHEN for every row an
# `UPDATE OF state` touches (four per turn), and a trigger that never fired still cost a
# turn ~5-8 us of SQLite (a micro-benchmark of a turn's statements: 72 -> 65 us). It fires
# only when the state crosses the line, and sets the value as the two did.
_PAGES_UNFINISHED_ONE_TRIGGER = """
DROP TRIGGER turns_unfinished_enter;
DROP TRIGGER turns_unfinished_leave;
CREATE TRIGGER turns_unfinished_state AFTER UPDATE OF state ON turns
    WHEN (old.state IN ('queued', 'dispatching', 'running'))
        <> (new.state IN ('queued', 'dispatching', 'running'))
BEGIN
    UPDATE sessions SET unfinished_from = CASE
        WHEN new.state IN ('queued', 'dispatching', 'running')
            THEN min(coalesce(unfinished_from, new.seq), new.seq)
        WHEN unfinished_from = new.seq THEN (SELECT min(t.seq) FROM turns t
            WHERE t.session_id = new.session_id AND t.seq > new.seq
            AND t.state IN ('queued', 'dispatching', 'running'))
        ELSE unfinished_from END
        WHERE session_id = new.session_id;
END;
"""

# Issue 21 goal 4: a `turn_items` row inserted without its key (a writer that names the
# columns it had before `_PAGES_TURN_ITEMS_ON_TURN_KEY`, so SQLite hands out a rowid) is
# moved to its key, `turn_no << 24 | seq`, in the same statement, instead of being refused:
# every writer keeps working and every row is where its turn's range finds it. A place taken
# already still fails (the move's key is unique), and an unknown turn or a place outside
# 0..2**24-1 is refused as before. An insert that gives the right key (`insert_item`)
# moves nothing.
_PAGES_TURN_ITEM_KEY_FROM_ANY_WRITER = """
DROP TRIGGER turn_items_key_insert;
CREATE TRIGGER turn_items_key_insert AFTER INSERT ON turn_items
    WHEN new.item_key IS NOT
        (SELECT (t.turn_no << 24) + new.seq FROM turns t WHERE t.turn_id = new.turn_id)
        OR new.seq NOT BETWEEN 0 AND 16777215
BEGIN
    SELECT RAISE(ABORT, 'turn_items: no turn has this turn_id, or seq is outside 0..2**24-1')
        WHERE new.seq NOT BETWEEN 0 AND 16777215
        OR NOT EXISTS (SELECT 1 FROM turns t WHERE t.turn_id = new.turn_id);
    UPDATE turn_items SET item_key =
        (SELECT (t.turn_no << 24) + new.seq FROM turns t WHERE t.turn_id = new.turn_id)
        WHERE item_key = new.item_key;
END;
"""

# Issue 21 goals 3 and 5: the triggers a turn runs on every insert and state move test the
# unfinished states with `=` and OR, not `IN ('queued', 'dispatching', 'running')`: SQLite
# builds an ephemeral table for each such IN list each time the trigger runs (a page buffer
# zeroed and a B-tree made: 5.8 against 1.7 us per state update in a micro-benchmark, and
# about 17 page fetches a turn on the writer). Same states, same values set.
_STMT_UNFINISHED_TRIGGERS_WITHOUT_IN_LISTS = """
DROP TRIGGER turns_unfinished_insert;
CREATE TRIGGER turns_unfinished_insert AFTER INSERT ON turns
    WHEN new.state = 'queued' OR new.state = 'dispatching' OR new.state = 'running'
BEGIN
    UPDATE sessions SET unfinished_from = new.seq WHERE session_id = new.session_id
        AND (unfinished_from IS NULL OR unfinished_from > new.seq);
END;
DROP TRIGGER turns_unfinished_state;
CREATE TRIGGER turns_unfinished_state AFTER UPDATE OF state ON turns
    WHEN (old.state = 'queued' OR old.state = 'dispatching' OR old.state = 'running')
        <> (new.state = 'queued' OR new.state = 'dispatching' OR new.state = 'running')
BEGIN
    UPDATE sessions SET unfinished_from = CASE
        WHEN new.state = 'queued' OR new.state = 'dispatching' OR new.state = 'running'
            THEN min(coalesce(unfinished_from, new.seq), new.seq)
        WHEN unfinished_from = new.seq THEN (SELECT min(t.seq) FROM turns t
            WHERE t.session_id = new.session_id AND t.seq > new.seq
            AND (t.state = 'queued' OR t.state = 'dispatching' OR t.state = 'running'))
        ELSE unfinished_from END
        WHERE session_id = new.session_id;
END;
"""

MIGRATIONS: Final[tuple[str, ...]] = (
    _V1, _V2_ACTOR_TIMERS, _CONFIG_ADMISSION, _WEBHOOKS, _ROUTINES, _AGENT_SESSIONS,
    _SESSION_FAILURE, _EVENT_ENVELOPE, _MACHINES, _MACHINE_ASSIGNMENTS,
    _PERF_STORE_LEAN_INDEXES, _PERF_STORE_JOURNAL_ROWID, _MACHINE_ASSIGNMENT_ACTOR,
    _PAGES_UNFINISHED_TURNS, _MACHINE_OUTBOX, _PAGES_EVENT_ID_FROM_POSITION,
    _PAGES_RECEIPT_ID_FROM_SEQUENCE, _PAGES_TURN_ITEMS_BY_TURN, _PAGES_EVENT_OWNER_NUMBERS,
    _PAGES_RECEIPT_TARGET_ON_TURN, _PAGES_LEAN_EVENT_ROWS, _PAGES_UNFINISHED_ON_SESSION,
    _PAGES_TURN_ITEMS_ON_TURN_KEY, _PAGES_UNFINISHED_ONE_TRIGGER,
    _PAGES_TURN_ITEM_KEY_FROM_ANY_WRITER, _STMT_UNFINISHED_TRIGGERS_WITHOUT_IN_LISTS,
)  # fmt: skip
SCHEMA_VERSION: Final = len(MIGRATIONS)


def read_schema_version(path: Path) -> int | None:
    """The user_version of the database at `path` read without writing, or None if absent."""
    if not path.exists():
        return None
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
    finally:
        conn.close()
    return int(version)


def refuse_newer(version: int | None, path: Path) -> None:
    """Raise `storage_version_unsupported` if `version` is newer than this code knows."""
    if version is not None and version > SCHEMA_VERSION:
        raise MaiaError(
            "storage_version_unsupported",
            f"the database {path} has schema version {version}, newer than this Maia's "
            f"{SCHEMA_VERSION}; it was left untouched (use the newer Maia, or a backup)",
            {"path": str(path), "found": version, "known": SCHEMA_VERSION},
        )


def migrate(conn: sqlite3.Connection, path: Path) -> int:
    """Apply pending migrations on `conn` (autocommit mode); return the new version.

    Raises `storage_version_unsupported` for a newer database (nothing written), and
    sqlite3.Error if a migration fails (that migration rolled back, earlier ones kept).
    """
    current = int(conn.execute("PRAGMA user_version").fetchone()[0])
    refuse_newer(current, path)
    if current == SCHEMA_VERSION:
        return SCHEMA_VERSION
    # A rebuild of a parent table (`turns`: `_PAGES_TURN_ITEMS_ON_TURN_KEY`) drops it with
    # children pointing at it, which enforced foreign keys refuse: migrations run with them
    # off, SQLite's own procedure for a table rebuild (no schema here has ON DELETE actions),
    # and they are switched back on after, as the caller had them.
    enforced = bool(conn.execute("PRAGMA foreign_keys").fetchone()[0])
    conn.execute("PRAGMA foreign_keys = OFF")
    try:
        for number in range(current + 1, SCHEMA_VERSION + 1):
            conn.execute("BEGIN IMMEDIATE")
            try:
                for statement in _statements(MIGRATIONS[number - 1]):
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {number}")
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
    finally:
        if enforced:
            conn.execute("PRAGMA foreign_keys = ON")
    return SCHEMA_VERSION


def _statements(script: str) -> list[str]:
    """Split a migration script into complete statements (executescript would COMMIT)."""
    statements: list[str] = []
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip())
            pending = ""
    if pending.strip():
        raise ValueError(f"incomplete statement in migration: {pending.strip()[:60]}")
    return statements
