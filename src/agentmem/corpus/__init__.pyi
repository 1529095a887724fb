"""The public names of this package and their submodules (read by lazy_loader.attach_stub)."""

from .io import (
    load_corpus as load_corpus,
    load_qrels as load_qrels,
    load_queries as load_queries,
    write_corpus as write_corpus,
)
