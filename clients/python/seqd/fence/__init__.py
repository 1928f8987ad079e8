"""seqd.fence: the resource side of fencing, for services written in Python.

A fencing token protects nothing until the resource refuses the stale one.
This package is that refusal, with the check and the write in one atomic
step inside the database that holds the data:

- :mod:`seqd.fence.postgres` (psycopg 3) and :mod:`seqd.fence.mysql`
  (PyMySQL, MariaDB and MySQL): a fenced transaction, or the token kept in
  a column of your own row;
- :mod:`seqd.fence.redis` (redis-py): one Lua script that compares and sets.

Each takes the connection or client you already have and imports no driver
itself. This module, with the standard library only, reads sequencers
(``[<kind>:]<name>@<token>``), checks that a sequencer is of the lock that
guards the data (:class:`Guard`), and verifies signed sequencers
(:class:`Verifier`, which needs the ``cryptography`` package).

A refused token raises :class:`StaleTokenError` (``key``, ``token``,
``max``). Reads must be fenced too: a fenced read raises the max, so that an
old holder's delayed write cannot land between a new holder's read and its
write.
"""

from __future__ import annotations

import base64
import re
import threading
from typing import Any, Dict, NamedTuple, Optional, Tuple

__all__ = [
    "BadSignatureError",
    "Guard",
    "InvalidSequencerError",
    "MAX_TOKEN",
    "Sequencer",
    "SequencerError",
    "StaleTokenError",
    "UnsignedError",
    "Verifier",
    "WrongLockError",
    "load_verify_keys",
    "parse_sequencer",
    "parse_token",
    "parse_verify_keys",
]

#: The highest token: tokens are unsigned 64-bit integers.
MAX_TOKEN = 2**64 - 1

KINDS = ("lock", "shared", "semaphore", "election")


class StaleTokenError(Exception):
    """A token below the highest one already used for ``key``: its holder
    lost the lock, and a newer holder (``max``) has acted since. Nothing was
    written."""

    def __init__(self, key: str, token: int, max: int) -> None:  # noqa: A002 - the field's name
        super().__init__(f"stale token {token} for {key!r}: a newer holder already used token {max}")
        self.key = key
        self.token = token
        self.max = max


class SequencerError(ValueError):
    """A sequencer refused before anything was written or any max moved."""


class InvalidSequencerError(SequencerError):
    """Not a sequencer: ``[<kind>:]<name>@<token>``, optionally signed."""


class UnsignedError(SequencerError):
    """A verifying resource was given a plain sequencer or a bare token."""


class BadSignatureError(SequencerError):
    """The signature does not check, or its key id is not a verifying key."""


class WrongLockError(SequencerError):
    """A sequencer of another lock, or of another kind of grant, than the one
    that guards the data."""


class Sequencer(NamedTuple):
    """One grant: its kind (``"lock"`` for an exclusive lock), its lock's
    (semaphore's, election's) name and its token."""

    kind: str
    name: str
    token: int

    def __str__(self) -> str:
        prefix = "" if self.kind == "lock" else self.kind + ":"
        return f"{prefix}{self.name}@{self.token}"


_TOKEN = re.compile(r"[1-9][0-9]{0,19}\Z")
_SEGMENT = re.compile(r"[A-Za-z0-9._-]+\Z")
_KID = re.compile(r"[A-Za-z0-9_-]{1,32}\Z")
_SIG_LEN = 86  # an Ed25519 signature in unpadded base64url
_CONTEXT = b"seqd-sequencer-v2:"


def parse_token(s: str) -> int:
    """A fencing token: base-10 digits, no sign, no leading zero, 1..2**64-1.

    The form is strict so that each token has one spelling."""
    if not isinstance(s, str) or not _TOKEN.match(s) or int(s) > MAX_TOKEN:
        raise InvalidSequencerError(f"token {str(s)[:24]!r} is not a base-10 integer in 1..{MAX_TOKEN} without a leading zero")
    return int(s)


def _check_name(name: str) -> None:
    if not name or len(name.encode()) > 256:
        raise InvalidSequencerError(f"the lock name {name[:40]!r} must be 1 to 256 bytes")
    for seg in name.split("/"):
        if seg in ("", ".", "..") or not _SEGMENT.match(seg):
            raise InvalidSequencerError(
                f"lock name {name!r} must be a relative path of [A-Za-z0-9._-] segments, without empty, '.' or '..' segments"
            )


def _split_signed(s: str) -> Tuple[str, str, str]:
    """(plain, kid, sig), kid and sig empty for a plain sequencer."""
    at = s.rfind("@")
    dot = s.find(".", at) if at >= 0 else -1
    if dot < 0:
        return s, "", ""
    plain, rest = s[:dot], s[dot + 1 :]
    kid, sep, sig = rest.partition(".")
    if not sep:
        raise InvalidSequencerError(f"{s[:300]!r}: a signed sequencer is [<kind>:]<name>@<token>.<kid>.<sig>")
    if not _KID.match(kid):
        raise InvalidSequencerError(f"key id {kid[:40]!r} must be 1 to 32 of [A-Za-z0-9_-]")
    if len(sig) != _SIG_LEN:
        raise InvalidSequencerError(f"the signature is {len(sig)} characters, not {_SIG_LEN}")
    return plain, kid, sig


def _parse_plain(s: str) -> Sequencer:
    at = s.rfind("@")
    if at < 0:
        raise InvalidSequencerError(f"{s[:300]!r} has no '@'; want [<kind>:]<name>@<token>")
    name, kind = s[:at], "lock"
    if ":" in name:
        kind, _, name = name.partition(":")
        if kind not in KINDS[1:]:
            raise InvalidSequencerError(
                f"unknown kind {kind[:40]!r}: want shared, semaphore or election (no prefix for an exclusive lock)"
            )
    _check_name(name)
    return Sequencer(kind, name, parse_token(s[at + 1 :]))


def parse_sequencer(s: str) -> Sequencer:
    """Reads ``[<kind>:]<name>@<token>``. A signed sequencer parses too, its
    signature's form checked but not the signature: that takes a
    :class:`Verifier`."""
    if not isinstance(s, str):
        raise InvalidSequencerError(f"a sequencer is a str, not {type(s).__name__}")
    plain, _, _ = _split_signed(s)
    return _parse_plain(plain)


def parse_verify_keys(text: str) -> Dict[str, bytes]:
    """The keys of a verify keys file (``seqd keygen``): one line
    ``<kid> <base64 public key>`` per key; blank lines and ``#`` lines are
    skipped."""
    keys: Dict[str, bytes] = {}
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        f = line.split()
        if len(f) != 2 or not _KID.match(f[0]):
            raise ValueError(f"line {n}: want \"<kid> <base64 public key>\"")
        try:
            raw = base64.b64decode(f[1], validate=True)
        except ValueError:
            raw = b""
        if len(raw) != 32:
            raise ValueError(f"line {n}: the public key of {f[0]!r} is not 32 bytes of base64")
        if f[0] in keys:
            raise ValueError(f"line {n}: key id {f[0]!r} appears twice")
        keys[f[0]] = raw
    if not keys:
        raise ValueError("no key found")
    return keys


def load_verify_keys(path: str) -> "Verifier":
    """A :class:`Verifier` for the keys of a verify keys file."""
    with open(path, encoding="utf-8") as f:
        try:
            return Verifier(parse_verify_keys(f.read()))
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from None


class Verifier:
    """Checks signed sequencers (``<plain>.<kid>.<sig>``, an Ed25519
    signature of ``seqd-sequencer-v2:<plain>``) with public keys only: a
    resource can check tokens, never mint them. It remembers the sequencers
    it verified (a bounded number), so a holder's repeated sequencer costs a
    dict lookup. Needs the ``cryptography`` package (Debian:
    python3-cryptography)."""

    _CACHE = 1 << 14

    def __init__(self, keys: Dict[str, bytes]) -> None:
        try:
            from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
        except ImportError as e:  # the one optional dependency
            raise ImportError("seqd.fence.Verifier needs the cryptography package (pip install cryptography, or apt-get install python3-cryptography)") from e
        if not keys:
            raise ValueError("a verifier needs at least one key")
        self._keys: Dict[str, Any] = {}
        for kid, raw in keys.items():
            if not _KID.match(kid):
                raise ValueError(f"key id {kid!r} must be 1 to 32 of [A-Za-z0-9_-]")
            self._keys[kid] = Ed25519PublicKey.from_public_bytes(raw)
        self._lock = threading.Lock()
        self._cur: Dict[str, Sequencer] = {}
        self._older: Dict[str, Sequencer] = {}

    def verify(self, s: str) -> Sequencer:
        """The sequencer of a signed sequencer whose signature checks.

        Raises :class:`UnsignedError` for a plain one, :class:`BadSignatureError`
        for a signature that does not check or an unknown key id, and
        :class:`InvalidSequencerError` for a malformed one."""
        hit = self._cur.get(s)
        if hit is not None:
            return hit
        if not isinstance(s, str):
            raise InvalidSequencerError(f"a sequencer is a str, not {type(s).__name__}")
        plain, kid, sig = _split_signed(s)
        if not kid:
            raise UnsignedError(f"{s[:300]!r} has no signature")
        seq = _parse_plain(plain)
        with self._lock:
            hit = self._older.get(s)
            if hit is None:
                key = self._keys.get(kid)
                if key is None:
                    raise BadSignatureError(f"unknown key id {kid!r}")
                if not self._check(key, plain, sig):
                    raise BadSignatureError(f"the signature of {plain[:300]!r} does not check with key {kid!r}")
                hit = seq
            if len(self._cur) >= self._CACHE // 2:
                self._older, self._cur = self._cur, {}
            self._cur[s] = hit
            return hit

    @staticmethod
    def _check(key: Any, plain: str, sig: str) -> bool:
        from cryptography.exceptions import InvalidSignature

        try:
            raw = base64.urlsafe_b64decode(sig + "==")
        except ValueError:
            return False
        # One spelling per signature: no unused bits set in the last character.
        if len(raw) != 64 or base64.urlsafe_b64encode(raw).rstrip(b"=").decode() != sig:
            return False
        try:
            key.verify(raw, _CONTEXT + plain.encode())
        except InvalidSignature:
            return False
        return True


class Guard:
    """The lock that guards some data: :meth:`token` takes the sequencer a
    holder sent and returns its token if it is of that lock and kind (and,
    with a verifier, signed by seqd); otherwise it raises a
    :class:`SequencerError`. ``kind`` is ``"lock"`` (an exclusive lock; the
    default), ``"election"`` (a leader's term), ``"shared"`` or
    ``"semaphore"``: tokens of another kind follow another count."""

    def __init__(self, name: str, kind: str = "lock", verifier: Optional[Verifier] = None) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown kind {kind!r}: want one of {', '.join(KINDS)}")
        _check_name(name)
        self.name, self.kind, self.verifier = name, kind, verifier

    def token(self, sequencer: str) -> int:
        seq = self.verifier.verify(sequencer) if self.verifier is not None else parse_sequencer(sequencer)
        if seq.kind != self.kind or seq.name != self.name:
            want = str(Sequencer(self.kind, self.name, 1))[:-2]
            raise WrongLockError(f"{str(seq)[:300]!r} is not a sequencer of {want!r}")
        return seq.token


def _check_token(token: int) -> int:
    if isinstance(token, bool) or not isinstance(token, int) or not 1 <= token <= MAX_TOKEN:
        raise ValueError(f"a fencing token is an int in 1..{MAX_TOKEN}, not {token!r}")
    return token
