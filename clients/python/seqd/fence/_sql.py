"""The SQL of the fences, shared with the Go (fence/sqlfence), Java and
JavaScript helpers: one schema, so that a fence table written from one
language is read by the others."""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

MAX_TOKEN_SQL = "18446744073709551615"
TABLE, KEY_COLUMN, TOKEN_COLUMN = "seqd_fence", "fence_key", "max_token"

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}\Z")


class Statements(NamedTuple):
    create: str
    upsert: str
    max: str


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
        )
    return Statements(
        f"CREATE TABLE IF NOT EXISTS {table} (\n  {key} varchar(255) NOT NULL PRIMARY KEY,\n"
        f"  {tok} bigint unsigned NOT NULL CHECK ({tok} >= 1)\n) ENGINE=InnoDB",
        # ON DUPLICATE KEY UPDATE locks the row whether it changes it or
        # not; the locking read after it sees the latest version (not the
        # transaction's snapshot) and tells raised from refused.
        f"INSERT INTO {table} ({key}, {tok}) VALUES (%s, CAST(%s AS UNSIGNED))\n"
        f"ON DUPLICATE KEY UPDATE {tok} = IF({tok} IS NULL OR {tok} <= VALUES({tok}), VALUES({tok}), {tok})",
        f"SELECT CAST({tok} AS CHAR) FROM {table} WHERE {key} = %s",
    )
