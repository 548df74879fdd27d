"""Numbered schema migrations (DESIGN §3).

Theory of operation: `MIGRATIONS` is an append-only tuple of `(version, sql)`. The database
records the last applied version in `PRAGMA user_version`; opening it applies every newer
migration, each in its own transaction together with the `user_version` bump, so a crash leaves
the schema at exactly one version. **Never edit a migration that has shipped: add a new one.**

Conventions of the schema: STRICT tables; times are wall-clock seconds (REAL); JSON columns are
TEXT checked with `json_valid`; `seq` columns use AUTOINCREMENT so a number is never reused after
rows are pruned. The audit table holds ids, types, decisions and codes — never a body.

Why one module of ~640 lines: it is one concept, the schema's history, and almost all of it is
SQL that may not change once shipped; its code is the dozen lines below the last migration.
Read top to bottom, it is how every table came to be what it is. Cut by version or by table, a
reader would have to rebuild one history from several files, and a new migration would have no
obvious home; it grows by one string and one tuple entry at a time.
"""

from __future__ import annotations

from typing import Final

__all__ = ["LATEST_VERSION", "MIGRATIONS"]

_V1: Final = """
CREATE TABLE conversations (
    conversation_id TEXT PRIMARY KEY,
    agent_id        TEXT,
    created_at      REAL NOT NULL,
    updated_at      REAL NOT NULL
) STRICT;

CREATE TABLE messages (
    message_id      TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations (conversation_id),
    direction       TEXT NOT NULL CHECK (direction IN ('inbound', 'outbound')),
    type            TEXT NOT NULL,
    app_scope       TEXT,
    outbox_id       TEXT UNIQUE,  -- outbound: the outbox row carrying it
    remote_seq      INTEGER,      -- the AppServer's seq once known
    state           TEXT NOT NULL,
    body            TEXT NOT NULL CHECK (json_valid(body)),
    created_at      REAL NOT NULL
) STRICT;
CREATE INDEX messages_by_conversation ON messages (conversation_id, created_at);

CREATE TABLE cursors (
    name       TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    updated_at REAL NOT NULL
) STRICT;

CREATE TABLE outbox (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    outbox_id       TEXT NOT NULL UNIQUE,
    conversation_id TEXT NOT NULL,
    kind            TEXT NOT NULL,
    body            TEXT NOT NULL CHECK (json_valid(body)),
    created_at      REAL NOT NULL,
    acked_at        REAL,
    remote_id       TEXT
) STRICT;
CREATE INDEX outbox_pending ON outbox (seq) WHERE acked_at IS NULL;

-- An acknowledged delivery keeps its row (body cleared) so that a late retry of the same
-- delivery is recognised and not delivered twice.
CREATE TABLE app_inbox (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    app_scope   TEXT NOT NULL,
    delivery_id TEXT NOT NULL,
    body        TEXT CHECK (body IS NULL OR json_valid(body)),
    created_at  REAL NOT NULL,
    acked_at    REAL,
    UNIQUE (app_scope, delivery_id),
    CHECK ((acked_at IS NULL) = (body IS NOT NULL))
) STRICT;
CREATE INDEX app_inbox_pending ON app_inbox (app_scope, seq) WHERE acked_at IS NULL;

CREATE TABLE tool_calls (
    call_id            TEXT PRIMARY KEY,
    app_scope          TEXT NOT NULL,
    instance_id        TEXT,
    conversation_id    TEXT,
    tool               TEXT NOT NULL,
    inventory_revision TEXT,
    state              TEXT NOT NULL CHECK (state IN (
        'received', 'routing', 'waiting_for_app', 'running', 'submitted',
        'completed', 'failed', 'cancelled', 'expired', 'rejected')),
    terminal_code      TEXT,
    input              TEXT CHECK (input IS NULL OR json_valid(input)),
    result             TEXT CHECK (result IS NULL OR json_valid(result)),
    created_at         REAL NOT NULL,
    updated_at         REAL NOT NULL
) STRICT;
CREATE INDEX tool_calls_by_instance ON tool_calls (instance_id, state);

CREATE TABLE interactions (
    interaction_id TEXT PRIMARY KEY,
    call_id        TEXT UNIQUE,  -- set when the Agent asked through a tool call
    owner_scope    TEXT NOT NULL,
    instance_id    TEXT,
    agent_id       TEXT,
    conversation_id TEXT,
    app_session_id TEXT,
    kind           TEXT NOT NULL CHECK (kind IN ('notice', 'choice', 'confirm', 'input')),
    state          TEXT NOT NULL CHECK (state IN (
        'pending', 'presented', 'submitted', 'completed', 'cancelled', 'expired', 'failed')),
    request        TEXT NOT NULL CHECK (json_valid(request)),
    answer         TEXT CHECK (answer IS NULL OR json_valid(answer)),
    terminal_code  TEXT,
    expires_at     REAL,  -- NULL: never (notice)
    created_at     REAL NOT NULL,
    updated_at     REAL NOT NULL
) STRICT;
CREATE INDEX interactions_open ON interactions (expires_at)
    WHERE state IN ('pending', 'presented', 'submitted');

CREATE TABLE registry (
    app_scope        TEXT PRIMARY KEY,
    version          TEXT NOT NULL,
    previous_version TEXT,  -- the verified predecessor a rollback may return to
    enabled          INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    revoked          INTEGER NOT NULL DEFAULT 0 CHECK (revoked IN (0, 1)),
    manifest         TEXT NOT NULL CHECK (json_valid(manifest)),
    bundle_sha256    TEXT,
    installed_at     REAL NOT NULL,
    updated_at       REAL NOT NULL
) STRICT;

CREATE TABLE instances (
    instance_id     TEXT PRIMARY KEY,
    app_scope       TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN (
        'starting', 'foreground', 'background', 'suspended', 'stopping', 'stopped', 'failed')),
    conversation_id TEXT,
    app_session_id  TEXT,
    created_at      REAL NOT NULL,
    updated_at      REAL NOT NULL
) STRICT;
CREATE INDEX instances_by_scope ON instances (app_scope, state);

-- position 0 is the bottom; the highest position is the foreground instance.
CREATE TABLE focus_stack (
    position    INTEGER PRIMARY KEY,
    instance_id TEXT NOT NULL UNIQUE REFERENCES instances (instance_id) ON DELETE CASCADE
) STRICT;

CREATE TABLE app_sessions (
    app_session_id  TEXT PRIMARY KEY,
    app_scope       TEXT NOT NULL,
    instance_id     TEXT,
    agent_id        TEXT,
    conversation_id TEXT,
    state           TEXT NOT NULL CHECK (state IN ('open', 'closed')),
    opened_at       REAL NOT NULL,
    closed_at       REAL
) STRICT;

-- Seed 004: one JSON document per (app_scope, app_session_id); empty is {data: null, rev 0}.
CREATE TABLE session_data (
    app_scope      TEXT NOT NULL,
    app_session_id TEXT NOT NULL,
    revision       INTEGER NOT NULL CHECK (revision >= 0),
    data           TEXT CHECK (data IS NULL OR json_valid(data)),
    updated_at     REAL NOT NULL,
    PRIMARY KEY (app_scope, app_session_id)
) STRICT;

CREATE TABLE artifacts (
    artifact_id TEXT PRIMARY KEY,
    app_scope   TEXT NOT NULL,
    instance_id TEXT,
    name        TEXT NOT NULL,
    media_type  TEXT NOT NULL,
    size        INTEGER NOT NULL CHECK (size >= 0),
    sha256      TEXT NOT NULL,
    created_at  REAL NOT NULL
) STRICT;

CREATE TABLE inventory_revisions (
    revision     TEXT PRIMARY KEY,
    ordinal      INTEGER NOT NULL UNIQUE,  -- total order of revisions
    tools        TEXT NOT NULL CHECK (json_valid(tools)),
    created_at   REAL NOT NULL,
    published_at REAL
) STRICT;

-- `fingerprint` makes appends idempotent: a retried batch re-inserts nothing.
CREATE TABLE audit (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    at           REAL NOT NULL,
    event        TEXT NOT NULL,
    actor        TEXT NOT NULL,
    peer         TEXT,
    code         TEXT,
    message_type TEXT,
    subject_id   TEXT,
    fingerprint  BLOB NOT NULL UNIQUE
) STRICT;
"""

# Conversations (store.conversation.*): every message gets a stable `seq` that orders it in its
# conversation, its sender and a failure code; outbox rows get an explicit state, so a failed
# row leaves the pending set without pretending to be acknowledged. `messages` is rebuilt: SQLite
# cannot add a primary key, and the rowid of a table without one may change on VACUUM. Rows
# already there keep their order; an outbound message takes the state of its outbox row, and a
# message without a scope belongs to `chat` (the legacy rule, DESIGN §12).
_V2: Final = """
CREATE TABLE messages_v2 (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id      TEXT NOT NULL UNIQUE,
    conversation_id TEXT NOT NULL REFERENCES conversations (conversation_id),
    direction       TEXT NOT NULL CHECK (direction IN ('inbound', 'outbound')),
    kind            TEXT NOT NULL,  -- the wire type
    app_scope       TEXT NOT NULL,
    sender_kind     TEXT,
    sender_id       TEXT,
    outbox_id       TEXT UNIQUE,    -- outbound: the outbox row carrying it
    remote_seq      INTEGER,        -- the AppServer's seq once known
    state           TEXT NOT NULL CHECK (state IN ('received', 'pending', 'sent', 'failed')),
    failed_code     TEXT,
    body            TEXT NOT NULL CHECK (json_valid(body)),
    created_at      REAL NOT NULL,
    updated_at      REAL NOT NULL,
    CHECK ((direction = 'inbound') = (state = 'received')),
    CHECK (failed_code IS NULL OR state = 'failed')
) STRICT;

INSERT INTO messages_v2 (message_id, conversation_id, direction, kind, app_scope, outbox_id,
                         remote_seq, state, body, created_at, updated_at)
SELECT m.message_id, m.conversation_id, m.direction, m.type, coalesce(m.app_scope, 'chat'),
       m.outbox_id,
       m.remote_seq,
       CASE
           WHEN m.direction = 'inbound' THEN 'received'
           WHEN o.acked_at IS NOT NULL THEN 'sent'
           WHEN o.outbox_id IS NOT NULL THEN 'pending'
           WHEN m.state IN ('pending', 'sent', 'failed') THEN m.state
           ELSE 'pending'
       END,
       m.body, m.created_at, m.created_at
FROM messages AS m LEFT JOIN outbox AS o ON o.outbox_id = m.outbox_id
ORDER BY m.created_at, m.rowid;

DROP TABLE messages;
ALTER TABLE messages_v2 RENAME TO messages;
CREATE INDEX messages_by_conversation ON messages (conversation_id, seq);

ALTER TABLE outbox ADD COLUMN state TEXT NOT NULL DEFAULT 'pending'
    CHECK (state IN ('pending', 'sent', 'failed'));
ALTER TABLE outbox ADD COLUMN failed_code TEXT;
UPDATE outbox SET state = 'sent' WHERE acked_at IS NOT NULL;
DROP INDEX outbox_pending;
CREATE INDEX outbox_pending ON outbox (seq) WHERE state = 'pending';
"""

# Runtime records (store.tool_call.*, instance.*, focus_stack.*, registry.*, inventory.*).
# `tool_calls` is rebuilt with every field of seed 003's RuntimeToolCallRecord, a `seq` to page
# by, and constraints that keep a result on completed calls only and a code on failed ones only.
# No release wrote tool calls (schema 1 only declared the table); a row that is there anyway
# keeps its facts and gets neutral values for what it lacks (handling `direct`, input `{}`, a
# timeout of 0: already due). `tool_call_outbox` says which outbox rows speak for which call;
# its partial unique index is the database's own guarantee of ONE terminal row per call.
# The focus stack gets a revision, instances the call that created them, the registry the app's
# kind, and inventory revisions a counter that never goes back (AUTOINCREMENT).
_V3: Final = """
CREATE TABLE tool_calls_v3 (
    seq                INTEGER PRIMARY KEY AUTOINCREMENT,
    call_id            TEXT NOT NULL UNIQUE,
    tool               TEXT NOT NULL,
    inventory_revision TEXT NOT NULL,
    app_scope          TEXT NOT NULL,
    instance_id        TEXT,
    conversation_id    TEXT NOT NULL,
    handling           TEXT NOT NULL CHECK (handling IN (
        'direct', 'interactive', 'launch', 'foreground', 'operation')),
    state              TEXT NOT NULL CHECK (state IN (
        'received', 'routing', 'waiting_for_app', 'running', 'submitted',
        'completed', 'failed', 'cancelled', 'expired', 'rejected')),
    input              TEXT NOT NULL CHECK (json_valid(input)),
    result             TEXT CHECK (result IS NULL OR json_valid(result)),
    error_code         TEXT,
    progress           TEXT CHECK (progress IS NULL OR json_valid(progress)),
    timeout_ms         INTEGER NOT NULL CHECK (timeout_ms >= 0),
    created_at         REAL NOT NULL,
    updated_at         REAL NOT NULL,
    deadline_at        REAL NOT NULL,
    CHECK (result IS NULL OR state = 'completed'),
    CHECK (error_code IS NULL OR state IN ('failed', 'cancelled', 'expired', 'rejected'))
) STRICT;

INSERT INTO tool_calls_v3 (call_id, tool, inventory_revision, app_scope, instance_id,
                           conversation_id, handling, state, input, result, error_code,
                           timeout_ms, created_at, updated_at, deadline_at)
SELECT call_id, tool, coalesce(inventory_revision, ''), app_scope, instance_id,
       coalesce(conversation_id, ''), 'direct', state, coalesce(input, '{}'),
       CASE WHEN state = 'completed' THEN result END,
       CASE WHEN state IN ('failed', 'cancelled', 'expired', 'rejected') THEN terminal_code END,
       0, created_at, updated_at, created_at
FROM tool_calls ORDER BY created_at, rowid;

DROP TABLE tool_calls;
ALTER TABLE tool_calls_v3 RENAME TO tool_calls;
CREATE INDEX tool_calls_by_scope ON tool_calls (app_scope, seq);
CREATE INDEX tool_calls_by_instance ON tool_calls (instance_id, seq);
CREATE INDEX tool_calls_open ON tool_calls (deadline_at)
    WHERE state IN ('received', 'routing', 'waiting_for_app', 'running', 'submitted');

CREATE TABLE tool_call_outbox (
    outbox_id TEXT PRIMARY KEY REFERENCES outbox (outbox_id),
    call_id   TEXT NOT NULL REFERENCES tool_calls (call_id),
    role      TEXT NOT NULL CHECK (role IN ('receipt', 'progress', 'terminal')),
    status    TEXT  -- receipt: its status; terminal: the final state it reports
) STRICT;
CREATE INDEX tool_call_outbox_by_call ON tool_call_outbox (call_id);
CREATE UNIQUE INDEX tool_call_outbox_one_terminal ON tool_call_outbox (call_id)
    WHERE role = 'terminal';

ALTER TABLE instances ADD COLUMN created_by_call_id TEXT;

CREATE TABLE focus_stack_revision (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    revision   INTEGER NOT NULL CHECK (revision >= 0),
    updated_at REAL NOT NULL
) STRICT;

ALTER TABLE registry ADD COLUMN kind TEXT NOT NULL DEFAULT 'installed';

CREATE TABLE inventory_bumps (
    revision   INTEGER PRIMARY KEY AUTOINCREMENT,
    bump_id    TEXT UNIQUE,
    reason     TEXT NOT NULL,
    created_at REAL NOT NULL
) STRICT;
"""

# v4: an app that acknowledges a delivery it does not own is audited; finding the owner by
# delivery id alone must not scan the inbox (a hostile app could ask at its full rate).
_V4: Final = """
CREATE INDEX app_inbox_by_delivery ON app_inbox (delivery_id);
"""

# v5: a MiniApp's accepted result makes its call `submitted` (seed 000 §7.2, seed 003 §3.2):
# the result is kept on the row from then on, and the call becomes `completed` when the
# AppServer acknowledged its terminal outbox row. v3's check allowed a result on completed calls
# only; SQLite cannot alter a check, so `tool_calls` is rebuilt with the same columns, rows,
# seqs and AUTOINCREMENT counter. `tool_call_outbox` references it, so it is set aside and put
# back around the rebuild (foreign keys stay enforced: nothing references a dropped table).
_V5: Final = """
CREATE TABLE tool_call_outbox_v5_copy AS SELECT outbox_id, call_id, role, status
    FROM tool_call_outbox;
DROP TABLE tool_call_outbox;

CREATE TABLE tool_calls_v5 (
    seq                INTEGER PRIMARY KEY AUTOINCREMENT,
    call_id            TEXT NOT NULL UNIQUE,
    tool               TEXT NOT NULL,
    inventory_revision TEXT NOT NULL,
    app_scope          TEXT NOT NULL,
    instance_id        TEXT,
    conversation_id    TEXT NOT NULL,
    handling           TEXT NOT NULL CHECK (handling IN (
        'direct', 'interactive', 'launch', 'foreground', 'operation')),
    state              TEXT NOT NULL CHECK (state IN (
        'received', 'routing', 'waiting_for_app', 'running', 'submitted',
        'completed', 'failed', 'cancelled', 'expired', 'rejected')),
    input              TEXT NOT NULL CHECK (json_valid(input)),
    result             TEXT CHECK (result IS NULL OR json_valid(result)),
    error_code         TEXT,
    progress           TEXT CHECK (progress IS NULL OR json_valid(progress)),
    timeout_ms         INTEGER NOT NULL CHECK (timeout_ms >= 0),
    created_at         REAL NOT NULL,
    updated_at         REAL NOT NULL,
    deadline_at        REAL NOT NULL,
    CHECK (result IS NULL OR state IN ('submitted', 'completed')),
    CHECK (error_code IS NULL OR state IN ('failed', 'cancelled', 'expired', 'rejected'))
) STRICT;
INSERT INTO tool_calls_v5 (seq, call_id, tool, inventory_revision, app_scope, instance_id,
                           conversation_id, handling, state, input, result, error_code,
                           progress, timeout_ms, created_at, updated_at, deadline_at)
SELECT seq, call_id, tool, inventory_revision, app_scope, instance_id, conversation_id,
       handling, state, input, result, error_code, progress, timeout_ms, created_at,
       updated_at, deadline_at
FROM tool_calls ORDER BY seq;
UPDATE sqlite_sequence
    SET seq = max(seq, coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'tool_calls'), 0))
    WHERE name = 'tool_calls_v5';
DROP TABLE tool_calls;
ALTER TABLE tool_calls_v5 RENAME TO tool_calls;
CREATE INDEX tool_calls_by_scope ON tool_calls (app_scope, seq);
CREATE INDEX tool_calls_by_instance ON tool_calls (instance_id, seq);
CREATE INDEX tool_calls_open ON tool_calls (deadline_at)
    WHERE state IN ('received', 'routing', 'waiting_for_app', 'running', 'submitted');

CREATE TABLE tool_call_outbox (
    outbox_id TEXT PRIMARY KEY REFERENCES outbox (outbox_id),
    call_id   TEXT NOT NULL REFERENCES tool_calls (call_id),
    role      TEXT NOT NULL CHECK (role IN ('receipt', 'progress', 'terminal')),
    status    TEXT  -- receipt: its status; terminal: the state of the call it reports
) STRICT;
INSERT INTO tool_call_outbox (outbox_id, call_id, role, status)
    SELECT outbox_id, call_id, role, status FROM tool_call_outbox_v5_copy;
DROP TABLE tool_call_outbox_v5_copy;
CREATE INDEX tool_call_outbox_by_call ON tool_call_outbox (call_id);
CREATE UNIQUE INDEX tool_call_outbox_one_terminal ON tool_call_outbox (call_id)
    WHERE role = 'terminal';
"""

# v6: an inbox delivery is scoped by `app_scope + conversation_id + instance_id` (seed 003
# §3.1), not by scope alone: an app lists and acknowledges only its conversation's deliveries and
# those of the instance it names (NULL: the conversation-level inbox, e.g. the chat's). Rows
# from before keep working: their conversation and instance come from the message that put them
# (its body is the delivered envelope), or else from the one session a v5 device had.
_V6: Final = """
ALTER TABLE app_inbox ADD COLUMN conversation_id TEXT;
ALTER TABLE app_inbox ADD COLUMN instance_id TEXT;
UPDATE app_inbox SET
    conversation_id = coalesce(
        (SELECT m.conversation_id FROM messages m WHERE m.message_id = app_inbox.delivery_id),
        (SELECT json_extract(c.value, '$.conversation_id') FROM cursors c
            WHERE c.name = 'transport.session' AND json_valid(c.value))),
    instance_id = coalesce(
        json_extract(app_inbox.body, '$.scope.instance_id'),
        (SELECT json_extract(m.body, '$.scope.instance_id') FROM messages m
            WHERE m.message_id = app_inbox.delivery_id));
DROP INDEX app_inbox_pending;
CREATE INDEX app_inbox_pending ON app_inbox (app_scope, conversation_id, instance_id, seq)
    WHERE acked_at IS NULL;
"""

# v7: the runtime mints every outbound message id (issue 11): what an app passes is only its
# `client_id`, a deduplication key inside its own scope, so no app can name another message, an
# Agent's, or an outbox row of a tool call. Messages from before keep their ids: theirs were the
# app's, and are its client ids from now on.
_V7: Final = """
ALTER TABLE messages ADD COLUMN client_id TEXT;
UPDATE messages SET client_id = message_id WHERE direction = 'outbound';
CREATE UNIQUE INDEX messages_by_client_id ON messages (app_scope, client_id)
    WHERE client_id IS NOT NULL;
"""

# v8: poison is quarantined (issue 11). A row the runtime cannot decode, or an inbound item that
# failed twice, is moved here with an audit row, and processing moves past it: its `body` is
# kept verbatim for a person to inspect (never logged, never shown by `lineup status`, which
# counts rows by `source`). An item is quarantined once: `(source, item_id)` is its key.
_V8: Final = """
CREATE TABLE dead_letters (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    source     TEXT NOT NULL,  -- where: inbound, inbox, outbox, instance, tool_call, cursor
    item_id    TEXT NOT NULL,  -- its key there
    kind       TEXT,           -- its message type, when one could be read
    code       TEXT NOT NULL,  -- why it is here
    attempts   INTEGER NOT NULL,
    body       ANY,            -- what it held, verbatim (it may not even be text)
    created_at REAL NOT NULL,
    UNIQUE (source, item_id)
) STRICT;
"""

# v9: standard interactions and app sub-sessions are written (issue 12). An interaction says who
# asked it (`source`: the Agent's tool call, or a MiniApp with its `parent_call_id`), where it is
# shown (`surface_id`, `presentation`); its `answer` column holds the result that won. An app
# sub-session may continue an ended one (`previous_app_session_id`), and an instance has at most
# one sub-session. No release wrote either table, so the new constraints hold for what is there.
_V9: Final = """
ALTER TABLE interactions ADD COLUMN source TEXT NOT NULL DEFAULT 'agent_tool'
    CHECK (source IN ('agent_tool', 'miniapp'));
ALTER TABLE interactions ADD COLUMN parent_call_id TEXT;
ALTER TABLE interactions ADD COLUMN surface_id TEXT;
ALTER TABLE interactions ADD COLUMN presentation TEXT NOT NULL DEFAULT 'default'
    CHECK (presentation IN ('default', 'inline', 'modal'));
CREATE INDEX interactions_by_instance ON interactions (instance_id, created_at);
CREATE INDEX interactions_by_app_session ON interactions (app_session_id, created_at);
CREATE INDEX interactions_by_state ON interactions (state, updated_at);

ALTER TABLE app_sessions ADD COLUMN previous_app_session_id TEXT;
CREATE UNIQUE INDEX app_sessions_by_instance ON app_sessions (instance_id);
CREATE INDEX app_sessions_by_state ON app_sessions (state, opened_at);
"""

# v10: capabilities and app delivery (issues 14, 15). A capability grant is the user's standing
# decision for one app and capability ("Always allow", or a block from the permissions page),
# with an expiry; none means the host's policy or the catalog's default, which ask. The registry
# says where an app comes from (`source`), whether it can run (`state`), who signed it
# (`key_id`); `bundle_sha256` and `revoked` are written at last. Every install, update, enable,
# disable, rollback, revocation and removal is an `app_operations` row that moves requested →
# running → completed | failed. `settings` holds the user's choices (the default app).
_V10: Final = """
CREATE TABLE capability_grants (
    app_scope  TEXT NOT NULL,
    capability TEXT NOT NULL,
    policy     TEXT NOT NULL CHECK (policy IN ('allow', 'deny')),
    granted_at REAL NOT NULL,
    expires_at REAL,  -- NULL: until revoked
    PRIMARY KEY (app_scope, capability)
) STRICT;

ALTER TABLE registry ADD COLUMN source TEXT NOT NULL DEFAULT 'bundled'
    CHECK (source IN ('bundled', 'dev', 'installed'));
ALTER TABLE registry ADD COLUMN state TEXT NOT NULL DEFAULT 'active'
    CHECK (state IN ('active', 'unavailable', 'incompatible'));
ALTER TABLE registry ADD COLUMN key_id TEXT;
ALTER TABLE registry ADD COLUMN previous_manifest TEXT
    CHECK (previous_manifest IS NULL OR json_valid(previous_manifest));
ALTER TABLE registry ADD COLUMN previous_bundle_sha256 TEXT;

CREATE TABLE revocations (
    app_scope  TEXT NOT NULL,
    version    TEXT NOT NULL,
    revoked_at REAL NOT NULL,
    PRIMARY KEY (app_scope, version)
) STRICT;

CREATE TABLE app_operations (
    operation_id TEXT PRIMARY KEY,
    app_scope    TEXT NOT NULL,
    kind         TEXT NOT NULL CHECK (kind IN ('install', 'update', 'enable', 'disable',
                     'rollback', 'revoke', 'remove', 'set_default')),
    state        TEXT NOT NULL CHECK (state IN ('requested', 'running', 'completed', 'failed')),
    version      TEXT,
    from_version TEXT,
    code         TEXT,
    created_at   REAL NOT NULL,
    updated_at   REAL NOT NULL
) STRICT;
CREATE INDEX app_operations_by_app ON app_operations (app_scope, created_at);
CREATE INDEX app_operations_open ON app_operations (state) WHERE state IN ('requested', 'running');

CREATE TABLE settings (
    name       TEXT PRIMARY KEY,
    value      TEXT NOT NULL CHECK (json_valid(value)),
    updated_at REAL NOT NULL
) STRICT;
"""

# v11: capability requests that wait on the user or a provider (issue 27), so that each ends
# once with one final audit row though the gateway be killed while it waits: opened before the
# prompt or the provider, ended with its result (the end and its audit row one transaction).
_V11: Final = """
CREATE TABLE capability_requests (
    asker       TEXT NOT NULL,  -- who asked: 'app:<scope>', or 'surface'
    request_id  TEXT NOT NULL,
    app_scope   TEXT NOT NULL,
    capability  TEXT NOT NULL,
    state       TEXT NOT NULL CHECK (state IN ('open', 'ended')),
    status      TEXT,
    code        TEXT,
    output      TEXT CHECK (output IS NULL OR json_valid(output)),
    opened_at   REAL NOT NULL,
    deadline_at REAL NOT NULL,
    ended_at    REAL,
    PRIMARY KEY (asker, request_id),
    CHECK ((state = 'open') = (ended_at IS NULL))
) STRICT;
CREATE INDEX capability_requests_ended ON capability_requests (ended_at)
    WHERE state = 'ended';
CREATE INDEX capability_requests_open ON capability_requests (state) WHERE state = 'open';
"""

# v12: deadline operations (issue 29, item 3; seed 004 §6.3): a runtime operation bound to one
# of an app's tool calls, with its `ends_at` and the result the runtime submits then. Its end
# and its call's terminal row are one transaction; an open one is fired at start if its
# `ends_at` passed while the runtime was down.
_V12: Final = """
CREATE TABLE deadline_operations (
    operation_id TEXT PRIMARY KEY,
    call_id      TEXT NOT NULL UNIQUE,
    app_scope    TEXT NOT NULL,
    instance_id  TEXT NOT NULL,
    state        TEXT NOT NULL CHECK (state IN ('running', 'completed', 'interrupted',
                     'abandoned')),
    ends_at      REAL NOT NULL,
    result       TEXT NOT NULL CHECK (json_valid(result)),
    created_at   REAL NOT NULL,
    updated_at   REAL NOT NULL
) STRICT;
CREATE INDEX deadline_operations_open ON deadline_operations (ends_at) WHERE state = 'running';
CREATE INDEX deadline_operations_by_app ON deadline_operations (app_scope, created_at);
"""

# v13: the records of seed 000 §6 and seed 004 §4.3 (issue 29, items 5 and 6). An instance keeps
# the conversation it serves (v1's column, written at last), the instance that opened it
# (`parent_instance_id`), when it ended (`stopped_at`) and why it failed (`error`: a stable
# code, never a message), and its interaction mode (`mode`: Interact's `im` / `audio` / `video`,
# NULL for an app without modes), so the chat comes back in the mode it was in. An app record
# keeps when it was last enabled (`enabled_at`, NULL while disabled), kept by two triggers so
# that every writer of `enabled` keeps it; an enabled app from before was enabled when it was
# installed. Its install state and active instance count are read from `app_operations` and
# `instances` (`apps/registry.py`), never kept twice. Instances that ended before keep NULL
# for when (it was not recorded).
_V13: Final = """
ALTER TABLE instances ADD COLUMN parent_instance_id TEXT;
ALTER TABLE instances ADD COLUMN stopped_at REAL;
ALTER TABLE instances ADD COLUMN error TEXT;
ALTER TABLE instances ADD COLUMN mode TEXT
    CHECK (mode IS NULL OR mode IN ('im', 'audio', 'video'));
UPDATE instances SET mode = 'im' WHERE app_scope = 'chat';

ALTER TABLE registry ADD COLUMN enabled_at REAL;
UPDATE registry SET enabled_at = installed_at WHERE enabled = 1;
CREATE TRIGGER registry_enabled_at_insert AFTER INSERT ON registry
    WHEN NEW.enabled = 1 AND NEW.enabled_at IS NULL
BEGIN
    UPDATE registry SET enabled_at = NEW.updated_at WHERE app_scope = NEW.app_scope;
END;
CREATE TRIGGER registry_enabled_at_update AFTER UPDATE OF enabled ON registry
    WHEN NEW.enabled IS NOT OLD.enabled
BEGIN
    UPDATE registry SET enabled_at = CASE WHEN NEW.enabled = 1 THEN NEW.updated_at END
        WHERE app_scope = NEW.app_scope;
END;
"""

# v14: an instance keeps its launching tool's `restore_previous_focus` (issue 29, item 6), so
# that focus restarted still knows whether closing it brings the app before it back; every
# instance from before restores it (the default, and all they could have asked then).
_V14: Final = """
ALTER TABLE instances ADD COLUMN restore_previous INTEGER NOT NULL DEFAULT 1
    CHECK (restore_previous IN (0, 1));
"""

# v15: the open calls' deadline index goes (issue 32): no query reads it (the router re-arms
# deadlines from its list by `seq`, and a list of open calls is a scan by `seq` either way), and
# every step of a call wrote it (its `state` is in the index's condition): one B-tree, and one
# WAL page, fewer for a birth and for each step.
_V15: Final = """
DROP INDEX tool_calls_open;
"""

MIGRATIONS: Final[tuple[tuple[int, str], ...]] = (
    (1, _V1), (2, _V2), (3, _V3), (4, _V4), (5, _V5), (6, _V6), (7, _V7), (8, _V8), (9, _V9),
    (10, _V10), (11, _V11), (12, _V12), (13, _V13), (14, _V14), (15, _V15),
)  # fmt: skip

LATEST_VERSION: Final = MIGRATIONS[-1][0]


def _check(migrations: tuple[tuple[int, str], ...]) -> None:
    versions = [version for version, _ in migrations]
    if versions != list(range(1, len(versions) + 1)):
        raise RuntimeError(f"migrations must be numbered 1..n without gaps, got {versions}")


_check(MIGRATIONS)
