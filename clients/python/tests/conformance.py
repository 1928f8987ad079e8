"""The conformance runner of the Python client: plays every vector of
clients/conformance/vectors.json against the hostile daemon that
clients/conformance_test.go starts (go test ./clients/ -run TestPythonConformance),
prints a table (vector, expected, observed) and writes one JSON result
per vector to $SEQD_CONFORMANCE_RESULTS. Exits 1 if any vector failed."""

from __future__ import annotations

import json
import logging
import os
import secrets
import sys
import threading
import time
import urllib.parse
import urllib.request
from typing import Any, Callable, Dict, List, Optional, Tuple

import seqd

ENV = os.environ
ADDR = ENV.get("SEQD_CONFORMANCE_ADDR", "")
TLS_ADDR = ENV.get("SEQD_CONFORMANCE_TLS_ADDR", "")
TOKEN_FILE = ENV.get("SEQD_CONFORMANCE_TOKEN_FILE", "")
SECRET = ENV.get("SEQD_CONFORMANCE_SECRET", "")
MARGIN = 5.0  # what a call may take beyond its wait

_mono = time.monotonic


class _Capture(logging.Handler):
    """Keeps every log line of the client, for the logs vector."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: List[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


LOGS = _Capture()
LOGS.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))


def client(tls: bool = False) -> seqd.Client:
    return seqd.Client(TLS_ADDR if tls else ADDR, api_token_file=TOKEN_FILE, cacert="", cert="", key="", owner="conformance")


def stats(name: str) -> Dict[str, int]:
    with urllib.request.urlopen(ADDR + "/conformance/stats?" + urllib.parse.urlencode({"name": name}), timeout=5) as r:
        return json.loads(r.read())


def duration(s: str) -> float:
    return seqd.parse_go_duration(s) / 1e9


def shown(*texts: str) -> bool:
    return any(SECRET in t for t in texts)


def expected_text(v: Dict[str, Any]) -> str:
    e = v["expect"]
    parts = [e["result"]]
    for k in ("token", "reason", "quotes"):
        if k in e:
            parts.append(f"{k}={e[k]!r}" if k != "token" else f"token={e[k]}")
    if "within" in e:
        parts.append(f"within {e['within']}s")
    if "for" in e:
        parts.append(f"for {e['for']}s")
    return " ".join(parts)


def check_error(v: Dict[str, Any], c: Any, err: BaseException, took: float) -> Tuple[bool, str]:
    """Whether a failed call failed as the vector wants."""
    e = v["expect"]
    msg = str(err)
    observed = f"{type(err).__name__} after {took:.2f}s: {msg[:150]}"
    if e["result"] not in ("protocol_error", "error"):
        return False, observed
    within = e.get("within", duration(v.get("wait", "0s")) + MARGIN)
    ok = took <= within and not shown(msg, repr(err))
    if e["result"] == "protocol_error":
        proto = getattr(seqd, "ProtocolError", None)
        host = urllib.parse.urlsplit(c.addr).netloc
        ok = ok and proto is not None and isinstance(err, proto) and host in msg
        if "quotes" in e:
            ok = ok and e["quotes"] in msg
    if "reason" in e:
        ok = ok and e["reason"].lower() in msg.lower()
    if shown(msg, repr(err)):
        observed += " [shows the API token]"
    return ok, observed


def run_acquire(v: Dict[str, Any]) -> Tuple[bool, str]:
    e = v["expect"]
    name = "conformance/" + v["id"]
    c = client(v.get("tls", False))
    start = _mono()
    try:
        info = c.acquire(name, ttl="15s", wait=v.get("wait", "0s"), lease_id=secrets.token_hex(16))
    except seqd.SeqdError as err:
        return check_error(v, c, err, _mono() - start)
    took = _mono() - start
    observed = f"grant token={info.token} after {took:.2f}s"
    return e["result"] == "grant" and str(info.token) == e.get("token"), observed


def run_hold(v: Dict[str, Any]) -> Tuple[bool, str]:
    e = v["expect"]
    name = "conformance/" + v["id"]
    c = client()
    lease = c.lock(name, ttl=v.get("ttl", "1s"), watch=False)
    start = _mono()
    try:
        lease.acquire()
    except seqd.SeqdError as err:
        took = _mono() - start
        if e["result"] == "lost":
            # A slow grant makes the helper renew at once, before handing
            # the lease out: refusing it then is as good as losing it.
            msg = str(err)
            ok = took <= e["within"] + duration(v.get("ttl", "1s")) and e.get("reason", "").lower() in msg.lower() and not shown(msg)
            return ok, f"lock() refused it at its first renewal, after {took:.2f}s: {msg[:150]}"
        ok, observed = check_error(v, c, err, took)
        return ok, "lock(): " + observed
    if e["result"] in ("protocol_error", "error"):
        lease.release()
        return False, f"lock() held it, token={lease.info.token if lease.info else None}"
    t0 = _mono()
    try:
        if e["result"] == "held":
            time.sleep(e["for"])
            n = stats(name)["renews"]
            lost = lease.lost.is_set()
            observed = f"{'lost' if lost else 'held'} after {e['for']}s, {n} renewals answered"
            return (not lost) and n >= 2, observed
        ttl = duration(v.get("ttl", "1s"))
        bound = e["within"] + ttl + 2.0
        got = lease.lost.wait(timeout=bound)
        took = _mono() - t0
        if not got:
            return False, f"lost.wait() returned no loss after {took:.2f}s (held={lease.held})"
        # The loss is final: a late answer must not bring the lease back.
        time.sleep(0.05)
        reason = str(lease.lost_error)
        observed = f"lost after {took:.2f}s: {reason[:150]}"
        ok = took <= e["within"] and lease.lost.is_set() and not lease.held
        if "reason" in e:
            ok = ok and e["reason"].lower() in reason.lower()
        if shown(reason):
            observed += " [shows the API token]"
            ok = False
        return ok, observed
    finally:
        lease.release()
        c.close()


def run_keepalive(v: Dict[str, Any]) -> Tuple[bool, str]:
    e = v["expect"]
    name = "conformance/" + v["id"]
    c = client()
    with c.lock(name, ttl=v.get("ttl", "1s"), watch=False):
        time.sleep(e["for"])
    s = stats(name)
    observed = f"{s['posts']} requests on {s['connections']} connection(s)"
    return s["posts"] >= 4 and s["connections"] == 1, observed


def run_print(v: Dict[str, Any]) -> Tuple[bool, str]:
    c = client()
    texts = [repr(c), str(c)]
    with c.lock("conformance/" + v["id"], ttl="15s", watch=False) as lease:
        texts += [repr(lease), str(lease), repr(lease.info), str(lease.info)]
    try:
        c.acquire("conformance/grant-echo-token", lease_id=secrets.token_hex(16))
    except seqd.SeqdError as err:
        texts += [repr(err), str(err)]
    try:
        c.acquire("conformance/grant-401-echo-token", lease_id=secrets.token_hex(16))
    except seqd.SeqdError as err:
        texts += [repr(err), str(err)]
    bad = [t[:80] for t in texts if SECRET in t]
    return not bad, f"{len(texts)} printouts, {len(bad)} show the API token" + (f": {bad[0]}" if bad else "")


def run_logs(v: Dict[str, Any]) -> Tuple[bool, str]:
    bad = [l for l in LOGS.lines if SECRET in l]
    return not bad, f"{len(LOGS.lines)} log lines, {len(bad)} show the API token" + (f": {bad[0][:80]}" if bad else "")


# How long a vector may run before it is failed as hung (its thread is left).
GUARD = 20.0


def guarded(v: Dict[str, Any], ops: Dict[str, Callable[[Dict[str, Any]], Tuple[bool, str]]]) -> Tuple[bool, str]:
    """Plays a vector in a thread of its own, so that a client that never
    returns fails that vector and not the whole run."""
    box: List[Tuple[bool, str]] = []

    def play() -> None:
        try:
            box.append(ops[v["op"]](v))
        except Exception as err:  # a runner that cannot play a vector fails it
            box.append((False, f"runner error {type(err).__name__}: {err}"))

    t = threading.Thread(target=play, name="vector " + v["id"], daemon=True)
    t.start()
    t.join(GUARD)
    if not box:
        return False, f"no return after {GUARD:.0f}s"
    return box[0]


Op = Callable[[Dict[str, Any]], Tuple[bool, str]]
OPS: Dict[str, Op] = {"acquire": run_acquire, "hold": run_hold, "keepalive": run_keepalive, "print": run_print, "logs": run_logs}


def main(ops: Optional[Dict[str, Callable[[Dict[str, Any]], Tuple[bool, str]]]] = None, label: str = "python client") -> int:
    play = OPS if ops is None else ops
    if not (ADDR and TOKEN_FILE and SECRET):
        print("needs the hostile daemon of clients/conformance_test.go (go test ./clients/ -run TestPythonConformance)", file=sys.stderr)
        return 2
    log = logging.getLogger("seqd")
    log.setLevel(logging.DEBUG)
    log.addHandler(LOGS)
    with open(ENV["SEQD_CONFORMANCE_VECTORS"], encoding="utf-8") as f:
        vectors = json.load(f)["vectors"]
    only = {x for x in ENV.get("SEQD_CONFORMANCE_ONLY", "").split(",") if x}
    rows = []
    failed = 0
    with open(ENV["SEQD_CONFORMANCE_RESULTS"], "w", encoding="utf-8") as out:
        for v in vectors:
            if only and v["id"] not in only:
                continue
            ok, observed = guarded(v, play)
            failed += not ok
            row = {"id": v["id"], "expected": expected_text(v), "observed": observed, "pass": ok}
            out.write(json.dumps(row) + "\n")
            out.flush()
            rows.append(row)
            print(f"{'PASS' if ok else 'FAIL'}  {v['id']:<26} want {row['expected']:<40} got {observed}", flush=True)
    print(f"{label}: {len(rows) - failed}/{len(rows)} vectors pass")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
