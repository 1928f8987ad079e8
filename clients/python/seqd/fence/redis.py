"""Fenced Redis commands with redis-py: one Lua script compares the token
with the key's max and, if it is not below it, runs your command and raises
the max, atomically (Redis runs a script with nothing in between).

The script is the file the Go, Java and JavaScript helpers run too
(``fence/redisfence/fence.lua`` in seqd's repository, shipped in this
package as ``seqd/fence/fence.lua``). The max lives in a Redis key of its
own, :data:`PREFIX` followed by the fence key you name, as 20 zero-padded
digits: Lua's numbers are doubles, exact only up to 2**53, so the script
compares tokens as strings of equal length, which compares the 64-bit
numbers exactly. It refuses (:class:`RefusedCommandError`) a command that
names a key under :data:`PREFIX` (as ``COMMAND GETKEYS`` reads it), a write
that names no key (FLUSHDB, FLUSHALL, SWAPDB) and a script: any of them
could reset a max. It clears any TTL a fence key was given.

What a restart keeps: the max survives a crash only with AOF on and
``appendfsync always``. With ``everysec`` a crash can lose the last second
of writes, the max's included, so an old holder's write may be admitted
again after a crash; with RDB snapshots only, everything since the last
snapshot; with neither, everything. A ``maxmemory-policy`` of
``allkeys-*`` lets Redis evict a fence key, which forgets its max just as
surely. :class:`Fence` refuses to start on a Redis that reports no AOF
(``require_aof=False`` makes it a warning) or an ``allkeys-*`` policy, and
warns when ``appendfsync`` is not ``always``; it reads both settings again
every :data:`RECHECK_SECONDS` (on its ``clock``) before it admits, and
refuses (:class:`PersistenceError`) while either is unsafe.

This module imports no driver: it works on the redis-py client you pass.
"""

from __future__ import annotations

import os
import time
import warnings
from typing import Any, Callable, Optional, Sequence, Tuple

from . import StaleTokenError, _check_token

__all__ = ["PREFIX", "RECHECK_SECONDS", "SCRIPT", "Fence", "PersistenceError", "RefusedCommandError"]


def _load_script() -> str:
    """The script shipped in the package, or, in seqd's source tree, the
    one file it is built from."""
    here = os.path.dirname(os.path.abspath(__file__))
    for path in (os.path.join(here, "fence.lua"), os.path.join(here, "..", "..", "..", "..", "fence", "redisfence", "fence.lua")):
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                return f.read()
    raise ImportError("seqd.fence.redis: the fence script fence.lua is missing from the package")


#: The fence script. KEYS[1] is the fence key (under PREFIX), ARGV[1] the
#: token as 20 zero-padded digits; ARGV[2], if given, a command, with
#: KEYS[2..] its keys (first) and ARGV[3..] its other arguments. It answers
#: {1, the command's reply} when admitted, {0, the max} when refused as
#: stale and {2, a sentence} when the command is refused.
SCRIPT = _load_script()

#: The prefix of every fence key; the script refuses commands that name a
#: key under it.
PREFIX = "seqd:fence:"

#: How often a Fence reads Redis's persistence and eviction settings again:
#: a setting changed at run time is seen within this long.
RECHECK_SECONDS = 10.0


class PersistenceError(RuntimeError):
    """Redis reports no AOF, or an eviction policy that can evict a fence
    key: a restart or an eviction would forget maxes."""


class RefusedCommandError(ValueError):
    """The script refused the fenced command, which could have reset a max
    (it names a fence key, writes without naming a key, or is a script)."""


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


class Fence:
    """Fenced commands on one redis-py client (``redis.Redis``; a cluster
    client works if each command's keys share the fence key's hash slot,
    e.g. ``{orders}`` and the fence key ``{orders}``)::

        fence = Fence(redis.Redis(port=6379))
        fence.call("orders", token, "HSET", keys=["orders"], args=["42", "shipped"])
        fence.call("orders", token, "HGET", keys=["orders"], args=["42"])  # a fenced read

    ``clock`` (seconds, ``time.monotonic`` by default) and ``recheck``
    time the rereads of Redis's settings."""

    def __init__(
        self, client: Any, *, require_aof: bool = True, recheck: float = RECHECK_SECONDS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.client = client
        self._script = client.register_script(SCRIPT)
        self._require_aof = require_aof
        self._recheck = recheck
        self._clock = clock
        self._checked_at = 0.0
        self._unsafe: Optional[str] = None
        self.check_persistence(require_aof)

    def check_persistence(self, require_aof: bool = True) -> None:
        """Raises :class:`PersistenceError` if Redis's eviction policy can
        evict a fence key, or if it reports no AOF (with
        ``require_aof=False``, warns instead); warns if appendfsync is not
        ``always``."""
        self._unsafe = self._check(require_aof, warn=True)
        if self._unsafe:
            raise PersistenceError(self._unsafe)

    def _check(self, require_aof: bool, warn: bool) -> Optional[str]:
        aof, fsync, policy = self._settings()
        self._checked_at = self._clock()
        if policy.startswith("allkeys-"):
            return (
                f"Redis's maxmemory-policy is {policy}, which can evict keys without a TTL: an evicted fence key forgets its max "
                "and lets stale holders in; set maxmemory-policy noeviction or a volatile-* policy"
            )
        if not aof:
            msg = "Redis runs without the append-only file (appendonly no): a restart forgets every fence's max and lets stale holders in; set appendonly yes and appendfsync always"
            if require_aof:
                return msg
            if warn:
                warnings.warn(msg, RuntimeWarning, stacklevel=4)
        elif warn and fsync and fsync != "always":
            warnings.warn(
                f"Redis has appendfsync {fsync}: a crash can lose the last writes and the fence's max with them; set appendfsync always",
                RuntimeWarning,
                stacklevel=4,
            )
        return None

    def recheck(self) -> None:
        """Reads Redis's settings again now (a call does it by itself once
        ``recheck`` seconds have passed); raises :class:`PersistenceError`
        while they are unsafe."""
        self._unsafe = self._check(self._require_aof, warn=False)
        if self._unsafe:
            raise PersistenceError(self._unsafe)

    def _safe(self) -> None:
        if self._unsafe is None and self._clock() - self._checked_at < self._recheck:
            return
        self.recheck()

    def _settings(self) -> Tuple[bool, str, str]:
        """(AOF on, appendfsync or "", maxmemory-policy) from CONFIG GET, or,
        where CONFIG is refused, from INFO."""
        try:
            cfg = {_text(k): _text(v) for k, v in self.client.config_get("append*").items()}
            cfg.update({_text(k): _text(v) for k, v in self.client.config_get("maxmemory-policy").items()})
        except Exception:  # CONFIG may be renamed or refused
            cfg = {}
        if cfg.get("appendonly") and cfg.get("maxmemory-policy"):
            return cfg["appendonly"] == "yes", cfg.get("appendfsync", ""), cfg["maxmemory-policy"]
        info = self.client.info("persistence")
        # While Redis loads its data at start it reports AOF off (it turns
        # AOF off while replaying the file): wait for the load, 30s at most.
        deadline = time.monotonic() + 30
        while str(info.get("loading", 0)) == "1" and time.monotonic() < deadline:
            time.sleep(0.05)
            info = self.client.info("persistence")
        policy = _text(self.client.info("memory").get("maxmemory_policy", ""))
        return str(info.get("aof_enabled", 0)) == "1", "", policy

    def call(self, fence_key: str, token: int, command: str = "", keys: Sequence[str] = (), args: Sequence[Any] = ()) -> Any:
        """Runs ``command`` with its ``keys`` (first) and ``args`` if
        ``token`` is not below the max kept for ``fence_key`` (in the Redis
        key PREFIX + fence_key), and raises that max to it, atomically;
        returns the command's reply::

            fence.call("orders", token, "HSET", keys=["orders"], args=["42", "shipped"])

        Raises :class:`~seqd.fence.StaleTokenError` and runs nothing if a
        higher token was used, :class:`RefusedCommandError` if the command
        could reset a max, :class:`PersistenceError` if Redis's settings
        became unsafe. With no command, only the max moves. Only commands
        whose keys come first fit."""
        _check_token(token)
        if not command and (keys or args):
            raise ValueError("a command with keys or arguments and no name")
        self._safe()
        argv = [f"{token:020d}"] + ([command, *args] if command else [])
        reply = self._script(keys=[PREFIX + fence_key, *keys], args=argv)
        code = int(reply[0])
        if code == 1:
            return reply[1] if len(reply) > 1 else None
        if code == 2:
            raise RefusedCommandError(_text(reply[1]))
        raise StaleTokenError(fence_key, token, int(_text(reply[1])) if len(reply) > 1 else 0)

    def admit(self, fence_key: str, token: int) -> None:
        """Raises the max of ``fence_key`` to ``token`` or raises StaleTokenError."""
        self.call(fence_key, token)

    def max(self, fence_key: str) -> int:
        """The max of ``fence_key``, 0 if no token was used yet."""
        v = self.client.get(PREFIX + fence_key)
        return int(_text(v)) if v is not None else 0
