"""Milvus Lite's and pymilvus's error log held back while an arm call runs.

A value the product refuses is an :class:`~agentmem.errors.ArmError` carrying the product's
message; its ``[ERROR]`` log lines (with tracebacks) must not reach the user's terminal or
the workflow log. They are released only when the call itself fails unexpectedly.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

#: The loggers through which the products report, in the calling thread, a call that
#: fails: pymilvus logs every failed RPC at ERROR, with a traceback, and then raises the
#: same error (``pymilvus.decorators``); Milvus Lite's server manager logs why its server
#: could not start and returns nothing, and pymilvus then raises only "Open local milvus
#: failed" (``milvus_lite.server_manager``). Both print to stderr by default.
PRODUCT_LOGGERS = ("pymilvus.decorators", "milvus_lite.server_manager")
#: The product's ERROR records held back in the current arm call of this thread (None
#: outside one): :func:`held_product_errors`.
HELD: ContextVar[list[logging.LogRecord] | None] = ContextVar("milvus_held", default=None)


class HoldErrors(logging.Filter):
    """Hold back the ERROR records a product logger makes inside an arm call."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Keep an ERROR record made inside an arm call and return False (not printed)."""
        held = HELD.get()
        if held is None or record.levelno < logging.ERROR:
            return True
        held.append(record)
        return False


HOLD_ERRORS = HoldErrors()


@contextmanager
def held_product_errors() -> Iterator[list[logging.LogRecord]]:
    """Hold back the products' ERROR log records this thread makes inside the block.

    Yields the list they are kept in; the caller decides what becomes of them. Records of
    other threads, other loggers and lower levels pass as before.
    """
    for name in PRODUCT_LOGGERS:
        logging.getLogger(name).addFilter(HOLD_ERRORS)  # no-op when already there
    held: list[logging.LogRecord] = []
    token = HELD.set(held)
    try:
        yield held
    finally:
        HELD.reset(token)


def record_text(record: logging.LogRecord) -> str:
    """A held record in one line: its message's first line, then its exception if any."""
    message = record.getMessage()
    text = message.splitlines()[0] if message else ""
    if record.exc_info and record.exc_info[1] is not None:
        exc = record.exc_info[1]
        text += f": {type(exc).__name__}: {exc}"
    return text


def release_records(records: list[logging.LogRecord]) -> None:
    """Hand held records to their loggers' handlers after all (nothing else reported them)."""
    for record in records:
        logging.getLogger(record.name).handle(record)


class QuietClient:
    """The arm's ``MilvusClient``: its method calls hold back the products' error log.

    pymilvus logs a failed RPC at ERROR with a traceback and raises the same error, which
    leaves the arm as :class:`ArmError` carrying the product's message (e.g. "VARCHAR
    field 'body' value length 65536 exceeds max_length=65535"), the traceback kept in its
    ``__cause__``: that record is dropped. Any other held record is handed to its logger's
    handlers after the call, as it would have been.
    """

    def __init__(self, client: Any) -> None:
        self._inner = client

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr

        @functools.wraps(attr)
        def call(*args: Any, **kwargs: Any) -> Any:
            held: list[logging.LogRecord] = []
            failed = True
            try:
                with held_product_errors() as held:
                    result = attr(*args, **kwargs)
                failed = False
                return result
            finally:
                release_records(
                    [r for r in held if not (failed and r.name == "pymilvus.decorators")]
                )

        return call
