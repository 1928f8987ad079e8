"""The locked-down daemon (HTTPS, client certificate, API token), with the
settings read from the environment."""

from __future__ import annotations

import os
import unittest
from unittest import mock

import seqd

from .support import SECURE, needs_daemon, unique


@needs_daemon
class SecureTest(unittest.TestCase):
    def _client(self, **drop: bool) -> seqd.Client:
        env = {k: v for k, v in SECURE.items() if not drop.get(k)}
        clean = {k: v for k, v in os.environ.items() if not k.startswith("SEQD_")}
        with mock.patch.dict(os.environ, {**clean, **env}, clear=True):
            c = seqd.Client()
        self.addCleanup(c.close)
        return c

    def test_settings_from_the_environment(self) -> None:
        c = self._client()
        self.assertEqual(c.addr, SECURE["SEQD_ADDR"])
        name = unique("secure")
        with c.lock(name, ttl="2s", wait="5s") as lease:
            self.assertTrue(c.check(lease.sequencer).valid)
            self.assertEqual(c.status(name).token, lease.token)
        self.assertTrue(lease.released)

    def test_without_the_token_unauthorized(self) -> None:
        c = self._client(SEQD_API_TOKEN_FILE=True)
        with self.assertRaises(seqd.UnauthorizedError) as cm:
            c.acquire(unique("notoken"))
        self.assertEqual(cm.exception.status, 401)
        self.assertEqual(cm.exception.code, "unauthorized")

    def test_without_the_client_certificate_refused(self) -> None:
        c = self._client(SEQD_CERT=True, SEQD_KEY=True)
        with self.assertRaises(seqd.UnauthorizedError) as cm:
            c.acquire(unique("nocert"))
        self.assertEqual(cm.exception.code, "tls")
        self.assertIn("SEQD_CERT", str(cm.exception))

    def test_without_the_ca_refused(self) -> None:
        c = self._client(SEQD_CACERT=True)
        with self.assertRaises(seqd.UnauthorizedError) as cm:
            c.acquire(unique("noca"))
        self.assertEqual(cm.exception.code, "tls")
        self.assertIn("SEQD_CACERT", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
