"""The SQL of the fences, shared with the Go (fence/sqlfence), Java and
JavaScript helpers: one schema, so that a fence table written from one
language is read by the others."""

from __future__ import annotations

import functools
import re
from typing import Any, NamedTuple, Tuple

MAX_TOKEN_SQL = "18446744073709551615"
TABLE, KEY_COLUMN, TOKEN_COLUMN = "seqd_fence", "fence_key", "max_token"

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}\Z")


class NoTransactionError(RuntimeError):
    """admit ran outside an open transaction (an autocommit connection): the
    fence's check and the writes it guards would commit apart."""

    def __init__(self) -> None:
        super().__init__(
            "admit outside an open transaction: the fence's check and the writes it guards would commit apart; "
            "begin a transaction first (or turn autocommit off) and run the writes in it"
        )


class KeyCollationError(RuntimeError):
    """A MariaDB fence table whose key column folds distinct keys (case,
    trailing spaces, accents) into one max; the message gives the ALTER
    TABLE that migrates it."""


#: The start of the error of the trigger that refuses to delete a row that
#: holds its fence max (the column recipe).
KEEP_ROW_MESSAGE = "seqd fence: this row keeps its fence max"


class Statements(NamedTuple):
    create: str
    upsert: str
    max: str
    keep_rows: Tuple[str, ...]


def _check(what: str, s: str) -> None:
    if not isinstance(s, str) or not _IDENT.match(s):
        raise ValueError(f"{what} {s!r} is not a plain SQL identifier ([A-Za-z_][A-Za-z0-9_]*, at most 63 bytes)")


@functools.lru_cache(maxsize=64)
def statements(dialect: str, table: str, key: str, tok: str) -> Statements:
    _check("table name", table)
    _check("key column", key)
    _check("token column", tok)
    if dialect == "postgres":
        return Statements(
            f"CREATE TABLE IF NOT EXISTS {table} (\n  {key} text PRIMARY KEY,\n"
            f"  {tok} numeric(20,0) NOT NULL CHECK ({tok} >= 1 AND {tok} <= {MAX_TOKEN_SQL})\n)",
            # The WHERE of DO UPDATE is evaluated on the row's latest version
            # once its lock is had: a max raised by a transaction that
            # committed while this one waited is seen.
            f"INSERT INTO {table} ({key}, {tok}) VALUES (%s, %s::numeric)\n"
            f"ON CONFLICT ({key}) DO UPDATE SET {tok} = EXCLUDED.{tok}\n"
            f"WHERE {table}.{tok} IS NULL OR {table}.{tok} <= EXCLUDED.{tok}\n"
            f"RETURNING {tok}::text",
            f"SELECT {tok}::text FROM {table} WHERE {key} = %s",
            (
                "CREATE OR REPLACE FUNCTION seqd_fence_keep_row() RETURNS trigger LANGUAGE plpgsql AS $f$\n"
                "BEGIN\n"
                "  IF TG_LEVEL = 'STATEMENT' OR to_jsonb(OLD) ->> TG_ARGV[0] IS NOT NULL THEN\n"
                f"    RAISE EXCEPTION '{KEEP_ROW_MESSAGE}: deleting it would let a stale holder recreate it; keep the row or use the fence table (%.%)', "
                "TG_TABLE_NAME, TG_ARGV[0] USING ERRCODE = 'restrict_violation';\n"
                "  END IF;\n"
                "  RETURN OLD;\n"
                "END $f$",
                f"CREATE OR REPLACE TRIGGER seqd_fence_keep_row BEFORE DELETE ON {table} FOR EACH ROW EXECUTE FUNCTION seqd_fence_keep_row('{tok}')",
                f"CREATE OR REPLACE TRIGGER seqd_fence_keep_rows BEFORE TRUNCATE ON {table} FOR EACH STATEMENT EXECUTE FUNCTION seqd_fence_keep_row('{tok}')",
            ),
        )
    return Statements(
        f"CREATE TABLE IF NOT EXISTS {table} (\n  {key} varbinary(1024) NOT NULL PRIMARY KEY,\n"
        f"  {tok} bigint unsigned NOT NULL CHECK ({tok} >= 1)\n) ENGINE=InnoDB",
        # ON DUPLICATE KEY UPDATE locks the row whether it changes it or
        # not; the locking read after it sees the latest version (not the
        # transaction's snapshot) and tells raised from refused.
        f"INSERT INTO {table} ({key}, {tok}) VALUES (%s, CAST(%s AS UNSIGNED))\n"
        f"ON DUPLICATE KEY UPDATE {tok} = IF({tok} IS NULL OR {tok} <= VALUES({tok}), VALUES({tok}), {tok})",
        f"SELECT CAST({tok} AS CHAR) FROM {table} WHERE {key} = %s",
        # MariaDB's MESSAGE_TEXT holds 128 characters at most.
        (
            f"CREATE TRIGGER IF NOT EXISTS {('seqd_keep_' + table)[:64]} BEFORE DELETE ON {table} FOR EACH ROW\n"
            f"IF OLD.{tok} IS NOT NULL THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = '{KEEP_ROW_MESSAGE}; keep the row or use the fence table'; END IF",
        ),
    )


def column_recipe(key: str, tok: str) -> bool:
    """Naming a key or token column other than the fence table's chooses
    the column recipe."""
    return key != KEY_COLUMN or tok != TOKEN_COLUMN


def check_key_column(cur: Any, table: str, key: str) -> None:
    """Raises KeyCollationError if MariaDB's fence table ``table`` compares
    its key column with a collation that folds keys."""
    cur.execute(
        "SELECT DATA_TYPE, COLLATION_NAME FROM information_schema.COLUMNS "
        "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s AND COLUMN_NAME = %s",
        (table, key),
    )
    row = cur.fetchone()
    if row is None:
        raise KeyCollationError(f"the fence table {table} has no column {key}")
    typ, coll = (v.decode() if isinstance(v, bytes) else v for v in row)
    c = (coll or "").lower()
    if typ in ("varbinary", "binary") or c.endswith("_nopad_bin") or c.endswith("_0900_bin"):
        return
    raise KeyCollationError(
        f"{table}.{key} is {typ} with collation {coll}, so keys that differ in case, trailing spaces or accents share one max; "
        f"migrate it with: ALTER TABLE {table} MODIFY {key} varbinary(1024) NOT NULL"
    )
