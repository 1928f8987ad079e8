"""Fenced transactions on PostgreSQL with psycopg 3.

The key's highest token lives in the table ``seqd_fence``, the same table
(and the same SQL) as the Go, Java and JavaScript helpers::

    CREATE TABLE seqd_fence (
      fence_key text PRIMARY KEY,
      max_token numeric(20,0) NOT NULL CHECK (max_token >= 1 AND max_token <= 18446744073709551615))

A fenced transaction first raises the key's max, in one statement that
refuses a lower token::

    INSERT INTO seqd_fence (fence_key, max_token) VALUES (%s, %s::numeric)
    ON CONFLICT (fence_key) DO UPDATE SET max_token = EXCLUDED.max_token
    WHERE seqd_fence.max_token IS NULL OR seqd_fence.max_token <= EXCLUDED.max_token
    RETURNING max_token::text

(no row back: refused), then runs your statements. The fence row stays
locked until the commit, so no other holder's transaction on the key
interleaves: an older one waits and is then refused. Reads go through
:func:`transaction` too: a read raises the max, so an old holder's delayed
write cannot land between a new holder's read and its write.

The column recipe keeps the max in your own row instead: pass ``table``,
``key_column`` and ``token_column`` (a ``numeric(20,0)`` column, NULL for a
row never fenced). A missing row is created with only its key and token,
so the table's other columns need defaults, or the row must exist. A
deleted row would take its max with it, and the old holder's next write
would recreate it with a stale token: :func:`create_table` with those
arguments puts a trigger on your table that refuses to delete (or
truncate) a row whose token is set. Keep such rows (clear their data), or
use the fence table for keys whose rows come and go.

:func:`admit` refuses (:class:`NoTransactionError`) to run outside an open
transaction: on an autocommit connection its check and your writes would
commit apart.

At READ COMMITTED (PostgreSQL's default) a refusal is a
:class:`~seqd.fence.StaleTokenError`. At REPEATABLE READ and SERIALIZABLE,
a transaction whose snapshot predates a newer holder's commit on the key
fails with a serialization error (SQLSTATE 40001) instead: run the whole
transaction again, and the new run is refused if its token is stale.
SERIALIZABLE adds nothing to the fence's safety.

This module imports no driver: it works on the psycopg connection you pass.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from . import StaleTokenError, _check_token
from ._sql import KEEP_ROW_MESSAGE, KEY_COLUMN, TABLE, TOKEN_COLUMN, NoTransactionError, column_recipe, statements

__all__ = ["KEEP_ROW_MESSAGE", "NoTransactionError", "admit", "create_table", "transaction"]

_INTRANS = 2  # psycopg.pq.TransactionStatus.INTRANS


def create_table(conn: Any, table: str = TABLE, key_column: str = KEY_COLUMN, token_column: str = TOKEN_COLUMN) -> None:
    """Creates the fence table (``seqd_fence``) if it does not exist; for
    the column recipe (``key_column`` or ``token_column`` named), puts on
    ``table`` the trigger that keeps rows whose token is set."""
    sql = statements("postgres", table, key_column, token_column)
    with conn.transaction():
        for q in sql.keep_rows if column_recipe(key_column, token_column) else (sql.create,):
            conn.execute(q)


def admit(cur: Any, key: str, token: int, *, table: str = TABLE, key_column: str = KEY_COLUMN, token_column: str = TOKEN_COLUMN) -> None:
    """Raises ``key``'s max to ``token`` in the cursor's open transaction, or
    raises :class:`~seqd.fence.StaleTokenError` if a higher token was used.
    The row stays locked until that transaction ends: run the statements it
    guards in the same transaction, and roll back after a refusal."""
    _check_token(token)
    sql = statements("postgres", table, key_column, token_column)
    cur.execute(sql.upsert, (key, str(token)))
    row = cur.fetchone()
    status = getattr(getattr(cur.connection, "info", None), "transaction_status", None)
    if status is not None and int(status) != _INTRANS:
        raise NoTransactionError()
    if row is not None:
        return
    cur.execute(sql.max, (key,))
    row = cur.fetchone()
    raise StaleTokenError(key, token, int(row[0]) if row and row[0] is not None else 0)


@contextlib.contextmanager
def transaction(conn: Any, key: str, token: int, **where: str) -> Iterator[Any]:
    """A transaction fenced by ``token`` on ``key``: yields a cursor after
    :func:`admit`; commits when the block ends, rolls back if it raises (a
    refusal included, which is raised before the block runs)::

        with postgres.transaction(conn, "accounts/42", token) as cur:
            cur.execute("UPDATE accounts SET balance = %s WHERE id = 42", (b,))

    ``table``, ``key_column`` and ``token_column`` choose the column recipe.
    Inside a transaction that is already open, it is a savepoint of it."""
    with conn.transaction(), conn.cursor() as cur:
        admit(cur, key, token, **where)
        yield cur
