"""seqd.aio: the seqd client for asyncio, standard library only.

The operations of :class:`seqd.Client` under the same names, as coroutines,
over asyncio streams (HTTP/1.1, TCP or TLS)::

    import seqd.aio

    async def main():
        async with seqd.aio.Client() as client:  # SEQD_ADDR, SEQD_API_TOKEN_FILE, ...
            async with client.lock("jobs/nightly", ttl="15s", wait="10s", cancel_on_loss=True) as lease:
                await write(resource, fencing_token=lease.token)

``lease.lost`` is an :class:`asyncio.Event`; with ``cancel_on_loss`` the
block's task is cancelled when the lease is lost and the block raises
:class:`seqd.LostError`. Errors, records and the rules of what the client
accepts are those of :mod:`seqd`.
"""

from .client import Client
from .lease import Leadership, Lease, LostSignal

__all__ = ["Client", "Leadership", "Lease", "LostSignal"]
