"""Fenced transactions on MariaDB and MySQL with PyMySQL (or any DB-API
driver that uses ``%s`` placeholders, such as mysqlclient).

The key's highest token lives in the table ``seqd_fence`` (the same table
the Go, Java and JavaScript helpers use; ``key`` is a reserved word here,
hence the quotes; the binary collation keeps ``A`` and ``a`` apart)::

    CREATE TABLE seqd_fence (
      `key` varchar(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PRIMARY KEY,
      max_token decimal(20) NOT NULL) ENGINE=InnoDB

MariaDB has no ``ON CONFLICT … WHERE``; its equivalent is two statements in
the transaction: the first raises the max and locks the row, the second
reads what it became with a locking read (which sees the newest committed
row whatever the isolation level)::

    INSERT INTO seqd_fence (`key`, max_token) VALUES (%s, %s)
      ON DUPLICATE KEY UPDATE max_token = GREATEST(max_token, VALUES(max_token));
    SELECT max_token FROM seqd_fence WHERE `key` = %s FOR UPDATE;

If the max is not the token, a newer holder has used the key: refused. The
fence row stays locked until the commit, so the caller's statements run
with no other holder interleaving. Correct at READ COMMITTED, REPEATABLE
READ (InnoDB's default) and SERIALIZABLE; under contention InnoDB may pick
a deadlock victim (error 1213): retry the transaction.

This module imports no driver: it works on the connection you pass.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

from . import StaleTokenError, _check_token

__all__ = ["CREATE_TABLE", "admit", "create_table", "transaction"]

CREATE_TABLE = (
    "CREATE TABLE IF NOT EXISTS seqd_fence ("
    "`key` varchar(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PRIMARY KEY, "
    "max_token decimal(20) NOT NULL) ENGINE=InnoDB"
)

_RAISE = (
    "INSERT INTO seqd_fence (`key`, max_token) VALUES (%s, %s) "
    "ON DUPLICATE KEY UPDATE max_token = GREATEST(max_token, VALUES(max_token))"
)
_MAX = "SELECT CAST(max_token AS CHAR) FROM seqd_fence WHERE `key` = %s FOR UPDATE"


def create_table(conn) -> None:
    """Creates ``seqd_fence`` if it does not exist."""
    with conn.cursor() as cur:
        cur.execute(CREATE_TABLE)
    conn.commit()


def admit(cur, key: str, token: int) -> None:
    """Raises ``key``'s max to ``token`` in the cursor's open transaction, or
    raises :class:`~seqd.fence.StaleTokenError` if a higher token was used.
    The row stays locked until that transaction ends: run the statements it
    guards in the same transaction, and roll back after a refusal."""
    _check_token(token)
    cur.execute(_RAISE, (key, str(token)))
    cur.execute(_MAX, (key,))
    got = int(cur.fetchone()[0])
    if got != token:
        raise StaleTokenError(key, token, got)


@contextlib.contextmanager
def transaction(conn, key: str, token: int) -> Iterator:
    """A transaction fenced by ``token`` on ``key``: begins, yields a cursor
    after :func:`admit`, commits when the block ends, rolls back if it
    raises (a refusal included, which is raised before the block runs)::

        with mysql.transaction(conn, "accounts/42", token) as cur:
            cur.execute("UPDATE accounts SET balance = %s WHERE id = 42", (b,))
    """
    conn.begin()
    try:
        with conn.cursor() as cur:
            admit(cur, key, token)
            yield cur
    except BaseException:
        conn.rollback()
        raise
    conn.commit()
