"""PostgreSQL for the arms and the trials: an embedded server per store, or an external one.

:func:`connect_store` opens a store's database (:mod:`.connection`); :class:`EmbeddedServer`
runs the embedded PostgreSQL 18.3 + pgvector 0.8.2 server of one data directory
(:mod:`.server`, :mod:`.postmaster`); :mod:`.dsn` names servers and databases;
:mod:`.extension` prepares pgvector. Typical use::

    with connect_store(store_dir, "my-arm", create=True) as h:
        h.conn.execute("CREATE TABLE ...")
"""

from agentmem.pg.connection import (
    CONNECT_TIMEOUT_S,
    MARKER_NAME,
    PGDATA_DIRNAME,
    PgHandle,
    connect,
    connect_store,
    drop_store,
    open_store,
)
from agentmem.pg.dsn import ENV_DSN, Mode, current_mode, database_name, external_dsn, redact_dsn
from agentmem.pg.errors import PgError
from agentmem.pg.postmaster import STOP_TIMEOUT_S, import_pgserver, postmaster_pid
from agentmem.pg.server import EmbeddedServer
from agentmem.procs import (
    process_alive,
    wait_until as _wait,  # noqa: F401 - tests poll with pg._wait
)

__all__ = [
    "CONNECT_TIMEOUT_S",
    "ENV_DSN",
    "MARKER_NAME",
    "PGDATA_DIRNAME",
    "STOP_TIMEOUT_S",
    "EmbeddedServer",
    "Mode",
    "PgError",
    "PgHandle",
    "connect",
    "connect_store",
    "current_mode",
    "database_name",
    "drop_store",
    "external_dsn",
    "import_pgserver",
    "open_store",
    "postmaster_pid",
    "process_alive",
    "redact_dsn",
]
