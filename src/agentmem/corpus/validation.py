"""Corpus validation (the study's Table 5) and the dense-failure probe (DESIGN §4).

The generated corpus is only a fair test bed if its query classes have the properties they
claim: lexical queries name an identifier yet are semantically no closer to their targets
than two random memories are; semantic queries carry no identifier yet sit far above that
baseline. :func:`validation_table` measures this per class; :func:`dense_failure_probe`
shows what it means for dense retrieval (for an identifier question, cosine ranks a
distractor that merely mentions the identifier above the memories that answer it).

Term definitions shared by both (all term sets are sets, so repeats count once):

* ``terms(q)`` = :func:`agentmem.arms.text.query_terms` of the query text: lower-cased
  tokens, identifiers such as ``CFG-799`` kept whole, stopwords dropped, at most 32 terms.
* ``terms(m)`` = the same tokenisation of the memory body without the 32-term cap (every
  token of the body counts).
* ``df(t)`` = number of memories whose ``terms(m)`` contain ``t``; ``N`` = number of
  memories. A term is *rare* when ``1 <= df(t) <= max(RARE_MIN_DF, ceil(RARE_DF_FRACTION·N))``
  (0.1 % of the memories, at least 5; at the main size, 8,324 memories, that is ``df <= 9``).
  Terms absent from every memory (``df = 0``) are not rare: they are query wording the
  corpus never uses, and could not be shared with any memory.
* ``ids(x)`` = the identifiers matched by :data:`IDENTIFIER` in the raw text ``x``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from agentmem.arms.base import Embeddings
from agentmem.arms.text import _TOKEN, STOPWORDS, query_terms
from agentmem.corpus.queries import QUERY_CLASSES, SIMILARITY_EXPRESSIBLE
from agentmem.embeddings import load_embeddings
from agentmem.io import write_csv

#: Record identifiers as the generator writes them (``CFG-799``, ``SVC-5345``, ``ADR-12``).
IDENTIFIER = r"\b[A-Z]{3}-\d+\b"
#: A term is rare when its document frequency is at most this share of the memories ...
RARE_DF_FRACTION = 0.001
#: ... or at most this many memories, whichever is larger.
RARE_MIN_DF = 5
#: Fewest random memory pairs accepted for the baseline cosine (issue 5: >= 400).
MIN_RANDOM_PAIRS = 400

TABLE_SCHEMA = {
    "query_class": pl.String,
    "queries": pl.Int64,
    "pairs": pl.Int64,
    "term_overlap": pl.Float64,
    "rare_term_overlap": pl.Float64,
    "identifier_overlap": pl.Float64,
    "mean_cosine": pl.Float64,
    "relevant_per_query": pl.Float64,
    "similarity_expressible": pl.Boolean,
}
PROBE_SCHEMA = {
    "query_id": pl.String,
    "first_relevant_rank": pl.Int64,
    "memories": pl.Int64,
    "top_is_distractor": pl.Boolean,
    "top_memory_id": pl.String,
}

_IDENT = re.compile(IDENTIFIER)


@dataclass(frozen=True)
class ValidationInput:
    """The parts of a corpus the validation reads, already loaded.

    Attributes:
        memories: needs ``memory_id``, ``body``, ``form`` (``id``/``para``/``correction``/
            ``distractor``).
        queries: needs ``query_id``, ``class``, ``text``, ``similarity_expressible``.
        qrels: needs ``query_id``, ``memory_id``.
        vectors: one vector per memory id and per query id (rows need not be normalised;
            they are re-normalised here).
    """

    memories: pl.DataFrame
    queries: pl.DataFrame
    qrels: pl.DataFrame
    vectors: Embeddings

    @classmethod
    def load(cls, corpus_dir: str | Path, embeddings_path: str | Path) -> ValidationInput:
        """Read ``memories``/``queries``/``qrels`` Parquet files and the embeddings file.

        Raises:
            FileNotFoundError: naming the first missing file.
        """
        d = Path(corpus_dir)
        tables = {}
        for name in ("memories", "queries", "qrels"):
            p = d / f"{name}.parquet"
            if not p.is_file():
                raise FileNotFoundError(f"corpus file {p} does not exist")
            tables[name] = pl.read_parquet(p)
        return cls(vectors=load_embeddings(embeddings_path), **tables)


def memory_terms(body: str) -> set[str]:
    """Every lower-cased, non-stopword term of ``body`` (same tokens as ``query_terms``)."""
    return {m.group(0).lower() for m in _TOKEN.finditer(body or "")} - STOPWORDS


def identifiers(text: str) -> set[str]:
    """The identifiers (:data:`IDENTIFIER`, e.g. ``CFG-799``) occurring in ``text``."""
    return set(_IDENT.findall(text or ""))


def rare_df_threshold(n_memories: int) -> int:
    """Largest document frequency that still counts as rare for a corpus of ``n_memories``.

    ``max(RARE_MIN_DF, ceil(RARE_DF_FRACTION * n_memories))``.
    """
    return max(RARE_MIN_DF, math.ceil(RARE_DF_FRACTION * n_memories))


def _unit(mat: np.ndarray) -> np.ndarray:
    mat = np.asarray(mat, dtype=np.float64)
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise ValueError("a vector of norm 0 has no direction; cosine is undefined")
    return mat / norms


def _mean(xs: list[float]) -> float | None:
    return float(np.mean(xs)) if xs else None


def validation_table_from(
    data: ValidationInput, random_pairs: int = 1000, seed: int = 0
) -> pl.DataFrame:
    """Compute the corpus validation table from preloaded data (see :func:`validation_table`).

    Raises:
        ValueError: when ``random_pairs < MIN_RANDOM_PAIRS``, the corpus has fewer than two
            memories, a qrel names an unknown memory, a class's queries disagree on
            ``similarity_expressible``, or a vector has norm 0.
        KeyError: when a query or memory has no vector.
    """
    if random_pairs < MIN_RANDOM_PAIRS:
        raise ValueError(f"random_pairs must be >= {MIN_RANDOM_PAIRS}, got {random_pairs}")
    mem = data.memories
    n = mem.height
    if n < 2:
        raise ValueError(f"a corpus of {n} memories has no memory pairs")
    mem_ids = mem["memory_id"].to_list()
    bodies = dict(zip(mem_ids, mem["body"].to_list(), strict=True))
    mterms = {mid: memory_terms(b) for mid, b in bodies.items()}
    df = Counter(t for ts in mterms.values() for t in ts)
    rare_max = rare_df_threshold(n)

    qrels = data.qrels.select("query_id", "memory_id")
    unknown = set(qrels["memory_id"].to_list()) - bodies.keys()
    if unknown:
        raise ValueError(f"qrels name {len(unknown)} unknown memories, e.g. {min(unknown)}")
    rel: dict[str, list[str]] = {}
    for qid, mid in qrels.iter_rows():
        rel.setdefault(qid, []).append(mid)

    qvec = _unit(data.vectors.get(data.queries["query_id"].to_list()))
    qrow = {qid: i for i, qid in enumerate(data.queries["query_id"].to_list())}

    rows = []
    for cls in QUERY_CLASSES:
        qs = data.queries.filter(pl.col("class") == cls)
        flags = set(qs["similarity_expressible"].to_list())
        if len(flags) > 1:
            raise ValueError(f"queries of class {cls} disagree on similarity_expressible")
        flag = flags.pop() if flags else cls in SIMILARITY_EXPRESSIBLE
        term, rare, ident, cos = [], [], [], []
        for qid, text in qs.select("query_id", "text").iter_rows():
            targets = rel.get(qid, [])
            if not targets:
                continue
            qt = set(query_terms(text))
            qrare = {t for t in qt if 1 <= df.get(t, 0) <= rare_max}
            qids = identifiers(text)
            mv = _unit(data.vectors.get(targets))
            cos.extend((mv @ qvec[qrow[qid]]).tolist())
            for mid in targets:
                mt = mterms[mid]
                term.append(len(qt & mt) / len(qt) if qt else 0.0)
                rare.append(len(qrare & mt) / len(qrare) if qrare else 0.0)
                ident.append(1.0 if qids & identifiers(bodies[mid]) else 0.0)
        rows.append(
            {
                "query_class": cls,
                "queries": qs.height,
                "pairs": len(term),
                "term_overlap": _mean(term),
                "rare_term_overlap": _mean(rare),
                "identifier_overlap": _mean(ident),
                "mean_cosine": _mean(cos),
                "relevant_per_query": len(term) / qs.height if qs.height else None,
                "similarity_expressible": flag,
            }
        )

    rng = np.random.default_rng(seed)
    a = rng.integers(0, n, size=random_pairs)
    b = (a + rng.integers(1, n, size=random_pairs)) % n  # uniform over the other n - 1
    mv = _unit(data.vectors.get(mem_ids))
    rows.append(
        {
            "query_class": "random_pairs",
            "pairs": random_pairs,
            "mean_cosine": float(np.mean(np.sum(mv[a] * mv[b], axis=1))),
        }
    )
    return pl.DataFrame(rows, schema=TABLE_SCHEMA)


def validation_table(
    corpus_dir: str | Path,
    embeddings_path: str | Path,
    random_pairs: int = 1000,
    seed: int = 0,
) -> pl.DataFrame:
    r"""Per-class corpus validation table (the study's Table 5) plus a random-pair baseline.

    A *pair* is one (query ``q``, relevant memory ``m``) row of the qrels. With ``terms``,
    ``rare`` and ``ids`` as defined in the module docstring, and ``P_c`` the pairs of class
    ``c``:

    * ``queries`` = number of queries of the class.
    * ``pairs`` = ``|P_c|``.
    * ``term_overlap`` = ``mean over P_c of |terms(q) ∩ terms(m)| / |terms(q)|``
      (0 for a query with no terms).
    * ``rare_term_overlap`` = ``mean over P_c of |R(q) ∩ terms(m)| / |R(q)|`` with
      ``R(q) = {t in terms(q) : 1 <= df(t) <= max(5, ceil(0.001·N))}``; a pair whose query
      has no rare term scores 0.
    * ``identifier_overlap`` = ``mean over P_c of [ids(q) ∩ ids(m) ≠ ∅]``: the share of pairs
      in which the memory body contains an identifier (``[A-Z]{3}-\d+``) that the query
      text contains. Zero by construction for a class whose queries carry no identifier.
    * ``mean_cosine`` = ``mean over P_c of (v_q/|v_q|)·(v_m/|v_m|)``, the cosine of the
      query and memory embeddings (all-MiniLM-L6-v2 here).
    * ``relevant_per_query`` = ``|P_c| / queries`` (mean qrels per query).
    * ``similarity_expressible`` = the class flag (lexical, semantic, hybrid: True).

    Means over an empty class are null. The last row, ``query_class = "random_pairs"``,
    carries ``pairs = random_pairs`` and ``mean_cosine`` = the mean cosine of that many
    memory pairs ``(a, b)``, ``a`` uniform over the memories and ``b`` uniform over the
    others (``numpy.random.default_rng(seed)``; pairs drawn with replacement); its other
    columns are null.

    Args:
        corpus_dir: corpus directory with ``memories``, ``queries`` and ``qrels`` Parquet.
        embeddings_path: embeddings Parquet (id, sha256, vector) covering every memory and
            query id.
        random_pairs: random memory pairs for the baseline (at least 400).
        seed: seed of the pair sampler.

    Returns:
        Nine rows (eight classes in ``QUERY_CLASSES`` order, then ``random_pairs``) with the
        columns of :data:`TABLE_SCHEMA`.

    Raises:
        FileNotFoundError: naming a missing input file.
        ValueError: see :func:`validation_table_from`.
        KeyError: when a query or memory has no vector.
    """
    data = ValidationInput.load(corpus_dir, embeddings_path)
    return validation_table_from(data, random_pairs=random_pairs, seed=seed)


def dense_failure_probe_from(data: ValidationInput, n: int | None = None) -> pl.DataFrame:
    """Rank every memory by cosine for each lexical query (see :func:`dense_failure_probe`).

    Raises:
        ValueError: when ``n < 0`` or a vector has norm 0.
        KeyError: when a query or memory has no vector.
    """
    if n is not None and n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    mem = data.memories
    mem_ids = mem["memory_id"].to_list()
    distractor = (mem["form"] == "distractor").to_numpy()
    qs = data.queries.filter(pl.col("class") == "lexical").sort("query_id")
    if n is not None:
        qs = qs.head(n)
    rel: dict[str, set[str]] = {}
    for qid, mid in data.qrels.select("query_id", "memory_id").iter_rows():
        rel.setdefault(qid, set()).add(mid)
    rows = []
    if qs.height and mem_ids:
        mv = _unit(data.vectors.get(mem_ids))
        qv = _unit(data.vectors.get(qs["query_id"].to_list()))
        scores = qv @ mv.T  # (queries, memories)
        for i, qid in enumerate(qs["query_id"].to_list()):
            order = np.argsort(-scores[i], kind="stable")
            targets = rel.get(qid, set())
            hit = [r for r, j in enumerate(order) if mem_ids[j] in targets]
            rows.append(
                {
                    "query_id": qid,
                    "first_relevant_rank": hit[0] + 1 if hit else None,
                    "memories": len(mem_ids),
                    "top_is_distractor": bool(distractor[order[0]]),
                    "top_memory_id": mem_ids[order[0]],
                }
            )
    return pl.DataFrame(rows, schema=PROBE_SCHEMA)


def dense_failure_probe(
    corpus_dir: str | Path, embeddings_path: str | Path, n: int | None = None
) -> pl.DataFrame:
    """Dense-failure probe: where does pure cosine ranking put the answer to a lexical query?

    For each lexical query (in ``query_id`` order; all of them, or the first ``n``), every
    memory of the corpus is ranked by cosine to the query vector, best first (exact ties
    keep corpus order). Columns:

    * ``query_id``.
    * ``first_relevant_rank``: 1-based rank of the best-ranked relevant memory (null if the
      query has no qrels).
    * ``memories``: number of memories ranked (the corpus size).
    * ``top_is_distractor``: whether the rank-1 memory has ``form == "distractor"`` (it
      mentions an identifier while asserting nothing about it).
    * ``top_memory_id``: the rank-1 memory.

    Args:
        corpus_dir: corpus directory with ``memories``, ``queries`` and ``qrels`` Parquet.
        embeddings_path: embeddings Parquet covering every memory and query id.
        n: probe only the first ``n`` lexical queries (None = all).

    Returns:
        One row per probed query with the columns of :data:`PROBE_SCHEMA`.

    Raises:
        FileNotFoundError: naming a missing input file.
        ValueError: when ``n < 0``.
        KeyError: when a query or memory has no vector.
    """
    return dense_failure_probe_from(ValidationInput.load(corpus_dir, embeddings_path), n=n)


def write_validation(
    corpus_dir: str | Path,
    embeddings_path: str | Path,
    table_csv: str | Path,
    probe_csv: str | Path,
    random_pairs: int = 1000,
    seed: int = 0,
    probe_n: int | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Compute the validation table and the dense-failure probe and write both CSVs atomically.

    Args:
        corpus_dir: corpus directory (``memories``, ``queries``, ``qrels`` Parquet).
        embeddings_path: embeddings Parquet for the corpus.
        table_csv: output path of :func:`validation_table`.
        probe_csv: output path of :func:`dense_failure_probe`.
        random_pairs: random memory pairs for the baseline cosine (>= 400).
        seed: seed of the pair sampler.
        probe_n: probe only the first ``probe_n`` lexical queries (None = all).

    Returns:
        ``(table, probe)`` as written.

    Raises:
        FileNotFoundError, ValueError, KeyError: as :func:`validation_table`.
    """
    data = ValidationInput.load(corpus_dir, embeddings_path)
    table = validation_table_from(data, random_pairs=random_pairs, seed=seed)
    probe = dense_failure_probe_from(data, n=probe_n)
    write_csv(table_csv, table)
    write_csv(probe_csv, probe)
    return table, probe
