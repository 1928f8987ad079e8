"""What the fence suites share: the databases and the control server of
clients/fences_test.go, the shared cases (fence/testdata/dbcases.json) and
the loop that runs them against one database, with the fence and under the
"none" control (no fence)."""

from __future__ import annotations

import json
import os
import sys
import threading
import urllib.request
import uuid
from typing import Callable, Dict, List, Optional, Sequence

from seqd.fence import InvalidSequencerError, StaleTokenError, parse_token


def env(name: str) -> str:
    """A variable the Go harness sets; a suite run without it fails."""
    v = os.environ.get(name, "")
    if not v:
        raise AssertionError(f"{name} is not set: run these tests with go test ./clients/ -run TestPythonFences")
    return v


def database(prefix: str) -> Dict[str, str]:
    """HOST, PORT, USER, PASSWORD, DATABASE of one of the harness's servers."""
    env(f"{prefix}_HOST")
    return {k: os.environ.get(f"{prefix}_{k}", "") for k in ("HOST", "PORT", "USER", "PASSWORD", "DATABASE")}


def restart(db: str) -> None:
    """Kill the database server with SIGKILL and start it again (the harness does)."""
    req = urllib.request.Request(env("SEQD_TEST_FENCE_CONTROL") + "/restart?db=" + db, data=b"", method="POST")
    with urllib.request.urlopen(req, timeout=120) as resp:
        resp.read()


def load_cases() -> dict:
    with open(env("SEQD_TEST_FENCE_CASES"), encoding="utf-8") as f:
        cases = json.load(f)
    if cases.get("schema") != 1:
        raise AssertionError(f"cases schema {cases.get('schema')}, want 1")
    return cases


def run_id() -> str:
    return f"py-{uuid.uuid4().hex[:10]}"


def report(line: str) -> None:
    """A line the Go harness reads (FENCECASE …, MEASURED …)."""
    sys.stderr.write(f"\n{line}\n")
    sys.stderr.flush()


class Store:
    """One database through a fence (or, under a control, without one). The
    runner gives tokens as the case's strings; a fenced store parses them.
    write and read return "ok", "stale" or "invalid"."""

    control = ""

    def write(self, key: str, token: str, value: str) -> str:
        raise NotImplementedError

    def read(self, key: str, token: str):
        """(outcome, value or None)."""
        raise NotImplementedError

    def delete(self, key: str, token: str) -> str:
        """Deletes key's row in a fenced transaction: "ok", or "kept" when
        the fence refused because the row holds the key's max."""
        raise NotImplementedError

    def value(self, key: str) -> Optional[str]:
        raise NotImplementedError

    def max(self, key: str) -> int:
        raise NotImplementedError

    def writer(self) -> "Store":
        """A store on a connection of its own, for a racing writer."""
        raise NotImplementedError

    def reconnect(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass


def fenced(fn: Callable[[int], object], token: str, control: str):
    """Runs fn(token) and says how it went: ok, stale or invalid."""
    if control == "none":
        return "ok", fn(0)
    try:
        t = parse_token(token)
    except InvalidSequencerError:
        return "invalid", None
    try:
        return "ok", fn(t)
    except StaleTokenError:
        return "stale", None


def run_case(case: dict, store: Store, db: str, prefix: str) -> Optional[str]:
    """Runs one case; returns the first expectation not met, or None."""
    for i, st in enumerate(case["steps"]):
        key = prefix + st.get("key", "k")
        op = st["op"]
        if op == "write":
            got = store.write(key, st["token"], st["value"])
            if got != st["expect"]:
                return f"step {i}: write {key} with token {st['token']!r}: {got}, want {st['expect']}"
        elif op == "read":
            got, v = store.read(key, st["token"])
            if got != st["expect"]:
                return f"step {i}: read {key} with token {st['token']!r}: {got}, want {st['expect']}"
            if got == "ok" and v != st.get("value"):
                return f"step {i}: read {key}: {v!r}, want {st.get('value')!r}"
        elif op == "value":
            v = store.value(key)
            if v != st["value"]:
                return f"step {i}: {key} holds {v!r}, want {st['value']!r}"
        elif op == "max":
            if store.control:
                continue
            m = store.max(key)
            if m != int(st["token"]):
                return f"step {i}: max of {key} is {m}, want {st['token']}"
        elif op == "delete":
            got = store.delete(key, st["token"])
            if got not in ("ok", "kept"):
                return f"step {i}: delete {key} with token {st['token']!r}: {got}"
        elif op == "restart":
            restart(db)
            store.reconnect()
        elif op == "race":
            err = race(store, key, st)
            if err:
                return f"step {i}: {err}"
        else:
            return f"step {i}: unknown op {op!r}"
    return None


def race(store: Store, key: str, st: dict) -> Optional[str]:
    writers, rounds, first = st["writers"], st["rounds"], int(st["first_token"])
    conns = [store.writer() for _ in range(writers)]
    try:
        for r in range(rounds):
            results: List[str] = [""] * writers

            def write(i: int, tok: int) -> None:
                try:
                    results[i] = conns[i].write(key, str(tok), f"race-{tok}")
                except Exception as e:  # a deadlock victim, a serialization failure: it did not land
                    results[i] = f"error {e}"

            threads = []
            for i in reversed(range(writers)):
                th = threading.Thread(target=write, args=(i, first + r * writers + i))
                th.start()
                threads.append(th)
            for th in threads:
                th.join()
            top = first + r * writers + writers - 1
            if results[-1] != "ok":
                return f"race round {r}: the writer of the highest token {top} got {results[-1]}"
            v = store.value(key)
            if v != f"race-{top}":
                return f"race round {r}: {key} holds {v!r}, want 'race-{top}' (results {results})"
    finally:
        for c in conns:
            c.close()
    return None


def run_all(
    test, make_store: Callable[[str], Store], db: str, recipes: Sequence[str] = ("fence",), controls: Sequence[str] = ("none",)
) -> None:
    """Runs every case with each recipe ("fence": the fence table,
    "column": the token in the data's own row), then under each control
    ("none": no fence), as subtests of test, and reports each result for
    the harness's table. A recipe failing a case, or a control passing a
    case it must fail, fails the test."""
    cases = load_cases()
    rid = run_id()
    for mode in (*recipes, *controls):
        store = make_store(mode)
        try:
            for case in cases["cases"]:
                name = case["name"]
                with test.subTest(case=name, mode=mode):
                    err = run_case(case, store, db, f"{rid}/{mode}/{name}/")
                    report(f"FENCECASE python {db} {name} {mode} {'pass' if err is None else 'fail'} {err or ''}")
                    if mode in recipes and err is not None:
                        test.fail(f"{db}: case {name} ({mode}): {err}")
                    if mode not in recipes and err is None and mode in case.get("fails_under", []):
                        test.fail(f"{db}: control {mode} passes case {name}, which it must fail")
        finally:
            store.close()
