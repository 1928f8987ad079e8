"""seqd: the Python client of the seqd sidecar's HTTP API.

Fenced locks, semaphores and leader elections from a seqd daemon (usually
the sidecar on 127.0.0.1:7070), with the standard library only::

    import seqd

    client = seqd.Client()  # SEQD_ADDR, SEQD_API_TOKEN_FILE, SEQD_CACERT, ...
    with client.lock("jobs/nightly", ttl="15s", wait="10s") as lease:
        while not lease.lost.is_set():
            write(resource, fencing_token=lease.token)

``seqd.aio`` is the same client for asyncio, and ``seqd.locked`` a
decorator that runs a function (a cron job, a Celery task) under a lock
with its token. The tooz driver (``seqd://HOST:PORT``) is a package of its
own, seqd-tooz (contrib/tooz).

Holding a lease is never guaranteed (a pause, a partition, an operator can
end it): pass the token to the resource, which refuses a lower one.
"""

import logging

from ._durations import Duration, format_go_duration, parse_go_duration
from .client import DEFAULT_ADDR, DEFAULT_TIMEOUT, Client
from .errors import (
    BadRequestError,
    ForbiddenError,
    HeldError,
    LostError,
    ProtocolError,
    QuotaExceededError,
    SeqdError,
    StaleTokenError,
    UnauthorizedError,
    UnavailableError,
)
from .lease import Leadership, Lease, LostSignal
from .locked import locked
from .types import CheckResult, ElectionStatus, Leader, LeaseInfo, LockStatus, LockToken, MultiLeaseInfo, SemaphoreStatus

__version__ = "0.1.0"

# A library logs (logger "seqd": losses at WARNING) and leaves the output to
# the application.
logging.getLogger("seqd").addHandler(logging.NullHandler())

__all__ = [
    "BadRequestError",
    "CheckResult",
    "Client",
    "DEFAULT_ADDR",
    "DEFAULT_TIMEOUT",
    "Duration",
    "ElectionStatus",
    "HeldError",
    "Leader",
    "Leadership",
    "Lease",
    "LeaseInfo",
    "LockStatus",
    "LockToken",
    "LostError",
    "LostSignal",
    "MultiLeaseInfo",
    "ProtocolError",
    "SemaphoreStatus",
    "SeqdError",
    "StaleTokenError",
    "UnauthorizedError",
    "ForbiddenError",
    "QuotaExceededError",
    "UnavailableError",
    "format_go_duration",
    "locked",
    "parse_go_duration",
]
