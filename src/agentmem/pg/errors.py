"""The error every part of :mod:`agentmem.pg` raises."""

from agentmem.errors import ArmError


class PgError(ArmError):
    """PostgreSQL could not be started, reached or prepared (message names store/DSN)."""
