"""Writing a corpus directory (Parquet + ``manifest.json``) and reading it back.

Layout of ``results/corpus/{size}/`` (docs/DATA.md): memories, facts, entities, sessions,
agents, queries, qrels as Parquet, plus ``manifest.json`` with counts, options and the
sha256 of each file. Same seed and options → byte-identical files.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from agentmem.io import write_json, write_parquet
from agentmem.types import Corpus, Embeddings, Predicate, Query

if TYPE_CHECKING:
    from agentmem.config import CorpusConfig, SizeConfig

SCHEMA_VERSION = 1
FILES = ("memories", "facts", "entities", "sessions", "agents", "queries", "qrels")


class CorpusError(RuntimeError):
    """A corpus directory is missing, incomplete or inconsistent (message names the path)."""


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_corpus(out_dir: str | Path, size: SizeConfig, opts: CorpusConfig) -> dict:
    """Generate one corpus size and write it to ``out_dir``.

    Args:
        out_dir: target directory (created).
        size: facts and queries per class.
        opts: generator options.

    Returns:
        The manifest dict also written to ``out_dir/manifest.json`` (keys include
        memories, facts, sessions, queries, distractors, superseded, queries_by_class,
        files -> sha256).
    """
    # the generator is imported here: the jobs that only read a corpus do without it
    from agentmem.corpus.generate import generate
    from agentmem.corpus.queries import make_queries

    g = generate(size, opts)
    queries, qrels = make_queries(g.memories, g.fact_objects, size.queries_per_class, opts)
    tables = {
        "memories": g.memories,
        "facts": g.facts,
        "entities": g.entities,
        "sessions": g.sessions,
        "agents": g.agents,
        "queries": queries,
        "qrels": qrels,
    }
    return write_tables(out_dir, tables, {"size": size.model_dump(), "corpus": opts.model_dump()})


def write_tables(out_dir: str | Path, tables: dict[str, pl.DataFrame], options: dict) -> dict:
    """Write a corpus's tables (the names of :data:`FILES`) and its ``manifest.json``.

    Args:
        out_dir: target directory (created).
        tables: one DataFrame per name of :data:`FILES` (docs/DATA.md, §1).
        options: what produced the corpus (generator options, or the source of an
            imported corpus), kept under the manifest's ``options``.

    Returns:
        The manifest, also written: counts (memories, facts, entities, sessions, agents,
        queries, qrels, distractors, rendered, corrections, superseded, superseded_facts,
        tokens, tokens_per_memory, similarity_expressible, queries_by_class), ``options``
        and the sha256 of each file.

    Raises:
        KeyError: when ``tables`` lacks one of :data:`FILES`.
    """
    from agentmem.corpus.queries import QUERY_CLASSES

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        write_parquet(out / f"{name}.parquet", tables[name])
    m, queries = tables["memories"], tables["queries"]
    by_class = queries.group_by("class").len()
    counts = dict(zip(by_class["class"], by_class["len"], strict=True))
    manifest = {
        "schema_version": SCHEMA_VERSION,
        **{name: tables[name].height for name in FILES},
        "distractors": int((m["form"] == "distractor").sum()),
        "rendered": int((m["form"] != "distractor").sum()),
        "corrections": int((m["form"] == "correction").sum()),
        "superseded": int(m["superseded_by"].is_not_null().sum()),
        "superseded_facts": int(tables["facts"]["corrected_value"].is_not_null().sum()),
        "tokens": int(m["tokens"].sum()),
        "tokens_per_memory": round(float(m["tokens"].mean()), 2),
        "similarity_expressible": int(queries["similarity_expressible"].sum()),
        "queries_by_class": {c: int(counts.get(c, 0)) for c in QUERY_CLASSES},
        "options": options,
        "files": {f"{n}.parquet": _sha256(out / f"{n}.parquet") for n in FILES},
    }
    write_json(out / "manifest.json", manifest)
    return manifest


def _require(corpus_dir: Path, names: tuple[str, ...]) -> None:
    if not corpus_dir.is_dir():
        raise CorpusError(f"corpus directory {corpus_dir} does not exist")
    missing = [n for n in names if not (corpus_dir / f"{n}.parquet").is_file()]
    if missing:
        raise CorpusError(f"corpus directory {corpus_dir} lacks {', '.join(missing)}.parquet")


def load_corpus(corpus_dir: str | Path) -> Corpus:
    """Read memories, sessions, facts and entities of a corpus directory.

    Raises:
        CorpusError: when the directory or one of its files is missing.
    """
    d = Path(corpus_dir)
    _require(d, ("memories", "sessions", "facts", "entities"))
    return Corpus(
        memories=pl.read_parquet(d / "memories.parquet"),
        sessions=pl.read_parquet(d / "sessions.parquet"),
        facts=pl.read_parquet(d / "facts.parquet"),
        entities=pl.read_parquet(d / "entities.parquet"),
    )


def load_qrels(corpus_dir: str | Path) -> pl.DataFrame:
    """Read ``qrels.parquet`` (query_id, memory_id, grade)."""
    d = Path(corpus_dir)
    _require(d, ("qrels",))
    return pl.read_parquet(d / "qrels.parquet")


def load_queries(
    corpus_dir: str | Path, vectors: Embeddings, *, scoped: bool = True
) -> list[Query]:
    """Read ``queries.parquet`` into :class:`Query` objects carrying their embeddings.

    An optional ``scope_id`` column gives each query its :attr:`Query.scope`; ``scoped=False``
    drops it (the unscoped setting: every query searches all memories).

    Raises:
        CorpusError: when a query has no embedding, a malformed predicate or an empty scope.
    """
    import numpy as np  # here: writing a corpus or reading its tables needs no numpy

    d = Path(corpus_dir)
    _require(d, ("queries",))
    df = pl.read_parquet(d / "queries.parquet")
    has_scope = scoped and "scope_id" in df.columns
    out = []
    for row in df.iter_rows(named=True):
        try:
            emb = vectors.get([row["query_id"]])[0]
            pred = Predicate.parse(
                row["predicate_field"], row["predicate_op"], row["predicate_value"]
            )
            q = Query(
                query_id=row["query_id"],
                text=row["text"],
                embedding=np.asarray(emb, dtype=np.float32),
                predicate=pred,
                wants_count=row["class"] == "aggregate",
                query_class=row["class"],
                scope=row["scope_id"] if has_scope else None,
            )
        except (KeyError, ValueError) as exc:
            raise CorpusError(f"{d / 'queries.parquet'}: query {row['query_id']}: {exc}") from None
        out.append(q)
    return out


def read_manifest(corpus_dir: str | Path) -> dict:
    """Return the parsed ``manifest.json`` of a corpus directory."""
    p = Path(corpus_dir) / "manifest.json"
    if not p.is_file():
        raise CorpusError(f"{p} does not exist")
    return json.loads(p.read_text())
