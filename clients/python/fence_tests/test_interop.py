"""The fence table and the Redis key are the Go fences': a max the Go fences
wrote (1000 on the key SEQD_TEST_FENCE_INTEROP_KEY, in each database) is
read here, and the harness reads back what this suite wrote (1001)."""

from __future__ import annotations

import unittest

from seqd.fence import StaleTokenError
from seqd.fence import mysql as myfence
from seqd.fence import postgres as pgfence
from seqd.fence import redis as redisfence
from seqd.fence._sql import KEY_COLUMN, TABLE, TOKEN_COLUMN, statements

from .support import env
from .test_fences import my_connect, pg_connect, redis_connect


class GoInteropTest(unittest.TestCase):
    def test_same_sql_as_go(self) -> None:
        self.assertEqual(statements("postgres", TABLE, KEY_COLUMN, TOKEN_COLUMN).create, env("SEQD_TEST_FENCE_GO_CREATE_POSTGRES"))
        self.assertEqual(statements("mysql", TABLE, KEY_COLUMN, TOKEN_COLUMN).create, env("SEQD_TEST_FENCE_GO_CREATE_MARIADB"))

    def _steps(self, admit) -> None:
        key = env("SEQD_TEST_FENCE_INTEROP_KEY")
        with self.assertRaises(StaleTokenError) as cm:
            admit(key, 999)
        self.assertEqual(cm.exception.max, 1000)
        admit(key, 1000)
        admit(key, 1001)

    def test_postgres_max_written_by_go(self) -> None:
        with pg_connect() as conn:
            def admit(key: str, token: int) -> None:
                with pgfence.transaction(conn, key, token):
                    pass

            self._steps(admit)

    def test_mariadb_max_written_by_go(self) -> None:
        conn = my_connect()
        try:
            def admit(key: str, token: int) -> None:
                with myfence.transaction(conn, key, token):
                    pass

            self._steps(admit)
        finally:
            conn.close()

    def test_redis_max_written_by_go(self) -> None:
        client = redis_connect()
        try:
            self._steps(redisfence.Fence(client).admit)
        finally:
            client.close()


if __name__ == "__main__":
    unittest.main()
