"""The store's schema as numbered steps: step N runs once, in a transaction, recorded in ``schema_version``.

A change is a new step at the end of :data:`STEPS`; a shipped step is never edited. Types read the same on SQLite
and PostgreSQL; times are Unix seconds; a member is a random per-browser id, never a name.
"""

from __future__ import annotations

#: (version, statements); applied in order
STEPS: tuple[tuple[int, tuple[str, ...]], ...] = (
    (
        1,
        (
            # a room: its code (the join link's ?room=), the teacher's secret as a SHA-256 hash, when it ends,
            # and the question on screen now (none: NULL)
            """CREATE TABLE rooms (
            code TEXT PRIMARY KEY,
            teacher_hash TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            expires_at DOUBLE PRECISION NOT NULL,
            closed INTEGER NOT NULL DEFAULT 0,
            current_question TEXT
        )""",
            # who joined: an anonymous random id per browser session
            """CREATE TABLE members (
            room TEXT NOT NULL REFERENCES rooms (code) ON DELETE CASCADE,
            browser TEXT NOT NULL,
            joined_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (room, browser)
        )""",
            # a question the teacher pushed: kind 'choice' (typed by the teacher) or 'predict' (read from a model);
            # options and detail are JSON; answer is the index of the right option (NULL: none marked)
            """CREATE TABLE questions (
            id TEXT PRIMARY KEY,
            room TEXT NOT NULL REFERENCES rooms (code) ON DELETE CASCADE,
            kind TEXT NOT NULL,
            prompt TEXT NOT NULL,
            options TEXT NOT NULL,
            answer INTEGER,
            detail TEXT NOT NULL,
            opened_at DOUBLE PRECISION NOT NULL,
            revealed INTEGER NOT NULL DEFAULT 0
        )""",
            "CREATE INDEX questions_room ON questions (room)",
            # one answer per browser per question, replaced until the reveal
            """CREATE TABLE answers (
            question TEXT NOT NULL REFERENCES questions (id) ON DELETE CASCADE,
            browser TEXT NOT NULL,
            choice INTEGER NOT NULL,
            answered_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (question, browser)
        )""",
            # rate limits: one row per counted action, deleted once older than the longest window
            """CREATE TABLE hits (
            browser TEXT NOT NULL,
            action TEXT NOT NULL,
            at DOUBLE PRECISION NOT NULL
        )""",
            "CREATE INDEX hits_browser ON hits (browser, action, at)",
        ),
    ),
    (
        2,
        (
            # a lesson a teacher saved: its text is the lesson file (TOML, app/views/lessons/lesson_file.py), its id the
            # share link's ?lesson=, its edit secret kept as a SHA-256 hash (the author's edit link holds it)
            """CREATE TABLE lessons (
            id TEXT PRIMARY KEY,
            edit_hash TEXT NOT NULL,
            title TEXT NOT NULL,
            body TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL
        )""",
            # the lesson a room walks through: a JSON snapshot of its steps (title, note, link) and the step on screen
            """CREATE TABLE room_lessons (
            room TEXT PRIMARY KEY REFERENCES rooms (code) ON DELETE CASCADE,
            title TEXT NOT NULL,
            steps TEXT NOT NULL,
            step INTEGER NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL
        )""",
        ),
    ),
    (
        3,
        (
            # a browser's unsaved lesson draft (the lesson file's text), keyed by its anonymous id (rooms.browser_id),
            # so a reload brings the draft back; one row per browser, gone after lessons.DRAFT_KEEP_S untouched
            """CREATE TABLE lesson_drafts (
            browser TEXT PRIMARY KEY,
            body TEXT NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL
        )""",
        ),
    ),
    (
        4,
        (
            # the saved lesson a draft edits (its id and edit secret), so "Save" after a reload changes that lesson
            # instead of saving a new one; NULL for a draft never saved. The secret is the author's edit link's,
            # kept as long as the draft row (lessons.DRAFT_KEEP_S), read only under the browser's own id
            "ALTER TABLE lesson_drafts ADD COLUMN lesson TEXT",
            "ALTER TABLE lesson_drafts ADD COLUMN edit_secret TEXT",
        ),
    ),
    (
        5,
        (
            # a question's time limit as the moment it stops taking answers (NULL: none), and the teacher's Close
            # (1; Reopen: 0 and no time limit)
            "ALTER TABLE questions ADD COLUMN closes_at DOUBLE PRECISION",
            "ALTER TABLE questions ADD COLUMN closed INTEGER NOT NULL DEFAULT 0",
        ),
    ),
    (
        6,
        (
            # a free-text answer (kind 'text': its choice is -1), the word filter's verdict (1: flagged, hidden until
            # the teacher shows it) and the teacher's say (NULL: none; 1 shown, 0 hidden whatever the filter said)
            "ALTER TABLE answers ADD COLUMN text TEXT",
            "ALTER TABLE answers ADD COLUMN flagged INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE answers ADD COLUMN shown INTEGER",
        ),
    ),
)

LATEST = STEPS[-1][0]


def migrate(db, clock) -> int:
    """Bring ``db`` to :data:`LATEST`; the version it had before. Each step's write transaction re-reads the version
    first (SQLite's ``BEGIN IMMEDIATE``, PostgreSQL's table lock), so several processes never run a step twice."""
    db.run(
        "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)"
    )
    before = _version(db.run)
    for version, statements in STEPS:
        with db.transaction() as run:
            if db.lock_schema:
                run(db.lock_schema)
            if _version(run) >= version:
                continue
            for sql in statements:
                run(sql)
            run("INSERT INTO schema_version (version, applied_at) VALUES (?, ?)", (version, clock()))
    return before


def _version(run) -> int:
    (row,) = run("SELECT COALESCE(MAX(version), 0) FROM schema_version")
    return int(row[0])
