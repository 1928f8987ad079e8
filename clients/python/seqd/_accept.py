"""What the client accepts as a lease: the rules every seqd client applies
to a grant or a renewal before it trusts it (docs/clients.md)."""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from ._durations import parse_go_duration
from .errors import SeqdError

MAX_TOKEN = (1 << 64) - 1
"""The largest token: tokens are unsigned 64-bit integers, from 1."""

_LEASE_ID = re.compile(r"[0-9a-f]{32}\Z")


def lease_problem(doc: Dict[str, Any], name: str, lease_id: Optional[str] = None, token: Optional[int] = None) -> Optional[str]:
    """What is wrong with a lease the daemon answered for ``name``, or
    ``None`` if nothing is. ``lease_id`` is the one the request sent (the
    answer must carry it); ``token`` the lease's token on a renewal (it
    never changes). The lease ids are never quoted: they are secrets."""
    n = doc.get("name")
    if not isinstance(n, str):
        return "the lease has no name"
    if n != name:
        return f"the lease is for the name {n!r}, not the requested {name!r}"
    t = doc.get("token")
    if t is None:
        return "the lease has no token"
    if isinstance(t, bool) or not isinstance(t, int):
        return f"the token {t!r} is not a base-10 integer"
    if not 1 <= t <= MAX_TOKEN:
        return f"the token {t} is out of the range 1..2^64-1"
    if token is not None and t != token:
        return f"the token changed from {token} to {t}: a lease's token never changes"
    lid = doc.get("lease_id")
    if not isinstance(lid, str) or not _LEASE_ID.match(lid):
        return "the lease id is not 32 lowercase hex digits"
    if lease_id is not None and lid != lease_id:
        return "the lease id is not the one the request sent"
    if not isinstance(doc.get("sequencer"), str):
        return "the lease has no sequencer"
    ttl = doc.get("ttl")
    try:
        ok = isinstance(ttl, str) and parse_go_duration(ttl) > 0
    except SeqdError:
        ok = False
    if not ok:
        return f"the ttl {ttl!r} is not a positive duration"
    return None


def multi_lease_problem(doc: Dict[str, Any], names: List[str], lease_id: str, tokens: Optional[List[int]] = None) -> Optional[str]:
    """:func:`lease_problem` for a multi-lock lease: one lock per name asked
    for, in that order, each with a token in range; on a renewal
    (``tokens``), each lock's token unchanged."""
    lid = doc.get("lease_id")
    if not isinstance(lid, str) or not _LEASE_ID.match(lid):
        return "the lease id is not 32 lowercase hex digits"
    if lid != lease_id:
        return "the lease id is not the one the request sent"
    locks = doc.get("locks")
    if not isinstance(locks, list) or len(locks) != len(names):
        return f"the lease does not list the {len(names)} locks asked for"
    for i, (lk, name) in enumerate(zip(locks, names)):
        if not isinstance(lk, dict) or lk.get("name") != name:
            got = lk.get("name") if isinstance(lk, dict) else lk
            return f"lock {i} of the lease is {got!r}, not the requested {name!r}"
        t = lk.get("token")
        if isinstance(t, bool) or not isinstance(t, int):
            return f"the token {t!r} of {name!r} is not a base-10 integer"
        if not 1 <= t <= MAX_TOKEN:
            return f"the token {t} of {name!r} is out of the range 1..2^64-1"
        if tokens is not None and t != tokens[i]:
            return f"the token of {name!r} changed from {tokens[i]} to {t}: a lease's token never changes"
        if not isinstance(lk.get("sequencer"), str):
            return f"the lock {name!r} has no sequencer"
    ttl = doc.get("ttl")
    try:
        ok = isinstance(ttl, str) and parse_go_duration(ttl) > 0
    except SeqdError:
        ok = False
    if not ok:
        return f"the ttl {ttl!r} is not a positive duration"
    return None
