"""Fenced Redis commands with redis-py: one Lua script compares the token
with the key's max and, if it is not below it, runs your command and raises
the max, atomically (Redis runs a script with nothing in between).

The max of key ``K`` lives in the Redis key ``seqd_fence:K`` (the prefix is
an option) as 20 zero-padded digits: Lua's numbers are doubles, exact only
up to 2**53, so the script compares tokens as strings of equal length,
which compares the 64-bit numbers exactly. The Go, Java and JavaScript
helpers use the same script and keys.

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

import warnings
from typing import Any, Sequence

from . import StaleTokenError, _check_token

__all__ = ["SCRIPT", "Fence", "PersistenceError"]

#: The fence script. KEYS[1] is the fence key, ARGV[1] the token padded to
#: 20 digits, ARGV[2..] the command to run if the token is admitted.
SCRIPT = """\
local tok = ARGV[1]
if #tok ~= 20 or not tok:match('^%d+$') then
  return redis.error_reply('seqd fence: the token must be 20 zero-padded digits')
end
local max = redis.call('GET', KEYS[1])
if max and max > tok then
  return {0, max}
end
local res = false
if #ARGV > 1 then
  res = redis.call(unpack(ARGV, 2))
end
if max ~= tok then
  redis.call('SET', KEYS[1], tok)
end
return {1, tok, res}
"""


class PersistenceError(RuntimeError):
    """Redis reports no AOF: a restart would forget every max."""


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


class Fence:
    """Fenced commands on one redis-py client (``redis.Redis``; a cluster
    client works if each command's keys share the fence key's hash slot,
    e.g. ``{orders}`` and ``seqd_fence:{orders}``)::

        fence = Fence(redis.Redis(port=6379))
        fence.call("orders", token, "HSET", "orders", "42", "shipped")
        fence.call("orders", token, "HGET", "orders", "42")  # a fenced read
    """

    def __init__(self, client, *, prefix: str = "seqd_fence:", require_aof: bool = True) -> None:
        self.client = client
        self.prefix = prefix
        self._script = client.register_script(SCRIPT)
        self.check_persistence(require_aof)

    def check_persistence(self, require_aof: bool = True) -> None:
        """Raises :class:`PersistenceError` (or, with ``require_aof=False``,
        warns) if Redis reports no AOF; warns if appendfsync is not
        ``always``."""
        info = self.client.info("persistence")
        if str(info.get("aof_enabled", 0)) != "1":
            msg = "Redis reports no AOF (aof_enabled:0): a restart forgets every fence's max; set appendonly yes and appendfsync always"
            if require_aof:
                raise PersistenceError(msg)
            warnings.warn(msg, RuntimeWarning, stacklevel=3)
            return
        try:
            fsync = self.client.config_get("appendfsync").get("appendfsync")
        except Exception:  # CONFIG may be renamed or refused: nothing to say
            return
        if fsync is not None and _text(fsync) != "always":
            warnings.warn(
                f"Redis has appendfsync {_text(fsync)}: a crash can lose the last writes and the fence's max with them; set appendfsync always",
                RuntimeWarning,
                stacklevel=3,
            )

    def call(self, key: str, token: int, *command: Any, keys: Sequence[str] = ()) -> Any:
        """Runs ``command`` (e.g. ``"SET", "k", "v"``) if ``token`` is not
        below ``key``'s max, and raises the max to it; returns the command's
        reply. Raises :class:`~seqd.fence.StaleTokenError` and runs nothing
        if a higher token was used. With no command, only the max moves.
        ``keys`` declares the keys the command touches (for a cluster)."""
        _check_token(token)
        reply = self._script(keys=[self.prefix + key, *keys], args=[f"{token:020d}", *command])
        if int(reply[0]) != 1:
            raise StaleTokenError(key, token, int(_text(reply[1])))
        return reply[2] if len(reply) > 2 else None

    def admit(self, key: str, token: int) -> None:
        """Raises ``key``'s max to ``token`` or raises StaleTokenError."""
        self.call(key, token)

    def max(self, key: str) -> int:
        """The key's max, 0 if no token was used yet."""
        v = self.client.get(self.prefix + key)
        return int(_text(v)) if v is not None else 0
