-- A DeskLoop database as the store of commit 95b1724 (migrations 0001-0004) made it,
-- dumped with sqlite3 iterdump: one finished episode with a delivered phase. Frozen:
-- it stands for the databases that exist, so tests/store/test_schema.py opens it with
-- today's store and compares its CHECK lists with app/core/vocabulary.py.
BEGIN TRANSACTION;
CREATE TABLE "_sqlite_migrations" (
   "id" INTEGER PRIMARY KEY,
   "migration_set" TEXT,
   "name" TEXT,
   "applied_at" TEXT
);
INSERT INTO "_sqlite_migrations" VALUES(1,'deskloop','0001_episodes_steps_messages_phases_checks','2026-01-15 09:00:00.000000+00:00');
INSERT INTO "_sqlite_migrations" VALUES(2,'deskloop','0002_step_agent_info','2026-01-15 09:00:00.000000+00:00');
INSERT INTO "_sqlite_migrations" VALUES(3,'deskloop','0003_batch_slots','2026-01-15 09:00:00.000000+00:00');
INSERT INTO "_sqlite_migrations" VALUES(4,'deskloop','0004_episode_runner_start','2026-01-15 09:00:00.000000+00:00');
CREATE TABLE batches (
            id TEXT PRIMARY KEY,
            created_at TEXT NOT NULL,
            suite TEXT NOT NULL CHECK (json_valid(suite))
        ) STRICT
        ;
CREATE TABLE checks (
        episode_id INTEGER NOT NULL REFERENCES episodes (id) ON DELETE CASCADE,
        idx INTEGER NOT NULL CHECK (idx >= 0),
        path TEXT NOT NULL,
        name TEXT NOT NULL,
        params TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(params)),
        weight REAL NOT NULL DEFAULT 1.0 CHECK (weight >= 0),
        required INTEGER NOT NULL DEFAULT 1 CHECK (required IN (0, 1)),
        passed INTEGER NOT NULL CHECK (passed IN (0, 1)),
        score REAL NOT NULL CHECK (score BETWEEN 0.0 AND 1.0),
        evidence TEXT NOT NULL DEFAULT '',
        phase INTEGER CHECK (phase >= 0),
        PRIMARY KEY (episode_id, idx)
    ) STRICT
    ;
INSERT INTO "checks" VALUES(1,0,'evaluate','file_exists','{}',1.0,1,1,1.0,'',NULL);
CREATE TABLE episodes (
        id INTEGER PRIMARY KEY,
        task_id TEXT NOT NULL,
        task_path TEXT NOT NULL,
        task_sha256 TEXT NOT NULL,
        app TEXT NOT NULL,
        level TEXT NOT NULL,
        interactive INTEGER NOT NULL CHECK (interactive IN (0, 1)),
        agent TEXT NOT NULL,
        user_mode TEXT NOT NULL CHECK (user_mode IN ('simulated', 'person')),
        backend TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'running'
            CHECK (status IN ('running', 'finished', 'error')),
        end_reason TEXT CHECK (end_reason IN
            ('done', 'fail', 'step_budget', 'time_budget', 'error', 'aborted')),
        error TEXT,
        passed INTEGER CHECK (passed IN (0, 1)),
        score REAL CHECK (score BETWEEN 0.0 AND 1.0),
        steps INTEGER NOT NULL DEFAULT 0 CHECK (steps >= 0),
        started_at TEXT NOT NULL,
        ended_at TEXT,
        pid INTEGER NOT NULL,
        hostname TEXT NOT NULL,
        config TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(config)),
        batch_id TEXT,
        -- relative path of the frame of the final desktop state, when one was saved
        final_frame TEXT, batch_agent TEXT, batch_repeat INTEGER CHECK (batch_repeat IS NULL OR batch_repeat >= 0), batch_attempt INTEGER CHECK (batch_attempt IS NULL OR batch_attempt >= 0), runner_start TEXT,
        -- an episode has an end reason and an end time exactly when it has ended
        CHECK ((status = 'running') = (end_reason IS NULL)),
        CHECK ((status = 'running') = (ended_at IS NULL)),
        CHECK (end_reason IS NOT 'error' OR status = 'error'),
        -- an episode that ended in an error is never a pass
        CHECK (status IS NOT 'error' OR passed IS NOT 1)
    ) STRICT
    ;
INSERT INTO "episodes" VALUES(1,'gimp-flip','tasks/gimp/gimp-flip.yaml','abababababababababababababababababababababababababababababababab','gimp','L2',1,'reference','person','local','finished','step_budget',NULL,1,1.0,1,'2026-01-15T09:00:00.000000+00:00','2026-01-15T09:00:00.000000+00:00',1,'lab-host','{}',NULL,NULL,NULL,NULL,NULL,'boot/1');
CREATE TABLE messages (
        id INTEGER PRIMARY KEY,
        episode_id INTEGER NOT NULL REFERENCES episodes (id) ON DELETE CASCADE,
        idx INTEGER NOT NULL CHECK (idx >= 0),
        role TEXT NOT NULL CHECK (role IN ('user', 'agent')),
        kind TEXT NOT NULL,
        text TEXT NOT NULL,
        step INTEGER NOT NULL CHECK (step >= 0),
        phase_index INTEGER,
        source TEXT NOT NULL
            CHECK (source IN ('task', 'phase', 'simulated', 'person', 'agent')),
        created_at TEXT NOT NULL,
        UNIQUE (episode_id, idx),
        -- the parent key for steps.active_message_id, so a step can only point at a
        -- message of its own episode
        UNIQUE (episode_id, id),
        FOREIGN KEY (episode_id, phase_index) REFERENCES phases (episode_id, idx),
        CHECK (
            (role = 'user' AND kind IN
                ('instruction', 'clarification', 'interruption', 'feedback', 'answer'))
            OR (role = 'agent' AND kind IN ('question', 'done', 'fail'))
        )
    ) STRICT
    ;
INSERT INTO "messages" VALUES(1,1,0,'user','instruction','Flip it.',0,NULL,'task','2026-01-15T09:00:00.000000+00:00');
INSERT INTO "messages" VALUES(2,1,1,'agent','done','DONE',1,NULL,'agent','2026-01-15T09:00:00.000000+00:00');
INSERT INTO "messages" VALUES(3,1,2,'user','feedback','Also a JPEG.',1,0,'phase','2026-01-15T09:00:00.000000+00:00');
CREATE TABLE phases (
        episode_id INTEGER NOT NULL REFERENCES episodes (id) ON DELETE CASCADE,
        idx INTEGER NOT NULL CHECK (idx >= 0),
        message TEXT NOT NULL,
        trigger TEXT NOT NULL CHECK (json_valid(trigger)),
        kind TEXT CHECK (kind IN ('clarification', 'interruption', 'feedback', 'answer')),
        status TEXT NOT NULL DEFAULT 'pending'
            CHECK (status IN ('pending', 'delivered', 'never_delivered')),
        delivered_step INTEGER CHECK (delivered_step >= 0),
        delivered_at TEXT,
        PRIMARY KEY (episode_id, idx),
        CHECK ((status = 'delivered') = (delivered_step IS NOT NULL)),
        CHECK ((status = 'delivered') = (delivered_at IS NOT NULL))
    ) STRICT
    ;
INSERT INTO "phases" VALUES(1,0,'Also a JPEG.','"agent_done"','feedback','delivered',1,'2026-01-15T09:00:00.000000+00:00');
CREATE TABLE steps (
        episode_id INTEGER NOT NULL REFERENCES episodes (id) ON DELETE CASCADE,
        idx INTEGER NOT NULL CHECK (idx >= 0),
        action TEXT NOT NULL CHECK (json_valid(action)),
        kind TEXT NOT NULL,
        description TEXT NOT NULL,
        started_at TEXT NOT NULL,
        agent_seconds REAL NOT NULL CHECK (agent_seconds >= 0),
        act_seconds REAL NOT NULL CHECK (act_seconds >= 0),
        settle_seconds REAL NOT NULL CHECK (settle_seconds >= 0),
        frame TEXT,
        phase_index INTEGER,
        active_message_id INTEGER,
        error TEXT, agent_info TEXT CHECK (agent_info IS NULL OR json_valid(agent_info)),
        PRIMARY KEY (episode_id, idx),
        FOREIGN KEY (episode_id, phase_index) REFERENCES phases (episode_id, idx),
        FOREIGN KEY (episode_id, active_message_id) REFERENCES messages (episode_id, id)
    ) STRICT
    ;
INSERT INTO "steps" VALUES(1,0,'{"kind": "done"}','done','DONE','2026-01-15T09:00:00.000000+00:00',0.5,0.0,0.0,NULL,0,1,NULL,NULL);
CREATE UNIQUE INDEX "idx__sqlite_migrations_migration_set_name"
    ON "_sqlite_migrations" ("migration_set", "name");
CREATE INDEX episodes_task ON episodes (task_id, id);
CREATE INDEX episodes_status ON episodes (status, id);
CREATE INDEX episodes_batch ON episodes (batch_id) WHERE batch_id IS NOT NULL;
CREATE UNIQUE INDEX episodes_batch_slot_finished ON episodes (batch_id, task_id, batch_agent, batch_repeat) WHERE status = 'finished' AND batch_repeat IS NOT NULL;
COMMIT;
