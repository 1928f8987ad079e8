"""Run a function only under a lock, and hand it the fencing token: a cron
job that several hosts schedule, a Celery task that must not run twice at
once."""

from __future__ import annotations

import functools
import inspect
import logging
from typing import Any, Callable, Optional, TypeVar, Union

from ._durations import Duration
from .client import Client
from .errors import HeldError

log = logging.getLogger("seqd")

T = TypeVar("T")

Name = Union[str, Callable[..., str]]


def locked(
    name: Name,
    *,
    ttl: Duration = "15s",
    wait: Optional[Duration] = None,
    client: Optional[Any] = None,
    owner: Optional[str] = None,
    skip_if_held: bool = False,
    pass_lease: bool = False,
    cancel_on_loss: bool = True,
) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """A decorator: each call of the function runs under the lock ``name``
    and gets its fencing token as the keyword argument ``token`` (or the
    whole lease as ``lease``, with ``pass_lease``)::

        @app.task
        @seqd.locked("reports/nightly", wait="0s", skip_if_held=True)
        def nightly(day, *, token):
            store.put(f"reports/{day}", build(day), fencing_token=token)

    ``name`` is a lock name, or a function of the call's arguments that
    returns one (``lambda volume_id: f"volumes/{volume_id}"``). The lock
    is acquired before the call (waiting up to ``wait``; by default it
    tries once), renewed while it runs and released after it. A lock
    held elsewhere raises :class:`HeldError`, or with ``skip_if_held``
    skips the call (it returns ``None``, logged at INFO): one host of
    several that run the same cron line does the work.

    If the lease is lost while the function runs, the call raises the
    lease's :class:`LostError` once the function returns (what ``seqd
    lock`` says with exit code 76): the writes it fenced with the token
    were refused, or must be assumed so. A coroutine function runs under
    :mod:`seqd.aio` and, with ``cancel_on_loss`` (the default), is
    cancelled at the loss.

    The injected argument is hidden from the wrapper's signature, so that
    a caller (and Celery's argument check) passes only the others; to a
    type checker the wrapper takes any arguments.
    ``client`` defaults to a :class:`seqd.Client` (or
    :class:`seqd.aio.Client`) from the environment.
    """
    inject = "lease" if pass_lease else "token"

    def decorate(fn: Callable[..., T]) -> Callable[..., T]:
        sig = inspect.signature(fn)
        if inject not in sig.parameters:
            raise TypeError(f"seqd.locked: {fn.__qualname__} takes no {inject!r} argument to receive the lock's {inject} in")
        shown = sig.replace(parameters=[p for p in sig.parameters.values() if p.name != inject])

        def lock_name(args: Any, kwargs: Any) -> str:
            return name(*args, **kwargs) if callable(name) else name

        if inspect.iscoroutinefunction(fn):
            afn: Callable[..., Any] = fn

            @functools.wraps(fn)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                from . import aio

                c = client if client is not None else aio.Client()
                try:
                    lease = c.lock(lock_name(args, kwargs), ttl=ttl, wait=wait, owner=owner, cancel_on_loss=cancel_on_loss)
                    try:
                        await lease.__aenter__()
                    except HeldError:
                        if not skip_if_held:
                            raise
                        log.info("seqd: %s skipped: the lock %r is held", fn.__qualname__, lease.name)
                        return None
                    try:
                        result = await afn(*args, **dict(kwargs, **{inject: lease if pass_lease else lease.token}))
                    except BaseException as e:
                        await lease.__aexit__(type(e), e, e.__traceback__)
                        raise
                    await lease.__aexit__(None, None, None)
                    lease.raise_if_lost()
                    return result
                finally:
                    if client is None:
                        await c.aclose()

            run_async.__signature__ = shown  # type: ignore[attr-defined]
            return run_async  # type: ignore[return-value]  # a coroutine function's wrapper returns what it awaits

        default: list = []

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            if client is not None:
                c = client
            else:
                if not default:
                    default.append(Client())
                c = default[0]
            lease = c.lock(lock_name(args, kwargs), ttl=ttl, wait=wait, owner=owner)
            try:
                lease.acquire()
            except HeldError:
                if not skip_if_held:
                    raise
                log.info("seqd: %s skipped: the lock %r is held", fn.__qualname__, lease.name)
                return None
            try:
                result = fn(*args, **dict(kwargs, **{inject: lease if pass_lease else lease.token}))
            finally:
                lease.release()
            lease.raise_if_lost()
            return result

        run.__signature__ = shown  # type: ignore[attr-defined]
        return run

    return decorate


__all__ = ["locked"]
