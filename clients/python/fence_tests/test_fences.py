"""The shared fence cases, with psycopg 3, PyMySQL and redis-py, against the
harness's PostgreSQL, MariaDB and Redis (go test ./clients/ -run
TestPythonFences). Each case runs with the fence and under the "none"
control; the figures at the end compare a fenced write with a plain one."""

from __future__ import annotations

import statistics
import time
import unittest
import warnings
from typing import Optional

import psycopg
import pymysql
import redis

from seqd.fence import MAX_TOKEN, StaleTokenError
from seqd.fence import mysql as myfence
from seqd.fence import postgres as pgfence
from seqd.fence import redis as redisfence

from .support import Store, database, fenced, report, run_all, run_id

VALUES_PG = "CREATE TABLE IF NOT EXISTS fence_case_values (k text PRIMARY KEY, v text NOT NULL)"
UPSERT_PG = "INSERT INTO fence_case_values (k, v) VALUES (%s, %s) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v"
VALUES_MY = (
    "CREATE TABLE IF NOT EXISTS fence_case_values ("
    "k varbinary(1024) PRIMARY KEY, v text NOT NULL) ENGINE=InnoDB"
)
UPSERT_MY = "INSERT INTO fence_case_values (k, v) VALUES (%s, %s) ON DUPLICATE KEY UPDATE v = VALUES(v)"
SELECT = "SELECT v FROM fence_case_values WHERE k = %s"

# The column recipe: the max in the data's own row (fence_token), which a
# fenced write or read creates if it is missing.
ROWS_PG = "CREATE TABLE IF NOT EXISTS fence_case_rows (k text PRIMARY KEY, v text NULL, fence_token numeric(20,0) NULL)"
ROWS_MY = (
    "CREATE TABLE IF NOT EXISTS fence_case_rows ("
    "k varbinary(1024) NOT NULL PRIMARY KEY, v text NULL, fence_token bigint unsigned NULL) ENGINE=InnoDB"
)
COLUMN = {"table": "fence_case_rows", "key_column": "k", "token_column": "fence_token"}

# The "string" control: the column recipe on a token column of text, the
# mistake of a max kept as a decimal string and compared as text.
TEXT_PG = "CREATE TABLE IF NOT EXISTS fence_case_text (k text PRIMARY KEY, v text NULL, fence_token text NULL)"
TEXT_MY = (
    "CREATE TABLE IF NOT EXISTS fence_case_text ("
    "k varbinary(1024) NOT NULL PRIMARY KEY, v text NULL, fence_token varchar(32) NULL) ENGINE=InnoDB"
)
TEXT = {"table": "fence_case_text", "key_column": "k", "token_column": "fence_token"}
WHERE = {"column": COLUMN, "string": TEXT}


def pg_connect(autocommit: bool = False):
    d = database("SEQD_TEST_PG")
    return psycopg.connect(
        host=d["HOST"], port=d["PORT"], user=d["USER"], password=d["PASSWORD"] or None, dbname=d["DATABASE"], autocommit=autocommit
    )


def my_connect():
    d = database("SEQD_TEST_MARIADB")
    return pymysql.connect(host=d["HOST"], port=int(d["PORT"]), user=d["USER"], password=d["PASSWORD"], database=d["DATABASE"])


def redis_connect():
    d = database("SEQD_TEST_REDIS")
    return redis.Redis(host=d["HOST"], port=int(d["PORT"]), db=int(d["DATABASE"] or 0), decode_responses=True)


class PostgresStore(Store):
    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.control = mode if mode in ("none", "string") else ""
        self.where = WHERE.get(mode, {})
        self.values = self.where.get("table", "fence_case_values")
        self.reconnect()

    def reconnect(self) -> None:
        self.conn = pg_connect()
        self.plain = pg_connect(autocommit=True)

    def close(self) -> None:
        self.conn.close()
        self.plain.close()

    def writer(self) -> "PostgresStore":
        return PostgresStore(self.mode)

    def write(self, key: str, token: str, value: str) -> str:
        def do(t: int) -> None:
            if self.control == "none":
                with self.conn.transaction():
                    self.conn.execute(UPSERT_PG, (key, value))
                return
            with pgfence.transaction(self.conn, key, t, **self.where) as cur:
                if self.where:  # the fence made the row: fill it in
                    cur.execute(f"UPDATE {self.values} SET v = %s WHERE k = %s", (value, key))
                else:
                    cur.execute(UPSERT_PG, (key, value))

        return fenced(do, token, self.control)[0]

    def read(self, key: str, token: str):
        def do(t: int) -> Optional[str]:
            if self.control == "none":
                return self.value(key)
            with pgfence.transaction(self.conn, key, t, **self.where) as cur:
                row = cur.execute(f"SELECT v FROM {self.values} WHERE k = %s", (key,)).fetchone()
                return row[0] if row else None

        return fenced(do, token, self.control)

    def delete(self, key: str, token: str) -> str:
        def do(t: int) -> None:
            if self.control == "none":
                with self.conn.transaction():
                    self.conn.execute(f"DELETE FROM {self.values} WHERE k = %s", (key,))
                return
            with pgfence.transaction(self.conn, key, t, **self.where) as cur:
                cur.execute(f"DELETE FROM {self.values} WHERE k = %s", (key,))

        try:
            return fenced(do, token, self.control)[0]
        except psycopg.Error as e:
            if pgfence.KEEP_ROW_MESSAGE in str(e):
                return "kept"
            raise

    def value(self, key: str) -> Optional[str]:
        row = self.plain.execute(f"SELECT v FROM {self.values} WHERE k = %s", (key,)).fetchone()
        return row[0] if row else None

    def max(self, key: str) -> int:
        if self.where:
            row = self.plain.execute("SELECT fence_token::text FROM fence_case_rows WHERE k = %s", (key,)).fetchone()
        else:
            row = self.plain.execute("SELECT max_token::text FROM seqd_fence WHERE fence_key = %s", (key,)).fetchone()
        return int(row[0]) if row and row[0] is not None else 0


class MariaDBStore(Store):
    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.control = mode if mode in ("none", "string") else ""
        self.where = WHERE.get(mode, {})
        self.values = self.where.get("table", "fence_case_values")
        self.reconnect()

    def reconnect(self) -> None:
        self.conn = my_connect()
        self.plain = my_connect()
        self.plain.autocommit(True)

    def close(self) -> None:
        self.conn.close()
        self.plain.close()

    def writer(self) -> "MariaDBStore":
        return MariaDBStore(self.mode)

    def write(self, key: str, token: str, value: str) -> str:
        def do(t: int) -> None:
            if self.control == "none":
                with self.conn.cursor() as cur:
                    cur.execute(UPSERT_MY, (key, value))
                self.conn.commit()
                return
            with myfence.transaction(self.conn, key, t, **self.where) as cur:
                if self.where:  # the fence made the row: fill it in
                    cur.execute(f"UPDATE {self.values} SET v = %s WHERE k = %s", (value, key))
                else:
                    cur.execute(UPSERT_MY, (key, value))

        return fenced(do, token, self.control)[0]

    def read(self, key: str, token: str):
        def do(t: int) -> Optional[str]:
            if self.control == "none":
                return self.value(key)
            with myfence.transaction(self.conn, key, t, **self.where) as cur:
                cur.execute(f"SELECT v FROM {self.values} WHERE k = %s", (key,))
                row = cur.fetchone()
                return row[0] if row else None

        return fenced(do, token, self.control)

    def delete(self, key: str, token: str) -> str:
        def do(t: int) -> None:
            if self.control == "none":
                with self.conn.cursor() as cur:
                    cur.execute(f"DELETE FROM {self.values} WHERE k = %s", (key,))
                self.conn.commit()
                return
            with myfence.transaction(self.conn, key, t, **self.where) as cur:
                cur.execute(f"DELETE FROM {self.values} WHERE k = %s", (key,))

        try:
            return fenced(do, token, self.control)[0]
        except pymysql.Error as e:
            if myfence.KEEP_ROW_MESSAGE in str(e):
                return "kept"
            raise

    def value(self, key: str) -> Optional[str]:
        with self.plain.cursor() as cur:
            cur.execute(f"SELECT v FROM {self.values} WHERE k = %s", (key,))
            row = cur.fetchone()
            return row[0] if row else None

    def max(self, key: str) -> int:
        with self.plain.cursor() as cur:
            if self.where:
                cur.execute("SELECT CAST(fence_token AS CHAR) FROM fence_case_rows WHERE k = %s", (key,))
            else:
                cur.execute("SELECT CAST(max_token AS CHAR) FROM seqd_fence WHERE fence_key = %s", (key,))
            row = cur.fetchone()
            return int(row[0]) if row and row[0] is not None else 0


class RedisStore(Store):
    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.control = "none" if mode == "none" else ""
        self.reconnect()

    def reconnect(self) -> None:
        self.client = redis_connect()
        self.fence = redisfence.Fence(self.client)

    def close(self) -> None:
        self.client.close()

    def writer(self) -> "RedisStore":
        return RedisStore(self.mode)

    def write(self, key: str, token: str, value: str) -> str:
        def do(t: int) -> None:
            if self.control:
                self.client.set("v:" + key, value)
            else:
                self.fence.call(key, t, "SET", keys=["v:" + key], args=[value])

        return fenced(do, token, self.control)[0]

    def read(self, key: str, token: str):
        def do(t: int) -> Optional[str]:
            if self.control:
                return self.client.get("v:" + key)
            return self.fence.call(key, t, "GET", keys=["v:" + key])

        return fenced(do, token, self.control)

    def delete(self, key: str, token: str) -> str:
        def do(t: int) -> None:
            if self.control:
                self.client.delete("v:" + key)
            else:
                self.fence.call(key, t, "DEL", keys=["v:" + key])

        return fenced(do, token, self.control)[0]

    def value(self, key: str) -> Optional[str]:
        return self.client.get("v:" + key)

    def max(self, key: str) -> int:
        return self.fence.max(key)


def create_tables() -> None:
    """seqd_fence and the cases' values table, in PostgreSQL and MariaDB."""
    with pg_connect() as conn:
        pgfence.create_table(conn)
        with conn.transaction():
            conn.execute(VALUES_PG)
            conn.execute(ROWS_PG)
            conn.execute(TEXT_PG)
        pgfence.create_table(conn, **COLUMN)
    conn = my_connect()
    try:
        myfence.create_table(conn)
        with conn.cursor() as cur:
            cur.execute(VALUES_MY)
            cur.execute(ROWS_MY)
            cur.execute(TEXT_MY)
        myfence.create_table(conn, **COLUMN)
    finally:
        conn.close()


class PostgresFenceTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        create_tables()

    def test_cases(self) -> None:
        run_all(self, PostgresStore, "postgres", recipes=("fence", "column"), controls=("none", "string"))

    def test_refusal_rolls_back_and_keeps_the_connection_usable(self) -> None:
        key = run_id() + "/rollback"
        with pg_connect() as conn:
            with pgfence.transaction(conn, key, 10) as cur:
                cur.execute(UPSERT_PG, (key, "ten"))
            with self.assertRaises(StaleTokenError) as cm:
                with pgfence.transaction(conn, key, 9) as cur:
                    self.fail("the block ran after a refusal")
            self.assertEqual((cm.exception.key, cm.exception.token, cm.exception.max), (key, 9, 10))
            with pgfence.transaction(conn, key, MAX_TOKEN) as cur:
                self.assertEqual(cur.execute(SELECT, (key,)).fetchone()[0], "ten")

    def test_the_callers_error_rolls_back_the_write_and_the_max(self) -> None:
        key = run_id() + "/callers-error"
        with pg_connect() as conn:
            with self.assertRaises(ZeroDivisionError):
                with pgfence.transaction(conn, key, 20) as cur:
                    cur.execute(UPSERT_PG, (key, "lost"))
                    1 / 0
            with pgfence.transaction(conn, key, 19) as cur:  # the max did not move to 20
                self.assertIsNone(cur.execute(SELECT, (key,)).fetchone())


    def test_admit_refuses_an_autocommit_connection(self) -> None:
        key = run_id() + "/autocommit"
        with pg_connect(autocommit=True) as conn:
            with conn.cursor() as cur:
                with self.assertRaises(pgfence.NoTransactionError) as cm:
                    pgfence.admit(cur, key, 5)
                self.assertIn("outside an open transaction", str(cm.exception))
            with pgfence.transaction(conn, key, 6):  # an explicit transaction on it is one
                pass


class MariaDBFenceTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        create_tables()

    def test_cases(self) -> None:
        run_all(self, MariaDBStore, "mariadb", recipes=("fence", "column"), controls=("none", "string"))

    def test_admit_refuses_an_autocommit_connection(self) -> None:
        conn = my_connect()
        try:
            conn.autocommit(True)
            with conn.cursor() as cur:
                with self.assertRaises(myfence.NoTransactionError):
                    myfence.admit(cur, run_id() + "/autocommit", 5)
        finally:
            conn.close()

    def test_create_table_refuses_a_folding_key_column(self) -> None:
        table = "fence_case_folding"
        conn = my_connect()
        try:
            with conn.cursor() as cur:
                cur.execute(f"DROP TABLE IF EXISTS {table}")
                cur.execute(f"CREATE TABLE {table} (fence_key varchar(255) NOT NULL PRIMARY KEY, max_token bigint unsigned NOT NULL) ENGINE=InnoDB")
            with self.assertRaises(myfence.KeyCollationError) as cm:
                myfence.create_table(conn, table)
            alter = str(cm.exception).partition("migrate it with: ")[2]
            self.assertTrue(alter.startswith(f"ALTER TABLE {table} "), str(cm.exception))
            with conn.cursor() as cur:
                cur.execute(alter)
            myfence.create_table(conn, table)
        finally:
            conn.close()


class RedisFenceTest(unittest.TestCase):
    def test_cases(self) -> None:
        run_all(self, RedisStore, "redis")

    def test_refuses_a_redis_without_aof_or_warns(self) -> None:
        client = redis_connect()
        try:
            client.config_set("appendonly", "no")
            try:
                with self.assertRaises(redisfence.PersistenceError):
                    redisfence.Fence(client)
                with warnings.catch_warnings(record=True) as w:
                    warnings.simplefilter("always")
                    redisfence.Fence(client, require_aof=False)
                self.assertTrue(any("without the append-only file" in str(x.message) for x in w), [str(x.message) for x in w])
            finally:
                client.config_set("appendonly", "yes")
            client.config_set("appendfsync", "everysec")
            try:
                with warnings.catch_warnings(record=True) as w:
                    warnings.simplefilter("always")
                    redisfence.Fence(client)
                self.assertTrue(any("appendfsync everysec" in str(x.message) for x in w), [str(x.message) for x in w])
            finally:
                client.config_set("appendfsync", "always")
        finally:
            client.close()


def _per_write(plain, fenced_, n: int, batches: int = 10):
    """Seconds per plain and per fenced write, and the median of the
    batches' ratios, measured in alternating batches so that a change of
    the machine's load hits both alike."""
    tp = tf = 0.0
    ratios = []
    i = 1
    for _ in range(batches):
        start = time.perf_counter()
        for j in range(n // batches):
            plain(i + j)
        bp = time.perf_counter() - start
        start = time.perf_counter()
        for j in range(n // batches):
            fenced_(i + j)
        bf = time.perf_counter() - start
        tp, tf = tp + bp, tf + bf
        ratios.append(bf / bp)
        i += n // batches
    return tp / n, tf / n, statistics.median(ratios)


class CostTest(unittest.TestCase):
    """A fenced write against a plain one (the same upsert in a transaction
    of its own), on each database, measured in one run. Prints the ratio;
    asserts nothing about speed."""

    N = 300

    @classmethod
    def setUpClass(cls) -> None:
        create_tables()

    def test_fenced_write_cost(self) -> None:
        pg = pg_connect()
        my = my_connect()
        rc = redis_connect()
        fence = redisfence.Fence(rc)
        plain_key, fenced_key = run_id() + "/cost-plain", run_id() + "/cost-fenced"
        try:

            def pg_plain(i: int) -> None:
                with pg.transaction():
                    pg.execute(UPSERT_PG, (plain_key, str(i)))

            def pg_fenced(i: int) -> None:
                with pgfence.transaction(pg, fenced_key, i + 1) as cur:
                    cur.execute(UPSERT_PG, (fenced_key, str(i)))

            def my_plain(i: int) -> None:
                my.begin()
                with my.cursor() as cur:
                    cur.execute(UPSERT_MY, (plain_key, str(i)))
                my.commit()

            def my_fenced(i: int) -> None:
                with myfence.transaction(my, fenced_key, i + 1) as cur:
                    cur.execute(UPSERT_MY, (fenced_key, str(i)))

            def rd_plain(i: int) -> None:
                rc.set("v:" + plain_key, str(i))

            def rd_fenced(i: int) -> None:
                fence.call(fenced_key, i + 1, "SET", keys=["v:" + fenced_key], args=[str(i)])

            for db, plain, fenced_ in (("postgres", pg_plain, pg_fenced), ("mariadb", my_plain, my_fenced), ("redis", rd_plain, rd_fenced)):
                plain(1), fenced_(1)  # warm up: connections, prepared plans, the script cache
                p, f, med = _per_write(plain, fenced_, self.N)
                report(
                    f"MEASURED python {db}: plain write {p * 1e6:.0f} us, fenced write {f * 1e6:.0f} us, "
                    f"ratio {f / p:.2f} (median of 10 batches {med:.2f}; {self.N} writes each)"
                )
        finally:
            pg.close()
            my.close()
            rc.close()


if __name__ == "__main__":
    unittest.main()
