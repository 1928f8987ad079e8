"""Durations and times on the wire.

The daemon speaks Go duration strings (``"15s"``, ``"1m30s"``, ``"250ms"``)
and RFC 3339 times with up to nanoseconds. The client accepts a duration as
such a string, as a :class:`datetime.timedelta`, or as a number of seconds.
"""

from __future__ import annotations

import datetime
import re
from typing import Optional, Union

from .errors import BadRequestError

Duration = Union[str, int, float, datetime.timedelta]
"""What the client accepts wherever it takes a duration."""

_UNIT_NS = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # micro sign
    "\u03bcs": 1_000,  # Greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")


def parse_go_duration(text: str) -> int:
    """Nanoseconds of a Go duration string such as ``"1m30s"``.

    Raises :class:`BadRequestError` for anything Go's ``time.ParseDuration``
    would refuse, and for negative durations (no API takes one).
    """
    s = text.strip()
    if s in ("0", "+0"):
        return 0
    if s.startswith("+"):
        s = s[1:]
    if not s or s.startswith("-"):
        raise BadRequestError(f"duration {text!r}: want a non-negative duration such as \"15s\"", code="bad_request")
    total = 0
    pos = 0
    while pos < len(s):
        m = _PART.match(s, pos)
        if m is None:
            raise BadRequestError(f"duration {text!r} is not a duration such as \"15s\" or \"1m30s\"", code="bad_request")
        number, unit = m.group(1), m.group(2)
        whole, _, frac = number.partition(".")
        scale = _UNIT_NS[unit]
        total += int(whole or "0") * scale
        if frac:
            total += int(frac) * scale // 10 ** len(frac)
        pos = m.end()
    return total


def to_nanoseconds(value: Duration, what: str = "duration") -> int:
    """Nanoseconds of a duration given as a string, a timedelta or seconds."""
    if isinstance(value, bool):
        raise BadRequestError(f"{what}: want a duration such as \"15s\", got {value!r}", code="bad_request")
    if isinstance(value, str):
        return parse_go_duration(value)
    if isinstance(value, datetime.timedelta):
        ns = (value.days * 86_400 + value.seconds) * 1_000_000_000 + value.microseconds * 1_000
    elif isinstance(value, (int, float)):
        if value != value or value in (float("inf"), float("-inf")):
            raise BadRequestError(f"{what}: {value!r} is not a duration", code="bad_request")
        ns = round(value * 1_000_000_000)
    else:
        raise BadRequestError(f"{what}: want a duration such as \"15s\", a timedelta or seconds, got {type(value).__name__}", code="bad_request")
    if ns < 0:
        raise BadRequestError(f"{what}: {value!r} is negative", code="bad_request")
    return ns


def to_seconds(value: Duration, what: str = "duration") -> float:
    """Seconds (a float) of a duration given in any accepted form."""
    return to_nanoseconds(value, what) / 1e9


def format_go_duration(ns: int) -> str:
    """A Go duration string for ``ns`` nanoseconds, exact: ``"15s"``, ``"1500ms"``."""
    if ns == 0:
        return "0s"
    for unit, scale in (("h", 3_600_000_000_000), ("m", 60_000_000_000), ("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000)):
        if ns % scale == 0:
            return f"{ns // scale}{unit}"
    return f"{ns}ns"


def wire_duration(value: Optional[Duration], what: str) -> Optional[str]:
    """The wire form of an optional duration argument (``None`` stays ``None``)."""
    if value is None:
        return None
    return format_go_duration(to_nanoseconds(value, what))


_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|z|[+-]\d{2}:\d{2})$"
)


def parse_time(text: Optional[str]) -> Optional[datetime.datetime]:
    """An aware datetime of an RFC 3339 time (nanoseconds truncated to
    microseconds); ``None`` for ``None`` or text that is not such a time."""
    if not text:
        return None
    m = _RFC3339.match(text)
    if m is None:
        return None
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    frac = (m.group(7) or "")[:6].ljust(6, "0")
    zone = m.group(8)
    if zone in ("Z", "z"):
        tz = datetime.timezone.utc
    else:
        sign = 1 if zone[0] == "+" else -1
        tz = datetime.timezone(sign * datetime.timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6])))
    try:
        return datetime.datetime(year, month, day, hour, minute, second, int(frac), tzinfo=tz)
    except ValueError:
        return None
