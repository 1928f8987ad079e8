"""The client's own logic, without a daemon: durations, errors, settings,
answers."""

from __future__ import annotations

import ast
import datetime
import importlib.util
import os
import pathlib
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from typing import Any, Dict, List, Tuple
from unittest import mock

import seqd
from seqd._durations import Duration, format_go_duration, parse_go_duration, parse_time, to_nanoseconds, wire_duration
from seqd.errors import error_from_answer

PACKAGE = pathlib.Path(seqd.__file__).parent


class DurationTest(unittest.TestCase):
    def test_parse(self) -> None:
        for text, ns in [
            ("15s", 15 * 10**9), ("1m30s", 90 * 10**9), ("250ms", 250 * 10**6), ("1.5h", 5400 * 10**9),
            ("0", 0), ("0s", 0), ("1h2m3.5s", 3723_500_000_000), ("10us", 10_000), ("7ns", 7), (".5s", 500_000_000),
        ]:
            with self.subTest(text=text):
                self.assertEqual(parse_go_duration(text), ns)

    def test_parse_refuses(self) -> None:
        for text in ["", "15", "s", "-1s", "1d", "1s2", "1 s", "abc", "1.s.s"]:
            with self.subTest(text=text), self.assertRaises(seqd.BadRequestError):
                parse_go_duration(text)

    def test_every_form_to_wire(self) -> None:
        forms: List[Tuple[Duration, str]] = [
            ("15s", "15s"), (15, "15s"), (1.5, "1500ms"), (datetime.timedelta(minutes=2), "2m"),
            ("1m30s", "90s"), (0, "0s"), (0.000001, "1us"), (1e-9, "1ns"),
        ]
        for value, wire in forms:
            with self.subTest(value=value):
                self.assertEqual(wire_duration(value, "ttl"), wire)
                self.assertEqual(parse_go_duration(wire), to_nanoseconds(value))
        self.assertIsNone(wire_duration(None, "ttl"))

    def test_refused_values(self) -> None:
        for value in [-1, True, float("nan"), float("inf"), datetime.timedelta(seconds=-1), [1], "-5s"]:
            with self.subTest(value=value), self.assertRaises(seqd.BadRequestError):
                to_nanoseconds(value)  # type: ignore[arg-type]

    def test_format_is_exact(self) -> None:
        for ns in [1, 999, 1000, 1_500_000, 10**9, 61 * 10**9, 3600 * 10**9 + 1]:
            self.assertEqual(parse_go_duration(format_go_duration(ns)), ns)

    def test_times(self) -> None:
        t = parse_time("2024-05-06T07:08:09.123456789Z")
        self.assertEqual(t, datetime.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=datetime.timezone.utc))
        t = parse_time("2024-05-06T07:08:09+02:00")
        self.assertEqual(t.utcoffset(), datetime.timedelta(hours=2))
        self.assertIsNone(parse_time(None))
        self.assertIsNone(parse_time("yesterday"))


class ErrorTest(unittest.TestCase):
    def test_codes_map_to_types(self) -> None:
        for status, code, cls in [
            (409, "held", seqd.HeldError), (409, "stale_token", seqd.StaleTokenError), (409, "lost", seqd.LostError),
            (409, "broken", seqd.LostError), (503, "unavailable", seqd.UnavailableError),
            (401, "unauthorized", seqd.UnauthorizedError), (400, "bad_request", seqd.BadRequestError),
            (403, "forbidden", seqd.ForbiddenError), (429, "quota_exceeded", seqd.QuotaExceededError),
            (403, "bad_signature", seqd.UnauthorizedError), (409, "limit_mismatch", seqd.SeqdError),
            (502, "", seqd.UnavailableError), (500, "internal", seqd.SeqdError),
        ]:
            with self.subTest(code=code):
                e = error_from_answer(status, {"error": "why", "code": code, "current_token": 42}, b"")
                self.assertIs(type(e), cls)
                self.assertIsInstance(e, seqd.SeqdError)
                self.assertEqual(e.status, status)
                self.assertEqual(e.current_token, 42)
                self.assertIn("why", str(e))

    def test_non_json_answer(self) -> None:
        e = error_from_answer(502, None, b"Bad Gateway\n")
        self.assertIsInstance(e, seqd.UnavailableError)
        self.assertEqual(e.message, "Bad Gateway")
        self.assertIsNone(e.current_token)

    def test_tokens_are_exact(self) -> None:
        big = 2**64 - 1
        e = error_from_answer(409, {"error": "x", "code": "stale_token", "current_token": big}, b"")
        self.assertEqual(e.current_token, big)
        info = seqd.LeaseInfo.from_json({"name": "a", "token": big, "sequencer": f"a@{big}", "ttl": "15s"})
        self.assertEqual(info.token, big)
        self.assertEqual(info.ttl, 15.0)

    def test_a_check_without_a_current_token_says_none(self) -> None:
        # The daemon writes current_token 0 when it knows no holder's token:
        # 0 is never a token, so the answer has none (the JS client's null).
        r = seqd.CheckResult.from_json({"valid": False, "current_token": 0, "code": "not_held", "error": "x"})
        self.assertIsNone(r.current_token)
        self.assertEqual(r.code, "not_held")
        big = 2**64 - 1
        self.assertEqual(seqd.CheckResult.from_json({"valid": True, "current_token": big}).current_token, big)
        self.assertIsNone(seqd.CheckResult.from_json({"valid": False, "current_token": -3}).current_token)


class LeaseMachineTest(unittest.TestCase):
    """The rules of holding a lease, driven without a daemon: the machine
    says what to send and what each answer means, and does no I/O."""

    def machine(self, ttl: str = "3s", wait: str = "0s") -> Any:
        from seqd._lease import LeaseMachine

        client = seqd.Client("http://127.0.0.1:9")  # never dialled
        m = LeaseMachine(client, client._lock_hold("units/lease", ttl, wait, None, None, None, True, True, None))
        m.lost = threading.Event()
        return m

    def grant(self, m: Any, token: int = 7) -> seqd.LeaseInfo:
        info = seqd.LeaseInfo.from_json({"name": "units/lease", "token": token, "sequencer": f"units/lease@{token}", "lease_id": "a" * 32, "ttl": "3s"})
        m._begin_acquire()
        m._granted(info, time.monotonic())
        return info

    def test_a_renewal_goes_out_for_the_lease_and_moves_the_deadline(self) -> None:
        m = self.machine()
        self.grant(m)
        req = m._renew_request(time.monotonic())
        self.assertEqual((req.method, req.path, req.body), ("POST", "/v1/locks/units/lease/renew", {"lease_id": "a" * 32, "token": 7}))
        sent = time.monotonic()
        fresh = seqd.LeaseInfo.from_json({"name": "units/lease", "token": 7, "sequencer": "units/lease@7", "lease_id": "a" * 32, "ttl": "3s"})
        next_at = m._renewed(fresh, sent)
        self.assertAlmostEqual(next_at, sent + 1.0)
        self.assertAlmostEqual(m.deadline, sent + 3.0)
        self.assertEqual(m.renewals, 1)
        self.assertTrue(m.held)

    def test_answers_that_end_the_lease(self) -> None:
        from seqd._lease import Stop

        for err, code in [
            (seqd.LostError("gone", code="lost"), "lost"),
            (seqd.StaleTokenError("newer", code="stale_token"), "stale_token"),
            (seqd.ProtocolError("html", code="protocol"), "protocol"),
        ]:
            with self.subTest(code=code):
                m = self.machine()
                self.grant(m)
                with self.assertRaises(Stop):
                    m._renewed(err, time.monotonic())
                self.assertTrue(m.lost.is_set())
                self.assertEqual(m.lost_error.code, code)
                self.assertFalse(m.held)

    def test_an_unanswered_renewal_is_retried_not_lost(self) -> None:
        m = self.machine()
        self.grant(m)
        now = time.monotonic()
        again = m._renewed(seqd.UnavailableError("no answer", code="unavailable"), now)
        self.assertLess(again - now, 1.0)
        self.assertFalse(m.lost.is_set())
        self.assertIsNotNone(m.last_error)

    def test_an_acquire_retries_while_its_wait_lasts(self) -> None:
        attempts = self.machine(wait="1m")._begin_acquire()
        self.assertEqual(attempts.after(seqd.HeldError("held", code="held"), time.monotonic()), 0.0)
        with self.assertRaises(seqd.BadRequestError):
            attempts.after(seqd.BadRequestError("bad", code="bad_request"), time.monotonic())
        once = self.machine(wait="0s")._begin_acquire()
        with self.assertRaises(seqd.HeldError):
            once.after(seqd.HeldError("held", code="held"), time.monotonic())


class ClientSettingsTest(unittest.TestCase):
    def setUp(self) -> None:
        clean = {k: v for k, v in os.environ.items() if not k.startswith("SEQD_")}
        p = mock.patch.dict(os.environ, clean, clear=True)
        p.start()
        self.addCleanup(p.stop)

    def test_defaults(self) -> None:
        c = seqd.Client()
        self.assertEqual(c.addr, "http://127.0.0.1:7070")
        host, _, pid = c.owner.rpartition(":")
        self.assertTrue(host)
        self.assertEqual(int(pid), os.getpid())
        self.assertEqual(seqd.Client(owner="me").owner, "me")

    def test_environment_and_arguments(self) -> None:
        with tempfile.NamedTemporaryFile("w", delete=False) as f:
            f.write("  secret-token-0123456789\n")
        self.addCleanup(os.unlink, f.name)
        os.environ["SEQD_ADDR"] = "http://127.0.0.1:9999/"
        os.environ["SEQD_API_TOKEN_FILE"] = f.name
        c = seqd.Client()
        self.assertEqual(c.addr, "http://127.0.0.1:9999")
        self.assertEqual(c._transport._token, "secret-token-0123456789")
        c = seqd.Client("http://127.0.0.1:8888", api_token_file="")
        self.assertEqual(c.addr, "http://127.0.0.1:8888")
        self.assertIsNone(c._transport._token)

    def test_bad_settings(self) -> None:
        settings: List[Tuple[Dict[str, Any], str]] = [
            ({"addr": "127.0.0.1:7070"}, "base URL"),
            ({"addr": "ftp://x"}, "base URL"),
            ({"addr": "http://x:7070/?a=1"}, "query"),
            ({"addr": "http://x:notaport"}, "port"),
            ({"api_token_file": "/nonexistent/token"}, "/nonexistent/token"),
            ({"cert": "c.pem"}, "both cert and key"),
            ({"timeout": 0}, "timeout"),
        ]
        for kwargs, words in settings:
            with self.subTest(kwargs=kwargs), self.assertRaises(ValueError) as cm:
                seqd.Client(**kwargs)
            self.assertIn(words, str(cm.exception))

    def test_bad_arguments_send_nothing(self) -> None:
        c = seqd.Client("http://127.0.0.1:1")  # nothing listens: a request would be UnavailableError
        for call in [
            lambda: c.acquire("", ttl="1s"),
            lambda: c.acquire("a", ttl="forever"),
            lambda: c.renew("a", "id", 0),
            lambda: c.renew("a", "id", 2**64),
            lambda: c.check(),
            lambda: c.check("a@1", name="a", token=1),
            lambda: c.semaphore("a", 0),
            lambda: c.lock("a", ttl=-1),
        ]:
            with self.assertRaises(seqd.BadRequestError):
                call()

    def test_a_lease_before_acquire(self) -> None:
        lease = seqd.Client().lock("a")
        with self.assertRaises(RuntimeError):
            lease.token
        self.assertFalse(lease.held)
        self.assertFalse(lease.lost.is_set())
        self.assertFalse(lease.release())


class PackagingTest(unittest.TestCase):
    def test_sources_parse_as_python_3_9(self) -> None:
        for path in sorted(PACKAGE.glob("*.py")):
            with self.subTest(path=path.name):
                ast.parse(path.read_text(), filename=str(path), feature_version=(3, 9))

    @unittest.skipUnless(importlib.util.find_spec("pip"), "pip is not installed")
    def test_pip_installs_it_without_an_index(self) -> None:
        with tempfile.TemporaryDirectory() as target:
            r = subprocess.run(
                [sys.executable, "-m", "pip", "install", "--no-index", "--quiet", "--target", target, str(PACKAGE.parent)],
                capture_output=True, text=True, timeout=120,
            )
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertLessEqual({"__init__.py", "lease.py", "py.typed"}, set(os.listdir(os.path.join(target, "seqd"))))
            r = subprocess.run(
                [sys.executable, "-c", "import seqd; print(seqd.__version__, seqd.__file__)"],
                capture_output=True, text=True, timeout=60, cwd=target, env={**os.environ, "PYTHONPATH": target},
            )
            self.assertEqual(r.returncode, 0, r.stderr)
            version, path = r.stdout.split()
            self.assertEqual(version, seqd.__version__)
            self.assertTrue(path.startswith(target), path)

    def test_version_matches_pyproject(self) -> None:
        text = (PACKAGE.parent / "pyproject.toml").read_text()
        self.assertIn(f'version = "{seqd.__version__}"', text)


if __name__ == "__main__":
    unittest.main()
