"""Fenced Redis commands with redis-py: one Lua script compares the token
with the key's max and, if it is not below it, runs your command and raises
the max, atomically (Redis runs a script with nothing in between).

The max lives in a Redis key of its own (the fence key, which you name) as
20 zero-padded digits: Lua's numbers are doubles, exact only up to 2**53,
so the script compares tokens as strings of equal length, which compares
the 64-bit numbers exactly. The Go, Java and JavaScript helpers run the
same script.

What a restart keeps: the max survives a crash only with AOF on and
``appendfsync always``. With ``everysec`` a crash can lose the last second
of writes, the max's included, so an old holder's write may be admitted
again after a crash; with RDB snapshots only, everything since the last
snapshot; with neither, everything. :class:`Fence` refuses to start on a
Redis that reports no AOF (``require_aof=False`` makes it a warning) and
warns when ``appendfsync`` is not ``always``.

This module imports no driver: it works on the redis-py client you pass.
"""

from __future__ import annotations

import time
import warnings
from typing import Any, Sequence, Tuple

from . import StaleTokenError, _check_token

__all__ = ["SCRIPT", "Fence", "PersistenceError"]

#: The fence script, the same text as the Go, Java and JavaScript helpers'.
#: KEYS[1] is the fence key, ARGV[1] the token as 20 zero-padded digits;
#: ARGV[2], if given, a command, with KEYS[2..] its keys (first) and
#: ARGV[3..] its other arguments. It answers {1, the command's reply} when
#: admitted and {0, the max} when refused.
SCRIPT = """
local max = redis.call('GET', KEYS[1])
if max then
  if string.len(max) ~= 20 or not string.match(max, '^%d+$') then
    return redis.error_reply('seqd fence: ' .. KEYS[1] .. ' holds no fence max')
  end
  if max > ARGV[1] then
    return {0, max}
  end
end
if max ~= ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1])
end
if #ARGV < 2 then
  return {1}
end
local args = {ARGV[2]}
for i = 2, #KEYS do args[#args + 1] = KEYS[i] end
for i = 3, #ARGV do args[#args + 1] = ARGV[i] end
return {1, redis.call(unpack(args))}
"""


class PersistenceError(RuntimeError):
    """Redis reports no AOF: a restart would forget every max."""


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


class Fence:
    """Fenced commands on one redis-py client (``redis.Redis``; a cluster
    client works if each command's keys share the fence key's hash slot,
    e.g. ``{orders}`` and ``fence:{orders}``)::

        fence = Fence(redis.Redis(port=6379))
        fence.call("fence:orders", token, "HSET", keys=["orders"], args=["42", "shipped"])
        fence.call("fence:orders", token, "HGET", keys=["orders"], args=["42"])  # a fenced read
    """

    def __init__(self, client: Any, *, require_aof: bool = True) -> None:
        self.client = client
        self._script = client.register_script(SCRIPT)
        self.check_persistence(require_aof)

    def check_persistence(self, require_aof: bool = True) -> None:
        """Raises :class:`PersistenceError` (or, with ``require_aof=False``,
        warns) if Redis reports no AOF; warns if appendfsync is not
        ``always``."""
        aof, fsync = self._persistence()
        if not aof:
            msg = "Redis runs without the append-only file (appendonly no): a restart forgets every fence's max and lets stale holders in; set appendonly yes and appendfsync always"
            if require_aof:
                raise PersistenceError(msg)
            warnings.warn(msg, RuntimeWarning, stacklevel=3)
            return
        if fsync and fsync != "always":
            warnings.warn(
                f"Redis has appendfsync {fsync}: a crash can lose the last writes and the fence's max with them; set appendfsync always",
                RuntimeWarning,
                stacklevel=3,
            )

    def _persistence(self) -> Tuple[bool, str]:
        """(AOF on, appendfsync or "") from CONFIG GET, or, where CONFIG is
        refused, from INFO persistence."""
        try:
            cfg = {_text(k): _text(v) for k, v in self.client.config_get("append*").items()}
        except Exception:  # CONFIG may be renamed or refused
            cfg = {}
        if cfg.get("appendonly"):
            return cfg["appendonly"] == "yes", cfg.get("appendfsync", "")
        info = self.client.info("persistence")
        # While Redis loads its data at start it reports AOF off (it turns
        # AOF off while replaying the file): wait for the load, 30s at most.
        deadline = time.monotonic() + 30
        while str(info.get("loading", 0)) == "1" and time.monotonic() < deadline:
            time.sleep(0.05)
            info = self.client.info("persistence")
        return str(info.get("aof_enabled", 0)) == "1", ""

    def call(self, fence_key: str, token: int, command: str = "", keys: Sequence[str] = (), args: Sequence[Any] = ()) -> Any:
        """Runs ``command`` with its ``keys`` (first) and ``args`` if
        ``token`` is not below the max kept in the Redis key ``fence_key``,
        and raises that max to it, atomically; returns the command's reply::

            fence.call("fence:orders", token, "HSET", keys=["orders"], args=["42", "shipped"])

        Raises :class:`~seqd.fence.StaleTokenError` and runs nothing if a
        higher token was used. With no command, only the max moves. Only
        commands whose keys come first fit."""
        _check_token(token)
        if not command and (keys or args):
            raise ValueError("a command with keys or arguments and no name")
        argv = [f"{token:020d}"] + ([command, *args] if command else [])
        reply = self._script(keys=[fence_key, *keys], args=argv)
        if int(reply[0]) != 1:
            raise StaleTokenError(fence_key, token, int(_text(reply[1])) if len(reply) > 1 else 0)
        return reply[1] if len(reply) > 1 else None

    def admit(self, fence_key: str, token: int) -> None:
        """Raises the max in ``fence_key`` to ``token`` or raises StaleTokenError."""
        self.call(fence_key, token)

    def max(self, fence_key: str) -> int:
        """The max in ``fence_key``, 0 if no token was used yet."""
        v = self.client.get(fence_key)
        return int(_text(v)) if v is not None else 0
