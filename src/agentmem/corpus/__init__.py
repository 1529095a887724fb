"""The synthetic corpus: world, facts, memories, sessions, queries and qrels (docs/CORPUS.md).

``import agentmem.corpus.queries`` (for :data:`~agentmem.corpus.queries.QUERY_CLASSES`)
does not load the reader and writer of corpus directories: the names of
:mod:`agentmem.corpus.io` are imported on first use.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
