"""The conformance runner of the asyncio client (seqd.aio): the vectors of
clients/conformance/vectors.json, played against the hostile daemon that
clients/conformance_test.go starts (go test ./clients/ -run
TestPythonAsyncConformance), with the same checks, table and results file
as tests/conformance.py, which plays them through the blocking client."""

from __future__ import annotations

import asyncio
import secrets
import sys
import time
from typing import Any, Dict, Tuple

import seqd
import seqd.aio

from . import conformance as base

_mono = time.monotonic


def client(tls: bool = False) -> seqd.aio.Client:
    return seqd.aio.Client(base.TLS_ADDR if tls else base.ADDR, api_token_file=base.TOKEN_FILE, cacert="", cert="", key="", owner="conformance")


async def _acquire(v: Dict[str, Any]) -> Tuple[bool, str]:
    e = v["expect"]
    c = client(v.get("tls", False))
    start = _mono()
    try:
        info = await c.acquire("conformance/" + v["id"], ttl="15s", wait=v.get("wait", "0s"), lease_id=secrets.token_hex(16))
    except seqd.SeqdError as err:
        return base.check_error(v, c, err, _mono() - start)
    finally:
        await c.aclose()
    took = _mono() - start
    return e["result"] == "grant" and str(info.token) == e.get("token"), f"grant token={info.token} after {took:.2f}s"


async def _hold(v: Dict[str, Any]) -> Tuple[bool, str]:
    e = v["expect"]
    name = "conformance/" + v["id"]
    c = client()
    lease = c.lock(name, ttl=v.get("ttl", "1s"), watch=False)
    start = _mono()
    try:
        await lease.acquire()
    except seqd.SeqdError as err:
        took = _mono() - start
        await c.aclose()
        if e["result"] == "lost":
            msg = str(err)
            ok = took <= e["within"] + base.duration(v.get("ttl", "1s")) and e.get("reason", "").lower() in msg.lower() and not base.shown(msg)
            return ok, f"lock() refused it at its first renewal, after {took:.2f}s: {msg[:150]}"
        ok, observed = base.check_error(v, c, err, took)
        return ok, "lock(): " + observed
    try:
        if e["result"] in ("protocol_error", "error"):
            return False, f"lock() held it, token={lease.info.token if lease.info else None}"
        t0 = _mono()
        if e["result"] == "held":
            await asyncio.sleep(e["for"])
            n = (await asyncio.get_running_loop().run_in_executor(None, base.stats, name))["renews"]
            lost = lease.lost.is_set()
            return (not lost) and n >= 2, f"{'lost' if lost else 'held'} after {e['for']}s, {n} renewals answered"
        bound = e["within"] + base.duration(v.get("ttl", "1s")) + 2.0
        try:
            await asyncio.wait_for(lease.lost.wait(), bound)
        except asyncio.TimeoutError:
            return False, f"lost.wait() returned no loss after {_mono() - t0:.2f}s (held={lease.held})"
        took = _mono() - t0
        await asyncio.sleep(0.05)  # the loss is final: a late answer must not bring the lease back
        reason = str(lease.lost_error)
        observed = f"lost after {took:.2f}s: {reason[:150]}"
        ok = took <= e["within"] and lease.lost.is_set() and not lease.held
        if "reason" in e:
            ok = ok and e["reason"].lower() in reason.lower()
        if base.shown(reason):
            observed += " [shows the API token]"
            ok = False
        return ok, observed
    finally:
        await lease.release()
        await c.aclose()


async def _keepalive(v: Dict[str, Any]) -> Tuple[bool, str]:
    e = v["expect"]
    name = "conformance/" + v["id"]
    async with client() as c:
        async with c.lock(name, ttl=v.get("ttl", "1s"), watch=False):
            await asyncio.sleep(e["for"])
    s = base.stats(name)
    return s["posts"] >= 4 and s["connections"] == 1, f"{s['posts']} requests on {s['connections']} connection(s)"


async def _print(v: Dict[str, Any]) -> Tuple[bool, str]:
    c = client()
    texts = [repr(c), str(c)]
    async with c.lock("conformance/" + v["id"], ttl="15s", watch=False) as lease:
        texts += [repr(lease), str(lease), repr(lease.info), str(lease.info)]
    for name in ("conformance/grant-echo-token", "conformance/grant-401-echo-token"):
        try:
            await c.acquire(name, lease_id=secrets.token_hex(16))
        except seqd.SeqdError as err:
            texts += [repr(err), str(err)]
    await c.aclose()
    bad = [t[:80] for t in texts if base.SECRET in t]
    return not bad, f"{len(texts)} printouts, {len(bad)} show the API token" + (f": {bad[0]}" if bad else "")


def _run(fn: Any) -> Any:
    return lambda v: asyncio.run(fn(v))


OPS = {"acquire": _run(_acquire), "hold": _run(_hold), "keepalive": _run(_keepalive), "print": _run(_print), "logs": base.run_logs}


if __name__ == "__main__":
    sys.exit(base.main(OPS, "python asyncio client"))
