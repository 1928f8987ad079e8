"""Fenced transactions on MariaDB and MySQL with PyMySQL (or any DB-API
driver that uses ``%s`` placeholders, such as mysqlclient).

The key's highest token lives in the table ``seqd_fence``, the same table
(and the same SQL) as the Go, Java and JavaScript helpers::

    CREATE TABLE seqd_fence (
      fence_key varbinary(1024) NOT NULL PRIMARY KEY,
      max_token bigint unsigned NOT NULL CHECK (max_token >= 1)) ENGINE=InnoDB

MariaDB has no ``ON CONFLICT … WHERE``; its equivalent is two statements in
the transaction: the first raises the max if it is not above the token and
locks the row either way, the second reads what it became with a locking
read (which sees the newest committed row, not the transaction's
snapshot)::

    INSERT INTO seqd_fence (fence_key, max_token) VALUES (%s, CAST(%s AS UNSIGNED))
    ON DUPLICATE KEY UPDATE max_token = IF(max_token IS NULL OR max_token <= VALUES(max_token),
                                           VALUES(max_token), max_token);
    SELECT CAST(max_token AS CHAR) FROM seqd_fence WHERE fence_key = %s FOR UPDATE;

A max above the token: a newer holder has used the key, refused. The fence
row stays locked until the commit, so the caller's statements run with no
other holder interleaving. Correct at READ COMMITTED and REPEATABLE READ
(InnoDB's default); under contention InnoDB may pick a deadlock victim
(error 1213, SQLSTATE 40001): run the transaction again. ``table``,
``key_column`` and ``token_column`` choose the column recipe (a ``bigint
unsigned`` column in your own row, NULL for a row never fenced).

The key column is a binary string, so ``orders/A``, ``orders/a`` and
``orders/a `` are three keys. :func:`create_table` refuses
(:class:`KeyCollationError`) a fence table made earlier whose key column
folds them, and the error gives the ALTER TABLE that migrates it. For the
column recipe it puts on your table a trigger that refuses to delete a row
whose token is set: the old holder's next write would recreate it with a
stale token. :func:`admit` refuses (:class:`NoTransactionError`) outside an
open transaction, where its check and your writes would commit apart (the
server's in-transaction flag, which PyMySQL keeps as ``server_status``).

This module imports no driver: it works on the connection you pass.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from . import StaleTokenError, _check_token
from ._sql import (
    KEEP_ROW_MESSAGE,
    KEY_COLUMN,
    TABLE,
    TOKEN_COLUMN,
    KeyCollationError,
    NoTransactionError,
    check_key_column,
    column_recipe,
    statements,
)

__all__ = ["KEEP_ROW_MESSAGE", "KeyCollationError", "NoTransactionError", "admit", "create_table", "transaction"]

_IN_TRANS = 1  # SERVER_STATUS_IN_TRANS of the server's OK packet


def create_table(conn: Any, table: str = TABLE, key_column: str = KEY_COLUMN, token_column: str = TOKEN_COLUMN) -> None:
    """Creates the fence table (``seqd_fence``) if it does not exist and
    checks that it compares keys byte for byte; for the column recipe
    (``key_column`` or ``token_column`` named), puts on ``table`` the
    trigger that keeps rows whose token is set."""
    sql = statements("mysql", table, key_column, token_column)
    with conn.cursor() as cur:
        if column_recipe(key_column, token_column):
            for q in sql.keep_rows:
                cur.execute(q)
        else:
            cur.execute(sql.create)
            check_key_column(cur, table, key_column)
    conn.commit()


def admit(cur: Any, key: str, token: int, *, table: str = TABLE, key_column: str = KEY_COLUMN, token_column: str = TOKEN_COLUMN) -> None:
    """Raises ``key``'s max to ``token`` in the cursor's open transaction, or
    raises :class:`~seqd.fence.StaleTokenError` if a higher token was used.
    The row stays locked until that transaction ends: run the statements it
    guards in the same transaction, and roll back after a refusal."""
    _check_token(token)
    sql = statements("mysql", table, key_column, token_column)
    cur.execute(sql.upsert, (key, str(token)))
    status = getattr(cur.connection, "server_status", None)
    if status is not None and not status & _IN_TRANS:
        raise NoTransactionError()
    cur.execute(sql.max + " FOR UPDATE", (key,))
    got = int(cur.fetchone()[0])
    if got > token:
        raise StaleTokenError(key, token, got)


@contextlib.contextmanager
def transaction(conn: Any, key: str, token: int, **where: str) -> Iterator[Any]:
    """A transaction fenced by ``token`` on ``key``: begins, yields a cursor
    after :func:`admit`, commits when the block ends, rolls back if it
    raises (a refusal included, which is raised before the block runs)::

        with mysql.transaction(conn, "accounts/42", token) as cur:
            cur.execute("UPDATE accounts SET balance = %s WHERE id = 42", (b,))

    ``table``, ``key_column`` and ``token_column`` choose the column recipe."""
    conn.begin()
    try:
        with conn.cursor() as cur:
            admit(cur, key, token, **where)
            yield cur
    except BaseException:
        conn.rollback()
        raise
    conn.commit()
