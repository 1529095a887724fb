"""Corpus validation (the study's Table 5) and the dense-failure probe (docs/CORPUS.md).

:func:`validation_table` measures, per query class, the term, rare-term and identifier
overlap and the cosine between questions and their relevant memories with the study's own
definitions (``engines/contract.mjs`` and ``tools/exp/quality.mjs`` of its capture:
:func:`study_terms`, :func:`rare_terms`, :func:`identifiers`), and puts the study's value
and a pass/fail beside each cell (:mod:`agentmem.corpus.spec`).
:func:`dense_failure_probe` ranks every memory by cosine for each lexical question.
Definitions, tolerances and what the numbers show: ``docs/VALIDATION.md``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from agentmem.corpus.queries import QUERY_CLASSES, SIMILARITY_EXPRESSIBLE
from agentmem.corpus.spec import (
    RANDOM_PAIR_COSINE,
    RANDOM_PAIR_TOLERANCE,
    TABLE5,
    TABLE5_TOLERANCE,
    corpus_spec_table,
)
from agentmem.embeddings import load_embeddings
from agentmem.io import write_csv
from agentmem.text import study_tokens
from agentmem.types import Embeddings

#: A term that is an identifier: the generator's record prefixes (and the study's
#: ``repo``), or a session / memory id written with a hyphen (``s-0042``).
IDENTIFIER = r"^(svc|cfg|inc|adr|run|per|repo|[ms])-\d+$"
#: Fewest random memory pairs accepted for the baseline cosine.
MIN_RANDOM_PAIRS = 400
#: The per-class statistics of the table, each with a study value and a pass column.
STATISTICS = (
    "term_overlap",
    "rare_term_overlap",
    "identifier_overlap",
    "mean_cosine",
    "relevant_per_query",
)

TABLE_SCHEMA: dict[str, pl.DataType] = {
    "query_class": pl.String,
    "queries": pl.Int64,
    "pairs": pl.Int64,
    **{s: pl.Float64 for s in STATISTICS},
    "similarity_expressible": pl.Boolean,
    **{f"{s}_study": pl.Float64 for s in STATISTICS},
    **{f"{s}_pass": pl.Boolean for s in STATISTICS},
    "all_pass": pl.Boolean,
}
PROBE_SCHEMA = {
    "query_id": pl.String,
    "first_relevant_rank": pl.Int64,
    "memories": pl.Int64,
    "top_is_distractor": pl.Boolean,
    "top_memory_id": pl.String,
}

_IDENT = re.compile(IDENTIFIER)
_RARE = re.compile(r"[0-9_-]")


@dataclass(frozen=True)
class ValidationInput:
    """The parts of a corpus the validation reads, already loaded.

    Attributes:
        memories: needs ``memory_id``, ``body``, ``form`` (``id``/``para``/``correction``/
            ``distractor``).
        queries: needs ``query_id``, ``class``, ``text``, ``similarity_expressible``.
        qrels: needs ``query_id``, ``memory_id``.
        vectors: a vector per query id, per relevant memory and per memory the random
            pairs draw (all memories will do; rows need not be normalised, they are
            re-normalised here).
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


def study_terms(text: str) -> set[str]:
    """The study's term set of ``text`` (see the module docstring): ``CFG-799`` -> cfg-799."""
    return set(study_tokens(text))


def rare_terms(text: str) -> set[str]:
    """The terms of ``text`` containing a digit, ``_`` or ``-`` (the study's rare terms)."""
    return {t for t in study_terms(text) if _RARE.search(t)}


def identifiers(text: str) -> set[str]:
    """The terms of ``text`` that are identifiers (:data:`IDENTIFIER`), lower-cased."""
    return {t for t in study_terms(text) if _IDENT.match(t)}


def random_pair_indices(n: int, pairs: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``pairs`` index pairs ``(a, b)`` of distinct memories among ``n``, with replacement.

    ``a`` uniform over ``0..n-1`` and ``b`` uniform over the other ``n − 1``
    (``numpy.random.default_rng(seed)``), so no memory is paired with itself.

    Raises:
        ValueError: when ``n < 2``.
    """
    if n < 2:
        raise ValueError(f"a corpus of {n} memories has no memory pairs")
    rng = np.random.default_rng(seed)
    a = rng.integers(0, n, size=pairs)
    b = (a + rng.integers(1, n, size=pairs)) % n
    return a, b


def _unit(mat: np.ndarray) -> np.ndarray:
    mat = np.asarray(mat, dtype=np.float64)
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise ValueError("a vector of norm 0 has no direction; cosine is undefined")
    return mat / norms


def _mean(xs: list[float]) -> float | None:
    return float(np.mean(xs)) if xs else None


def _with_study(row: dict) -> dict:
    """Add the study's value and a pass flag per statistic (null where not measured)."""
    cls = row["query_class"]
    passes = []
    for stat in STATISTICS:
        if cls == "random_pairs":
            study = RANDOM_PAIR_COSINE if stat == "mean_cosine" else None
            tol = RANDOM_PAIR_TOLERANCE
        else:
            study, tol = TABLE5[cls][stat], TABLE5_TOLERANCE[stat]
        ok = None if study is None else tol.check(study, row.get(stat))
        row[f"{stat}_study"] = study
        row[f"{stat}_pass"] = ok
        if study is not None:
            passes.append(bool(ok))
    row["all_pass"] = all(passes) if passes else None
    return row


def validation_table_from(
    data: ValidationInput, random_pairs: int = 1000, seed: int = 0
) -> pl.DataFrame:
    """Compute the corpus validation table from preloaded data (see :func:`validation_table`).

    Raises:
        ValueError: when ``random_pairs < MIN_RANDOM_PAIRS``, the corpus has fewer than two
            memories, a qrel names an unknown memory, a class's queries disagree on
            ``similarity_expressible``, or a vector has norm 0.
        KeyError: when a query, a relevant memory or a sampled memory has no vector.
    """
    if random_pairs < MIN_RANDOM_PAIRS:
        raise ValueError(f"random_pairs must be >= {MIN_RANDOM_PAIRS}, got {random_pairs}")
    mem = data.memories
    a, b = random_pair_indices(mem.height, random_pairs, seed)
    mem_ids = mem["memory_id"].to_list()
    bodies = dict(zip(mem_ids, mem["body"].to_list(), strict=True))

    qrels = data.qrels.select("query_id", "memory_id")
    unknown = set(qrels["memory_id"].to_list()) - bodies.keys()
    if unknown:
        raise ValueError(f"qrels name {len(unknown)} unknown memories, e.g. {min(unknown)}")
    rel: dict[str, list[str]] = {}
    for qid, mid in qrels.iter_rows():
        rel.setdefault(qid, []).append(mid)
    mterms = {mid: study_terms(bodies[mid]) for mid in set(qrels["memory_id"].to_list())}

    qids_all = data.queries["query_id"].to_list()
    qvec = _unit(data.vectors.get(qids_all)) if qids_all else np.zeros((0, 1))
    qrow = {qid: i for i, qid in enumerate(qids_all)}

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
            qt, qr, qi = study_terms(text), rare_terms(text), identifiers(text)
            mv = _unit(data.vectors.get(targets))
            cos.extend((mv @ qvec[qrow[qid]]).tolist())
            for mid in targets:
                mt = mterms[mid]
                term.append(len(qt & mt) / len(qt) if qt else 0.0)
                rare.append(len(qr & mt) / len(qr) if qr else 0.0)
                if qi:
                    ident.append(len(qi & mt) / len(qi))
        n_rel = sum(len(rel.get(q, [])) for q in qs["query_id"].to_list())
        rows.append(
            {
                "query_class": cls,
                "queries": qs.height,
                "pairs": len(term),
                "term_overlap": _mean(term),
                "rare_term_overlap": _mean(rare),
                # the study's convention: 0 when no question of the class names an identifier
                "identifier_overlap": _mean(ident) if ident else (0.0 if term else None),
                "mean_cosine": _mean(cos),
                "relevant_per_query": n_rel / qs.height if qs.height else None,
                "similarity_expressible": flag,
            }
        )

    sampled = sorted(set(a.tolist()) | set(b.tolist()))
    pos = {j: i for i, j in enumerate(sampled)}
    mv = _unit(data.vectors.get([mem_ids[j] for j in sampled]))
    ia = np.array([pos[j] for j in a.tolist()])
    ib = np.array([pos[j] for j in b.tolist()])
    rows.append(
        {
            "query_class": "random_pairs",
            "pairs": random_pairs,
            "mean_cosine": float(np.mean(np.sum(mv[ia] * mv[ib], axis=1))),
        }
    )
    return pl.DataFrame([_with_study(r) for r in rows], schema=TABLE_SCHEMA)


def validation_table(
    corpus_dir: str | Path,
    embeddings_path: str | Path,
    random_pairs: int = 1000,
    seed: int = 0,
) -> pl.DataFrame:
    r"""Per-class corpus validation table (the study's Table 5) beside the study's values.

    A *pair* is one (query ``q``, relevant memory ``m``) row of the qrels; ``P_c`` the
    pairs of class ``c``. With ``terms``, ``rare`` and ``ids`` as in the module docstring
    (the study's definitions; ``docs/VALIDATION.md``):

    * ``queries`` = number of queries of the class; ``pairs`` = ``|P_c|``.
    * ``term_overlap`` = mean over ``P_c`` of ``|terms(q) ∩ terms(m)| / |terms(q)|``
      (0 for a question with no terms).
    * ``rare_term_overlap`` = mean over ``P_c`` of ``|rare(q) ∩ rare(m)| / |rare(q)|``
      (0 for a question with no rare term).
    * ``identifier_overlap`` = mean, over the pairs of ``P_c`` whose question names at
      least one identifier, of ``|ids(q) ∩ ids(m)| / |ids(q)|``; 0 when no question of
      the class names one (so 0 by construction for semantic and temporal questions).
    * ``mean_cosine`` = mean over ``P_c`` of ``(v_q/|v_q|)·(v_m/|v_m|)``, the cosine of
      the query and memory embeddings (all-MiniLM-L6-v2).
    * ``relevant_per_query`` = mean number of relevant memories per question.
    * ``similarity_expressible`` = the class flag (lexical, semantic, hybrid: True).
    * ``<statistic>_study`` = the study's value (:data:`agentmem.corpus.spec.TABLE5`);
      ``<statistic>_pass`` = ours within :data:`agentmem.corpus.spec.TABLE5_TOLERANCE`
      of it (term overlap ±0.05; identifier and rare-term overlap ±0.10; cosine ±0.05;
      relevant memories per query ±20 %), null when ours is not measured; ``all_pass`` =
      every measured cell of the row passes.

    Means over an empty class are null. The last row, ``query_class = "random_pairs"``,
    carries ``pairs = random_pairs`` and ``mean_cosine`` = the mean cosine of that many
    memory pairs (:func:`random_pair_indices`: distinct memories, uniform, with
    replacement; the study took 400 fixed-stride pairs — the same expected value), with the
    study's .266 and a ±0.03 pass; its other columns are null.

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
    spec_csv: str | Path | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Compute the validation table and the dense-failure probe and write the CSVs atomically.

    Args:
        corpus_dir: corpus directory (``memories``, ``queries``, ``qrels`` Parquet and, for
            ``spec_csv``, ``manifest.json``).
        embeddings_path: embeddings Parquet for the corpus.
        table_csv: output path of :func:`validation_table`.
        probe_csv: output path of :func:`dense_failure_probe`.
        random_pairs: random memory pairs for the baseline cosine (>= 400).
        seed: seed of the pair sampler.
        probe_n: probe only the first ``probe_n`` lexical queries (None = all).
        spec_csv: when given, also write
            :func:`agentmem.corpus.spec.corpus_spec_table` (restatement distribution,
            tokens per memory and counts beside the study's) there.

    Returns:
        ``(table, probe)`` as written.

    Raises:
        FileNotFoundError, ValueError, KeyError: as :func:`validation_table`;
        FileNotFoundError also when ``spec_csv`` is given and the manifest is missing.
    """
    data = ValidationInput.load(corpus_dir, embeddings_path)
    table = validation_table_from(data, random_pairs=random_pairs, seed=seed)
    probe = dense_failure_probe_from(data, n=probe_n)
    if spec_csv is not None:
        manifest = Path(corpus_dir) / "manifest.json"
        if not manifest.is_file():
            raise FileNotFoundError(f"corpus manifest {manifest} does not exist")
        spec = corpus_spec_table(data.memories, json.loads(manifest.read_text()))
        write_csv(spec_csv, spec)
    write_csv(table_csv, table)
    write_csv(probe_csv, probe)
    return table, probe
