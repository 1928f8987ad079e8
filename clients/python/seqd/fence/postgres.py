"""Fenced transactions on PostgreSQL with psycopg 3.

The key's highest token lives in the table ``seqd_fence`` (the same table
the Go, Java and JavaScript helpers use)::

    CREATE TABLE seqd_fence (key text PRIMARY KEY, max_token numeric(20) NOT NULL)

A fenced transaction first raises the key's max, in one statement that
refuses a lower token::

    INSERT INTO seqd_fence (key, max_token) VALUES (%s, %s)
    ON CONFLICT (key) DO UPDATE SET max_token = EXCLUDED.max_token
    WHERE seqd_fence.max_token <= EXCLUDED.max_token

then runs your statements. The fence row stays locked until the commit, so
no other holder's transaction on the key interleaves: an older one waits
and is then refused. Reads go through :func:`transaction` too: a read
raises the max, so an old holder's delayed write cannot land between a new
holder's read and its write.

At READ COMMITTED (PostgreSQL's default) a refusal is a
:class:`~seqd.fence.StaleTokenError`. At REPEATABLE READ and SERIALIZABLE,
a transaction whose snapshot predates a newer holder's commit on the key
fails with a serialization error (SQLSTATE 40001) instead: retry the whole
transaction, and the retry is refused if its token is stale.

This module imports no driver: it works on the psycopg connection you pass.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

from . import StaleTokenError, _check_token

__all__ = ["CREATE_TABLE", "admit", "create_table", "transaction"]

CREATE_TABLE = (
    "CREATE TABLE IF NOT EXISTS seqd_fence ("
    "key text PRIMARY KEY, "
    "max_token numeric(20) NOT NULL CHECK (max_token BETWEEN 1 AND 18446744073709551615))"
)

_RAISE = (
    "INSERT INTO seqd_fence (key, max_token) VALUES (%s, %s::numeric) "
    "ON CONFLICT (key) DO UPDATE SET max_token = EXCLUDED.max_token "
    "WHERE seqd_fence.max_token <= EXCLUDED.max_token"
)
_MAX = "SELECT max_token::text FROM seqd_fence WHERE key = %s"


def create_table(conn) -> None:
    """Creates ``seqd_fence`` if it does not exist."""
    with conn.transaction():
        conn.execute(CREATE_TABLE)


def admit(cur, key: str, token: int) -> None:
    """Raises ``key``'s max to ``token`` in the cursor's open transaction, or
    raises :class:`~seqd.fence.StaleTokenError` if a higher token was used.
    The row stays locked until that transaction ends: run the statements it
    guards in the same transaction, and roll back after a refusal."""
    _check_token(token)
    cur.execute(_RAISE, (key, str(token)))
    if cur.rowcount == 1:
        return
    cur.execute(_MAX, (key,))
    row = cur.fetchone()
    raise StaleTokenError(key, token, int(row[0]) if row else 0)


@contextlib.contextmanager
def transaction(conn, key: str, token: int) -> Iterator:
    """A transaction fenced by ``token`` on ``key``: yields a cursor after
    :func:`admit`; commits when the block ends, rolls back if it raises (a
    refusal included, which is raised before the block runs)::

        with postgres.transaction(conn, "accounts/42", token) as cur:
            cur.execute("UPDATE accounts SET balance = %s WHERE id = 42", (b,))

    Inside a transaction that is already open, it is a savepoint of it."""
    with conn.transaction(), conn.cursor() as cur:
        admit(cur, key, token)
        yield cur
