"""The episode database's schema, as an ordered list of migrations.

Migrations are sqlite-utils `Migrations` recorded in its `_sqlite_migrations` table.
Each one is frozen: once a database has applied it, editing it would make old and
new databases disagree, so a change to the schema is always a new migration
appended at the end.

Tables are STRICT (SQLite checks column types) and carry CHECK constraints for the
words of `app.core.vocabulary`, so a runner bug is refused at the write instead of
surfacing as a puzzling row in the TUI weeks later. The CHECK lists are built from
the vocabulary's tuples (`_one_of`), never written out, which makes the vocabulary
part of the migration that made the column (0001; 0005 for the error kinds): a word
added there is a schema change, and needs a new migration that rebuilds the CHECK
constraints of the tables holding it (fresh databases get the new word from the
column's own migration already). tests/store/test_schema.py fails until there is one: it
compares the CHECK lists of a database made before with the vocabulary.

One module over 500 lines on purpose: it is one thing, the schema's history, read top
to bottom in the order SQLite applies it. The tables have no definition apart from
their migrations (0001 made them, later ones changed them), and the data a migration
carries (0005's legacy error titles) is frozen with it; split by table or by number,
a reader would lose the order, and each new migration would have to pick a file.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

from app.core.integrity import FLAG_KINDS
from app.core.vocabulary import (
    AGENT_KINDS,
    END_REASONS,
    EPISODE_REQUESTS,
    EPISODE_STATUSES,
    ERROR_KINDS,
    MESSAGE_ORIGINS,
    PHASE_KINDS,
    PHASE_STATUSES,
    QUESTIONNAIRE_POINTS,
    ROLES,
    SOURCES,
    STEP_ACTORS,
    TRIAL_STATUSES,
    USER_KINDS,
    USER_MODES,
)


def _one_of(column: str, words: Sequence[str]) -> str:
    """`column IN ('a', 'b')`: a CHECK list of vocabulary words."""
    quoted = ", ".join("'" + word.replace("'", "''") + "'" for word in words)
    return f"{column} IN ({quoted})"


MIGRATIONS = Migrations("deskloop")

# Timestamps are ISO 8601 UTC text ('2025-01-31T12:00:00.123456+00:00'), which sorts
# in time order as text. Booleans are INTEGER 0/1 (STRICT tables have no BOOLEAN).
_SCHEMA_V1 = (
    f"""
    CREATE TABLE episodes (
        id INTEGER PRIMARY KEY,
        task_id TEXT NOT NULL,
        task_path TEXT NOT NULL,
        task_sha256 TEXT NOT NULL,
        app TEXT NOT NULL,
        level TEXT NOT NULL,
        interactive INTEGER NOT NULL CHECK (interactive IN (0, 1)),
        agent TEXT NOT NULL,
        user_mode TEXT NOT NULL CHECK ({_one_of("user_mode", USER_MODES)}),
        backend TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'running'
            CHECK ({_one_of("status", EPISODE_STATUSES)}),
        end_reason TEXT CHECK ({_one_of("end_reason", END_REASONS)}),
        error TEXT,
        passed INTEGER CHECK (passed IN (0, 1)),
        score REAL CHECK (score BETWEEN 0.0 AND 1.0),
        steps INTEGER NOT NULL DEFAULT 0 CHECK (steps >= 0),
        started_at TEXT NOT NULL,
        ended_at TEXT,
        pid INTEGER NOT NULL,
        hostname TEXT NOT NULL,
        config TEXT NOT NULL DEFAULT '{{}}' CHECK (json_valid(config)),
        batch_id TEXT,
        -- relative path of the frame of the final desktop state, when one was saved
        final_frame TEXT,
        -- an episode has an end reason and an end time exactly when it has ended
        CHECK ((status = 'running') = (end_reason IS NULL)),
        CHECK ((status = 'running') = (ended_at IS NULL)),
        CHECK (end_reason IS NOT 'error' OR status = 'error'),
        -- an episode that ended in an error is never a pass
        CHECK (status IS NOT 'error' OR passed IS NOT 1)
    ) STRICT
    """,
    "CREATE INDEX episodes_task ON episodes (task_id, id)",
    "CREATE INDEX episodes_status ON episodes (status, id)",
    "CREATE INDEX episodes_batch ON episodes (batch_id) WHERE batch_id IS NOT NULL",
    f"""
    CREATE TABLE phases (
        episode_id INTEGER NOT NULL REFERENCES episodes (id) ON DELETE CASCADE,
        idx INTEGER NOT NULL CHECK (idx >= 0),
        message TEXT NOT NULL,
        trigger TEXT NOT NULL CHECK (json_valid(trigger)),
        kind TEXT CHECK ({_one_of("kind", PHASE_KINDS)}),
        status TEXT NOT NULL DEFAULT 'pending'
            CHECK ({_one_of("status", PHASE_STATUSES)}),
        delivered_step INTEGER CHECK (delivered_step >= 0),
        delivered_at TEXT,
        PRIMARY KEY (episode_id, idx),
        CHECK ((status = 'delivered') = (delivered_step IS NOT NULL)),
        CHECK ((status = 'delivered') = (delivered_at IS NOT NULL))
    ) STRICT
    """,
    f"""
    CREATE TABLE messages (
        id INTEGER PRIMARY KEY,
        episode_id INTEGER NOT NULL REFERENCES episodes (id) ON DELETE CASCADE,
        idx INTEGER NOT NULL CHECK (idx >= 0),
        role TEXT NOT NULL CHECK ({_one_of("role", ROLES)}),
        kind TEXT NOT NULL,
        text TEXT NOT NULL,
        step INTEGER NOT NULL CHECK (step >= 0),
        phase_index INTEGER,
        source TEXT NOT NULL
            CHECK ({_one_of("source", SOURCES)}),
        created_at TEXT NOT NULL,
        UNIQUE (episode_id, idx),
        -- the parent key for steps.active_message_id, so a step can only point at a
        -- message of its own episode
        UNIQUE (episode_id, id),
        FOREIGN KEY (episode_id, phase_index) REFERENCES phases (episode_id, idx),
        CHECK (
            (role = 'user' AND {_one_of("kind", USER_KINDS)})
            OR (role = 'agent' AND {_one_of("kind", AGENT_KINDS)})
        )
    ) STRICT
    """,
    """
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
        error TEXT,
        PRIMARY KEY (episode_id, idx),
        FOREIGN KEY (episode_id, phase_index) REFERENCES phases (episode_id, idx),
        FOREIGN KEY (episode_id, active_message_id) REFERENCES messages (episode_id, id)
    ) STRICT
    """,
    """
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
    """,
)


@MIGRATIONS(name="0001_episodes_steps_messages_phases_checks")
def _v1(db: Database) -> None:
    for statement in _SCHEMA_V1:
        db.execute(statement)


@MIGRATIONS(name="0002_step_agent_info")
def _v2(db: Database) -> None:
    # What a model agent reports per step: token counts, latency, the raw answer.
    db.execute(
        "ALTER TABLE steps ADD COLUMN agent_info TEXT"
        " CHECK (agent_info IS NULL OR json_valid(agent_info))"
    )


@MIGRATIONS(name="0003_batch_slots")
def _v3(db: Database) -> None:
    # A batch records its suite, so `--resume ID` needs nothing else; each episode of a
    # batch records its slot (agent spec, repeat index, attempt), so resume reruns
    # exactly the slots with no finished episode. The unique index makes a second
    # finished episode for one slot impossible, whatever crashed when.
    db.execute(
        """
        CREATE TABLE batches (
            id TEXT PRIMARY KEY,
            created_at TEXT NOT NULL,
            suite TEXT NOT NULL CHECK (json_valid(suite))
        ) STRICT
        """
    )
    db.execute("ALTER TABLE episodes ADD COLUMN batch_agent TEXT")
    db.execute(
        "ALTER TABLE episodes ADD COLUMN batch_repeat INTEGER"
        " CHECK (batch_repeat IS NULL OR batch_repeat >= 0)"
    )
    db.execute(
        "ALTER TABLE episodes ADD COLUMN batch_attempt INTEGER"
        " CHECK (batch_attempt IS NULL OR batch_attempt >= 0)"
    )
    db.execute(
        "CREATE UNIQUE INDEX episodes_batch_slot_finished"
        " ON episodes (batch_id, task_id, batch_agent, batch_repeat)"
        " WHERE status = 'finished' AND batch_repeat IS NOT NULL"
    )


@MIGRATIONS(name="0004_episode_runner_start")
def _v4(db: Database) -> None:
    # Which process runs the episode, for good: the kernel's boot id and the pid's start
    # time ("BOOT_ID/TICKS"). A pid alone is reused, by any process and often by a
    # system daemon after a reboot, and that kept a crashed episode "running" for ever.
    # NULL for episodes recorded before this migration: those are judged by pid alone.
    db.execute("ALTER TABLE episodes ADD COLUMN runner_start TEXT")


# The error titles DeskLoop wrote before error kinds were recorded, and their kinds.
# Written out, never taken from the error classes: this migration is frozen, and the
# titles of later versions must not change how it reads the rows of earlier ones.
_LEGACY_TITLES = {
    "Desktop error": "desktop",
    "VNC error": "vnc",
    "Guest error": "guest",
    "Endpoint unavailable": "endpoint",
    "Agent unavailable": "agent_unavailable",
    "User unavailable": "user_unavailable",
    "Invalid task": "task",
    "Invalid action": "action",
    # Also the words of a refused agent request then: the two cannot be told apart.
    "Agent error": "agent",
    "Malformed action": "agent",
    "User error": "user",
    "Endpoint refused": "endpoint_refused",
    "XCF error": "check",
    "Check definition error": "check",
    "Image error": "image",
    "Store error": "store",
    "DeskLoop error": "other",
}
# The errors of those versions that had no title: the batch's time limit and the
# store's record of a runner that died. An abort is told by its end reason.
_LEGACY_STARTS = {"batch time limit": "time_limit", "interrupted:": "interrupted"}


def _legacy_error_kind(end_reason: str | None, error: str | None) -> str | None:
    """The kind of an error recorded as text only; None where the text does not say."""
    if end_reason == "aborted":
        return "aborted"
    text = (error or "").removeprefix("scoring failed: ")
    for start, kind in _LEGACY_STARTS.items():
        if text.startswith(start):
            return kind
    title, sep, _ = text.partition(": ")
    return _LEGACY_TITLES.get(title) if sep else None


@MIGRATIONS(name="0005_episode_error_kind")
def _v5(db: Database) -> None:
    # What failed, beside the error's text, so that a batch's retries and the figures
    # decide from a word of the vocabulary instead of reading the text back. Errors
    # recorded before get their kind from their text here, once; one the text does
    # not place (an exception's type name, a reason no title starts) stays NULL, the
    # unknown kind: counted as an error and never retried, as before.
    db.execute(
        "ALTER TABLE episodes ADD COLUMN error_kind TEXT CHECK (error_kind IS NULL"
        f" OR (status = 'error' AND {_one_of('error_kind', ERROR_KINDS)}))"
    )
    rows = db.execute(
        "SELECT id, end_reason, error FROM episodes WHERE status = 'error'"
    ).fetchall()
    for episode_id, end_reason, error in rows:
        kind = _legacy_error_kind(end_reason, error)
        if kind is not None:
            db.execute("UPDATE episodes SET error_kind = ? WHERE id = ?", (kind, episode_id))


@MIGRATIONS(name="0006_frames_folder")
def _v6(db: Database) -> None:
    # Each database keeps its frames in a folder of its own, `frames/<random id>/`. All
    # databases of one folder wrote to `frames/<episode id>/` before, so episode 1 of a
    # second database overwrote the frames of the first's episode 1. Frames recorded
    # before stay where they are: steps record their frame's path, relative to the
    # database's folder.
    db.execute("CREATE TABLE store_info (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT")
    db.execute(
        "INSERT INTO store_info (key, value)"
        " VALUES ('frames_folder', 'frames/' || lower(hex(randomblob(6))))"
    )


@MIGRATIONS(name="0007_episode_final_windows")
def _v7(db: Database) -> None:
    # The windows open when an episode's setup failed (or when its desktop died, as
    # last seen), beside its final frame: which window came instead of the awaited
    # one. JSON {"seen_at": seconds, "windows": [{"id", "title", "class", "pid"}]}
    # (app.core.windows.WindowList); NULL when none were seen.
    db.execute(
        "ALTER TABLE episodes ADD COLUMN final_windows TEXT"
        " CHECK (final_windows IS NULL OR json_valid(final_windows))"
    )


@MIGRATIONS(name="0009a_final_state_archive")
def _v9a(db: Database) -> None:
    # The final-state archive: what an episode's checks read, kept so it can
    # be re-scored after the desktop is gone. `manifest` is JSON (app.episode.archive:
    # files and probe results, each naming its content-addressed blob in the
    # database's `archive/<id>/` folder, or why it has none: a problem scoring met, or
    # the episode's size cap); `evaluator` is the evaluator version that scored it.
    db.execute(
        """
        CREATE TABLE archives (
            episode_id INTEGER PRIMARY KEY REFERENCES episodes (id) ON DELETE CASCADE,
            created_at TEXT NOT NULL,
            evaluator TEXT NOT NULL,
            manifest TEXT NOT NULL CHECK (json_valid(manifest)),
            kept_bytes INTEGER NOT NULL CHECK (kept_bytes >= 0),
            over_cap_bytes INTEGER NOT NULL CHECK (over_cap_bytes >= 0),
            cap_bytes INTEGER NOT NULL CHECK (cap_bytes >= 0)
        ) STRICT
        """
    )
    # A rescore: the evaluator of `evaluator` run on the archive of a task whose file
    # hashed to `task_sha256` then. Kept beside the original score (episodes.passed,
    # .score and the checks table), never replacing it.
    db.execute(
        """
        CREATE TABLE rescores (
            id INTEGER PRIMARY KEY,
            episode_id INTEGER NOT NULL REFERENCES episodes (id) ON DELETE CASCADE,
            created_at TEXT NOT NULL,
            task_sha256 TEXT NOT NULL,
            evaluator TEXT NOT NULL,
            passed INTEGER NOT NULL CHECK (passed IN (0, 1)),
            score REAL NOT NULL CHECK (score BETWEEN 0.0 AND 1.0),
            checks TEXT NOT NULL CHECK (json_valid(checks))
        ) STRICT
        """
    )
    db.execute("CREATE INDEX rescores_episode ON rescores (episode_id, id)")


@MIGRATIONS(name="0009b_integrity_flags")
def _v9b(db: Database) -> None:
    # Integrity flags: evidence that the final state may not have come
    # through the GUI, recorded beside the score and never changing it. `checked`
    # lists what was looked at (JSON), so "no flags" can be told from "not looked".
    db.execute(
        f"""
        CREATE TABLE integrity_flags (
            episode_id INTEGER NOT NULL REFERENCES episodes (id) ON DELETE CASCADE,
            idx INTEGER NOT NULL CHECK (idx >= 0),
            kind TEXT NOT NULL CHECK ({_one_of("kind", FLAG_KINDS)}),
            summary TEXT NOT NULL,
            evidence TEXT NOT NULL CHECK (json_valid(evidence)),
            PRIMARY KEY (episode_id, idx)
        ) STRICT
        """
    )
    db.execute(
        "ALTER TABLE episodes ADD COLUMN integrity_checked TEXT"
        " CHECK (integrity_checked IS NULL OR json_valid(integrity_checked))"
    )


@MIGRATIONS(name="0010_phase_results")
def _v10_phase_results(db: Database) -> None:
    # A phase's own checks' result beside the phase, as its tree decided it: the leaf
    # rows alone cannot say whether an `any` group passed, and the per-phase pass
    # rates of the reports (app.metrics.checkpoints) need the tree's answer. NULL for
    # a phase without checks, one not delivered, and every phase recorded before.
    db.execute(
        "ALTER TABLE phases ADD COLUMN passed INTEGER CHECK (passed IS NULL OR passed IN (0, 1))"
    )
    db.execute(
        "ALTER TABLE phases ADD COLUMN score REAL"
        " CHECK (score IS NULL OR score BETWEEN 0.0 AND 1.0)"
    )


@MIGRATIONS(name="0010_judgements")
def _v10_judgements(db: Database) -> None:
    # What a model judge (the `judge` check, app.episode.judge) was asked and answered:
    # the messages with each image as its sha256, the images' hashes, the model and
    # its sampling, the cache key, the raw answer and the verdict. Recorded beside the
    # checks, never instead of them: the check's own row holds its pass and evidence.
    db.execute(
        """
        CREATE TABLE judgements (
            episode_id INTEGER NOT NULL REFERENCES episodes (id) ON DELETE CASCADE,
            idx INTEGER NOT NULL CHECK (idx >= 0),
            path TEXT NOT NULL,
            phase INTEGER CHECK (phase IS NULL OR phase >= 0),
            counts INTEGER NOT NULL CHECK (counts IN (0, 1)),
            model TEXT NOT NULL,
            base_url TEXT NOT NULL,
            temperature REAL NOT NULL,
            seed INTEGER,
            prompt TEXT NOT NULL CHECK (json_valid(prompt)),
            images TEXT NOT NULL CHECK (json_valid(images)),
            request_key TEXT NOT NULL,
            answer TEXT,
            passed INTEGER CHECK (passed IS NULL OR passed IN (0, 1)),
            score REAL CHECK (score IS NULL OR score BETWEEN 0.0 AND 1.0),
            reasons TEXT,
            cached INTEGER NOT NULL CHECK (cached IN (0, 1)),
            error TEXT,
            recorded_at TEXT NOT NULL,
            PRIMARY KEY (episode_id, idx)
        ) STRICT
        """
    )


@MIGRATIONS(name="0011_person_replies")
def _v11(db: Database) -> None:
    # Person mode: the person is the user. A due phase's scripted message is
    # offered as a draft; what the person sent is recorded with how it came about
    # (`origin`: the script's text, edited, or free; only on the person's messages),
    # the script's original (`scripted`), and how long the episode waited for it
    # (`wait_seconds`). The waits are off the time budget, so the episode keeps their
    # sum apart (`person_wait_seconds`; 0 for every episode before).
    db.execute(
        "ALTER TABLE messages ADD COLUMN origin TEXT CHECK (origin IS NULL"
        f" OR (source = 'person' AND {_one_of('origin', MESSAGE_ORIGINS)}))"
    )
    db.execute("ALTER TABLE messages ADD COLUMN scripted TEXT")
    db.execute(
        "ALTER TABLE messages ADD COLUMN wait_seconds REAL"
        " CHECK (wait_seconds IS NULL OR wait_seconds >= 0)"
    )
    db.execute(
        "ALTER TABLE episodes ADD COLUMN person_wait_seconds REAL NOT NULL DEFAULT 0"
        " CHECK (person_wait_seconds >= 0)"
    )


@MIGRATIONS(name="0012_episode_setup")
def _v12(db: Database) -> None:
    # How an episode's desktop was brought to its start state (reset + the task's
    # setup): when it began, how long it took, each line of it with its offset, and
    # whether it was done ahead of the episode, on a warm desktop of a batch's pool
    # (app.batch.warm), or as the episode's first part. JSON (app.episode.prepare's
    # PreparedStart.as_json); NULL for episodes recorded before, and for those that
    # ended before their setup.
    db.execute(
        "ALTER TABLE episodes ADD COLUMN setup TEXT CHECK (setup IS NULL OR json_valid(setup))"
    )


@MIGRATIONS(name="0014_step_actor")
def _v14(db: Database) -> None:
    # Take-over: the person can drive the desktop from the live view
    # mid-episode; their actions are steps of the episode like the agent's, told apart
    # by who acted. Every step recorded before was the agent's.
    db.execute(
        "ALTER TABLE steps ADD COLUMN actor TEXT NOT NULL DEFAULT 'agent'"
        f" CHECK ({_one_of('actor', STEP_ACTORS)})"
    )


@MIGRATIONS(name="0015_episode_notes")
def _v15(db: Database) -> None:
    # A researcher's own words on an episode: a free note and a set of
    # tags to cut results by (`tag:pilot` in the Episodes filter). Kept on the episode
    # row, written only by `Store.annotate_episode`; tags as a JSON array of words
    # (app.store.notes.TAG), sorted and unique. Episodes before: no note, no tags.
    db.execute("ALTER TABLE episodes ADD COLUMN note TEXT NOT NULL DEFAULT ''")
    db.execute(
        "ALTER TABLE episodes ADD COLUMN tags TEXT NOT NULL DEFAULT '[]'"
        " CHECK (json_valid(tags) AND json_type(tags) = 'array')"
    )


@MIGRATIONS(name="0016_rescore_phases_judgements")
def _v16(db: Database) -> None:
    # A rescore re-runs the phases' checks on what their archive kept at each delivery
    # and asks the judge again on the archived frame and files: each phase's
    # tree result ({"0": {"passed": bool, "score": float}}, JSON) and the judgements
    # (as app.store.records.judgement_raw writes them) beside the rescore's checks.
    # NULL for rescores recorded before.
    db.execute(
        "ALTER TABLE rescores ADD COLUMN phases TEXT CHECK (phases IS NULL OR json_valid(phases))"
    )
    db.execute(
        "ALTER TABLE rescores ADD COLUMN judgements TEXT"
        " CHECK (judgements IS NULL OR json_valid(judgements))"
    )


@MIGRATIONS(name="0017_studies")
def _v17(db: Database) -> None:
    # Studies (app.studies): a study's plan (its seed and the study file it was made
    # from), each participant's code, condition order, consent and withdrawal, their
    # planned trials, each try of a trial (an episode; a crash leaves the try
    # `interrupted`, never deleted, and the next try is a new row) and their answers to
    # the questionnaires (one row per item; a point's `context` names the trial or
    # condition it followed). Participants are codes: no column holds a name. A
    # withdrawal erases a participant's episodes, tries and answers and keeps the code
    # with `withdrawn_at` and what was erased, so the plan's balance shows the gap.
    db.execute(
        """
        CREATE TABLE study_plans (
            study_id TEXT PRIMARY KEY,
            seed INTEGER NOT NULL,
            study_path TEXT NOT NULL,
            study_sha256 TEXT NOT NULL,
            conditions TEXT NOT NULL CHECK (json_valid(conditions)),
            created_at TEXT NOT NULL
        ) STRICT
        """
    )
    db.execute(
        """
        CREATE TABLE participants (
            study_id TEXT NOT NULL REFERENCES study_plans (study_id) ON DELETE CASCADE,
            code TEXT NOT NULL,
            design_row INTEGER NOT NULL CHECK (design_row >= 0),
            conditions TEXT NOT NULL CHECK (json_valid(conditions)),
            consented_at TEXT,
            withdrawn_at TEXT,
            erased TEXT CHECK (erased IS NULL OR json_valid(erased)),
            PRIMARY KEY (study_id, code)
        ) STRICT
        """
    )
    db.execute(
        """
        CREATE TABLE trials (
            study_id TEXT NOT NULL,
            code TEXT NOT NULL,
            position INTEGER NOT NULL CHECK (position >= 0),
            condition TEXT NOT NULL,
            task_id TEXT NOT NULL,
            block INTEGER NOT NULL CHECK (block >= -1),
            condition_position INTEGER NOT NULL CHECK (condition_position >= 0),
            PRIMARY KEY (study_id, code, position),
            FOREIGN KEY (study_id, code) REFERENCES participants (study_id, code)
                ON DELETE CASCADE
        ) STRICT
        """
    )
    db.execute(
        f"""
        CREATE TABLE trial_tries (
            study_id TEXT NOT NULL,
            code TEXT NOT NULL,
            position INTEGER NOT NULL,
            try INTEGER NOT NULL CHECK (try >= 1),
            episode_id INTEGER REFERENCES episodes (id) ON DELETE SET NULL,
            status TEXT NOT NULL CHECK ({_one_of("status", TRIAL_STATUSES)}),
            started_at TEXT NOT NULL,
            ended_at TEXT,
            note TEXT NOT NULL DEFAULT '',
            PRIMARY KEY (study_id, code, position, try),
            FOREIGN KEY (study_id, code, position) REFERENCES trials (study_id, code, position)
                ON DELETE CASCADE
        ) STRICT
        """
    )
    db.execute(
        f"""
        CREATE TABLE responses (
            study_id TEXT NOT NULL,
            code TEXT NOT NULL,
            point TEXT NOT NULL CHECK ({_one_of("point", QUESTIONNAIRE_POINTS)}),
            context TEXT NOT NULL DEFAULT '',
            instrument TEXT NOT NULL,
            item TEXT NOT NULL,
            value TEXT NOT NULL CHECK (json_valid(value)),
            answered_at TEXT NOT NULL,
            PRIMARY KEY (study_id, code, point, context, instrument, item),
            FOREIGN KEY (study_id, code) REFERENCES participants (study_id, code)
                ON DELETE CASCADE
        ) STRICT
        """
    )


@MIGRATIONS(name="0018_episode_paused")
def _v18(db: Database) -> None:
    # The seconds an episode stood paused between steps (the TUI's F2: the agent takes
    # no step, and the time is off the budget, as the person's waits are), kept apart
    # so a reader can tell a paused minute from a slow agent; 0 for every episode
    # before.
    db.execute(
        "ALTER TABLE episodes ADD COLUMN paused_seconds REAL NOT NULL DEFAULT 0"
        " CHECK (paused_seconds >= 0)"
    )


@MIGRATIONS(name="0019_episode_requests")
def _v19(db: Database) -> None:
    # Requests to a running episode from another process (app.store.requests): the
    # researcher's TUI pausing, resuming or aborting a participant's trial, whose
    # runner is the participant's own process. One row per request, in order.
    db.execute(
        f"""
        CREATE TABLE episode_requests (
            episode_id INTEGER NOT NULL REFERENCES episodes (id) ON DELETE CASCADE,
            idx INTEGER NOT NULL CHECK (idx >= 0),
            request TEXT NOT NULL CHECK ({_one_of("request", EPISODE_REQUESTS)}),
            requested_at TEXT NOT NULL,
            PRIMARY KEY (episode_id, idx)
        ) STRICT
        """
    )


def migrate(db: Database) -> None:
    """Apply pending migrations, in order, all in one IMMEDIATE transaction.

    IMMEDIATE takes the write lock before reading which migrations are applied, so
    two processes opening a fresh database at once serialize (the second waits on
    busy_timeout, then finds nothing pending) instead of both creating the tables.
    An up-to-date database is only read, never locked. The connection must be in
    autocommit mode (isolation_level=None); each migration still runs in its own
    savepoint via sqlite-utils.
    """
    if not MIGRATIONS.pending(db):
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        MIGRATIONS.apply(db)
    except BaseException:
        db.rollback()
        raise
    db.execute("COMMIT")


def applied_migrations(db: Database) -> list[str]:
    return [migration.name for migration in MIGRATIONS.applied(db)]
