"""The Redis cases (fence/testdata/rediscases.json) with redis-py, one at a
time on the harness's Redis of their own: the fence on a fake clock, and
the unguarded control (the script before its guards, no check of Redis's
settings), which must fail every case that names it."""

from __future__ import annotations

import json
import unittest
from typing import Any, Dict, List, Optional

import redis

from seqd.fence import InvalidSequencerError, StaleTokenError, parse_token
from seqd.fence import redis as redisfence

from .support import database, env, report

FENCE_KEY = redisfence.PREFIX + "k"
VALUE_KEY = "value:k"


def connect() -> Any:
    d = database("SEQD_TEST_REDIS_CASES")
    return redis.Redis(host=d["HOST"], port=int(d["PORT"]), db=int(d["DATABASE"] or 0), decode_responses=True)


def names(argv: List[str]) -> List[str]:
    return [a.replace("$fence", FENCE_KEY).replace("$value", VALUE_KEY) for a in argv]


class Run:
    """One run of a case: the fence, or the unguarded script."""

    def __init__(self, client: Any, unguarded: Optional[str]) -> None:
        self.client = client
        self.now = [1000.0]
        self.unguarded = client.register_script(unguarded) if unguarded else None
        self.fence: Optional[redisfence.Fence] = None

    def open(self) -> str:
        if self.unguarded:
            return "ok"
        try:
            self.fence = redisfence.Fence(self.client, clock=lambda: self.now[0])
        except redisfence.PersistenceError:
            return "unsafe"
        return "ok"

    def do(self, token: str, argv: List[str], keys: int) -> str:
        try:
            t = parse_token(token)
        except InvalidSequencerError:
            return "invalid"
        name, ks, rest = argv[0], argv[1 : 1 + keys], argv[1 + keys :]
        try:
            if self.unguarded:
                reply = self.unguarded(keys=[FENCE_KEY, *ks], args=[f"{t:020d}", name, *rest])
                return "ok" if int(reply[0]) == 1 else "stale"
            if self.fence is None:
                return "no fence: the last open was refused"
            self.fence.call("k", t, name, keys=ks, args=rest)
        except StaleTokenError:
            return "stale"
        except redisfence.RefusedCommandError:
            return "refused"
        except redisfence.PersistenceError:
            return "unsafe"
        except redis.RedisError as e:
            return f"error {e}"
        return "ok"


def evict(client: Any) -> Optional[str]:
    blob = "x" * (64 << 10)
    for i in range(4096):
        try:
            client.set(f"filler:{i}", blob)
        except redis.RedisError:
            pass  # an OOM refusal is an answer too
        if i % 8 == 7 and not client.exists(FENCE_KEY):
            return None
    return "256 MiB written and the fence key is still there"


def run_case(client: Any, case: dict, unguarded: Optional[str]) -> Optional[str]:
    client.flushall()
    restore: Dict[str, str] = {}
    r = Run(client, unguarded)
    try:
        if r.open() != "ok":
            return "open refused"
        for i, st in enumerate(case["steps"]):
            op = st["op"]
            if op in ("write", "command"):
                argv = ["SET", VALUE_KEY, st["value"]] if op == "write" else names(st["argv"])
                got = r.do(st["token"], argv, 1 if op == "write" else st["keys"])
                if got != st["expect"]:
                    return f"step {i}: {op} {argv} with token {st['token']}: {got}, want {st['expect']}"
            elif op == "value":
                v = client.get(VALUE_KEY)
                if v != st["value"]:
                    return f"step {i}: k holds {v!r}, want {st['value']!r}"
            elif op == "max":
                if unguarded:
                    continue
                assert r.fence is not None
                m = r.fence.max("k")
                if m != int(st["token"]):
                    return f"step {i}: max {m}, want {st['token']}"
            elif op == "raw":
                client.execute_command(*names(st["argv"]))
            elif op == "config":
                for k, v in st["set"].items():
                    restore.setdefault(k, client.config_get(k)[k])
                    client.config_set(k, v)
            elif op == "evict":
                err = evict(client)
                if err:
                    return f"step {i}: {err}"
            elif op == "recheck":
                r.now[0] += redisfence.RECHECK_SECONDS
            elif op == "open":
                got = r.open()
                if got != st["expect"]:
                    return f"step {i}: open: {got}, want {st['expect']}"
            elif op == "ttl":
                has = client.pttl(FENCE_KEY) > 0
                if has != st["has"]:
                    return f"step {i}: the fence key has a TTL: {has}, want {st['has']}"
            else:
                return f"step {i}: unknown op {op!r}"
        return None
    finally:
        for k, v in restore.items():
            client.config_set(k, v)


class RedisCasesTest(unittest.TestCase):
    def test_cases(self) -> None:
        with open(env("SEQD_TEST_FENCE_REDIS_CASES"), encoding="utf-8") as f:
            cases = json.load(f)
        with open(env("SEQD_TEST_FENCE_UNGUARDED"), encoding="utf-8") as f:
            unguarded = f.read()
        client = connect()
        try:
            for case in cases["cases"]:
                name = case["name"]
                for mode, script in (("fence", None), ("unguarded", unguarded)):
                    with self.subTest(case=name, mode=mode):
                        err = run_case(client, case, script)
                        report(f"FENCECASE python redis-cases {name} {mode} {'pass' if err is None else 'fail'} {err or ''}")
                        if mode == "fence" and err is not None:
                            self.fail(f"case {name}: {err}")
                        if mode == "unguarded" and err is None and "unguarded" in case.get("fails_under", []):
                            self.fail(f"the unguarded script passes case {name}, which it must fail")
        finally:
            client.close()


if __name__ == "__main__":
    unittest.main()
