"""``sqlite-gated``: keys, FTS5 bm25 and quantised vectors in one SQLite file, fused by score.

The design the measurements recommend for one agent on one machine; each choice and the
measurement behind it: docs/arms/sqlite-gated.md.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from typing import Any, ClassVar

import apsw
import numpy as np

from agentmem.arms import base
from agentmem.arms.sqlite.gated_sql import (
    CANDIDATES_SQL,
    ENTITY_NAMES_SQL,
    branch_statements,
    json_words,
)
from agentmem.arms.sqlite.keys import QUANTISED_VECTORS, name_key, quantise_query, text_keys
from agentmem.arms.sqlite.rows import VectorLayout
from agentmem.arms.sqlite.store import SqliteArm
from agentmem.sql.sqlite.statements import predicate_sql
from agentmem.text import fts5_match

#: a well-formed query embedding's shape (any other goes through ``checked_vector``)
_QUERY_SHAPE = (base.VECTOR_DIM,)


class SqliteGatedArm(SqliteArm):
    """``sqlite-gated``: entity keys, FTS5 bm25 and int8 cosine, fused by a weighted sum.

    Up to four branches find candidates, each with the query's filters (scope and
    predicate) in its ``WHERE``:

    * keys: the entities the text names (an entity id such as ``ADR-297`` as written,
      or an entity name such as ``billing-api``, :func:`text_keys`) and the memories
      linked to them in ``memory_entities``, each with the memories that supersede it,
      down the chain (a correction is about what it corrects; up to ``key_k``);
    * text: FTS5 ``bm25()`` over the bodies, every term quoted (an identifier is one
      phrase), top ``text_k``;
    * dense, behind a gate: only when the keys branch returns no memory (the text names
      no stored entity, or none of its memories passes the filters), a scan of the int8
      vectors by cosine adds its top ``dense_k``;
    * session neighbours, behind the same gate: the memories next to (``turn_no`` one
      before or after, same ``session_id``) the first ``neighbour_k`` of the text and of
      the dense branch, when the pair's int8 cosine is at least ``neighbour_min_cosine``
      (in a conversation the answer is often the turn after the one the question
      matches; docs/arms/sqlite-gated.md).

    Every candidate ``d`` then scores ``key_weight * e(d) + text_weight * t(d) +
    dense_weight * v(d) + correction_weight * c(d) + recency_weight * e(d) * r(d)``:
    ``e`` the share of the named entities it links to, ``t`` its bm25 over the query's
    best bm25 (0 outside the text branch), ``v`` its int8 cosine to the query (0 when
    negative), ``c`` 1 when it supersedes another memory (a correction), else 0, ``r`` its
    ``created_day`` min-max scaled over the candidates (the newest 1): among the memories
    about a named entity the newer word counts more. A session neighbour ``n`` of a
    source ``d`` then scores at least ``neighbour_weight * (text_weight * t(d) +
    dense_weight * v(d))``: the match's text and dense evidence, carried to the turn next
    to it. Ties go newest first; cut to ``k``. ``Result.count`` is ``SELECT count(*)``
    under the same filters. The ranking does not depend on ``k``.

    Scope: in the search (``m.scope_id = ?`` AND-ed with the predicate in every branch).

    Args:
        key_k: memories taken from the keys branch (default 200).
        text_k: candidates taken from the text branch (default 50).
        dense_k: candidates the dense branch adds when it runs (default 50).
        key_weight, text_weight, dense_weight, correction_weight, recency_weight: the
            fusion weights (each >= 0; defaults 2, 1, 1, 0.5, 1).
        neighbour_weight: the share of a match's evidence its session neighbours get
            (>= 0; default 0.8; 0 reads no neighbour).
        neighbour_min_cosine: the int8 cosine a neighbour needs to its match (-1 to 1;
            default 0.2).
        neighbour_k: first rows of the text and of the dense branch whose neighbours are
            read (default 20).
        keys: run the keys branch (default true; false: no entity is ever named).
        gate: skip the dense scan and the session neighbours when the keys branch returns
            memories (default true; false: both always).

    Raises:
        ValueError: for a candidate count that is not an integer >= 1, a weight that is
            negative or not finite, a cosine outside [-1, 1], or a flag that is not a bool.
    """

    name: ClassVar[str] = "sqlite-gated"
    knobs: ClassVar[tuple[base.Knob, ...]] = (
        base.Knob("dense_weight", "query", (0.5, 2.0), "weight of the int8 cosine"),
        base.Knob("text_k", "query", (25, 100), "candidates of the bm25 branch"),
        base.Knob("key_weight", "query", (), "weight of the named-entity share"),
        base.Knob("recency_weight", "query", (), "weight of recency among named memories"),
        base.Knob("dense_k", "query", (), "candidates of the dense scan"),
        base.Knob("neighbour_weight", "query", (0.0,), "evidence share to session neighbours"),
        base.Knob("neighbour_min_cosine", "query", (), "cosine a neighbour needs to its match"),
    )
    prefix_stable: ClassVar[bool] = True
    capabilities: ClassVar[base.Capabilities] = base.Capabilities.sql_engine(
        vector_access="brute-force", text_access="fts5-bm25"
    )
    vector_layout: ClassVar[VectorLayout] = QUANTISED_VECTORS
    ablations: ClassVar[dict[str, dict[str, Any]]] = {
        "no keys branch": {"keys": False},
        "no gate (dense scan always)": {"gate": False},
        "no bm25 score": {"text_weight": 0.0},
        "no dense score": {"dense_weight": 0.0},
        "no correction lift": {"correction_weight": 0.0},
        "no recency": {"recency_weight": 0.0},
        "no currency signal": {"correction_weight": 0.0, "recency_weight": 0.0},
        "no session neighbours": {"neighbour_weight": 0.0},
    }
    bare_call: ClassVar[base.BareCall] = base.BareCall(
        "execute + fetchall of the keys (each memory's e), text, dense-scan, neighbour and "
        "candidate statements (the last two bound to the ids the others returned, each row "
        "with its weighted dense and correction terms) and the count",
        "the bindings (the text's keys, the FTS5 match, the int8 query code); the weighted "
        "sum (bm25 over the best, the terms added) and sort in Python; the id list",
    )

    def __init__(
        self,
        *,
        key_k: int = 200,
        text_k: int = 50,
        dense_k: int = 50,
        key_weight: float = 2.0,
        text_weight: float = 1.0,
        dense_weight: float = 1.0,
        correction_weight: float = 0.5,
        recency_weight: float = 1.0,
        neighbour_weight: float = 0.8,
        neighbour_min_cosine: float = 0.2,
        neighbour_k: int = 20,
        keys: bool = True,
        gate: bool = True,
    ) -> None:
        super().__init__()
        counts = {"key_k": key_k, "text_k": text_k, "dense_k": dense_k, "neighbour_k": neighbour_k}
        for label, n in counts.items():
            if not isinstance(n, int) or isinstance(n, bool) or n < 1:
                raise ValueError(f"{label} must be an integer >= 1, got {n!r}")
        weights = {
            "key_weight": key_weight,
            "text_weight": text_weight,
            "dense_weight": dense_weight,
            "correction_weight": correction_weight,
            "recency_weight": recency_weight,
            "neighbour_weight": neighbour_weight,
        }
        for label, w in weights.items():
            if (
                isinstance(w, bool)
                or not isinstance(w, int | float)
                or not math.isfinite(w)
                or w < 0
            ):
                raise ValueError(f"{label} must be a finite number >= 0, got {w!r}")
        self.key_k, self.text_k, self.dense_k = int(key_k), int(text_k), int(dense_k)
        self.key_weight, self.text_weight = float(key_weight), float(text_weight)
        self.dense_weight, self.correction_weight = float(dense_weight), float(correction_weight)
        self.recency_weight = float(recency_weight)
        self.neighbour_weight, self.neighbour_k = float(neighbour_weight), int(neighbour_k)
        c = neighbour_min_cosine
        if isinstance(c, bool) or not isinstance(c, int | float) or not -1.0 <= c <= 1.0:
            raise ValueError(f"neighbour_min_cosine must be a number from -1 to 1, got {c!r}")
        self.neighbour_min_cosine = float(c)
        for label, flag in (("keys", keys), ("gate", gate)):
            if not isinstance(flag, bool):
                raise ValueError(f"{label} must be true or false, got {flag!r}")
        self.keys, self.gate = keys, gate
        self._sql_by_cond: dict[str, tuple[str, str, str, str]] = {}
        self._name_starts: frozenset[str] = frozenset()

    # ---------------------------------------------------------------------- build
    def build(
        self, corpus: base.Corpus, vectors: base.Embeddings, store_dir: Any
    ) -> base.BuildStats:
        """Build as every SQLite arm, then the ``entity_names`` table (timed as index).

        ``entity_names`` holds the name of each entity of ``corpus.entities`` (when
        given), spelled by :func:`name_key`; entity ids need no table (the keys branch
        looks them up in ``memory_entities``).

        Raises:
            ArmError: as :meth:`SqliteArm.build`, or when writing the names fails.
        """
        stats = super().build(corpus, vectors, store_dir)
        rows: dict[tuple[str, str], None] = {}
        ents = corpus.entities
        if ents is not None and {"entity_id", "name"} <= set(ents.columns):
            for eid, nm in ents.select("entity_id", "name").iter_rows():
                key = name_key(str(nm or ""))
                if eid is not None and key:
                    rows[(key, str(eid))] = None
        conn = self._db()
        t0 = time.perf_counter()
        try:
            with conn:
                conn.execute(ENTITY_NAMES_SQL)
                conn.executemany("INSERT INTO entity_names(name, entity_id) VALUES (?, ?)", rows)
        except apsw.Error as exc:
            self.close()
            raise base.ArmError(
                f"{self.name}: writing entity names into {store_dir} failed: {exc}"
            ) from exc
        self._name_starts = frozenset(name.split(" ", 1)[0] for name, _ in rows)
        return base.BuildStats(stats.ingest_ms, stats.index_ms + (time.perf_counter() - t0) * 1e3)

    def open(self, store_dir: Any) -> None:
        """Reopen the store as every SQLite arm; it must hold ``entity_names`` too.

        Raises:
            ArmError: as :meth:`SqliteArm.open`, or naming the path when the table is
                missing.
        """
        super().open(store_dir)
        have = {r[0] for r in self._db().execute("SELECT name FROM sqlite_schema")}
        if "entity_names" not in have:
            path = self._path
            self.close()
            raise base.ArmError(f"{self.name}: {path} lacks tables ['entity_names']")
        # the names are written once, by build: their first words filter the query's runs
        self._name_starts = frozenset(
            r[0].split(" ", 1)[0] for r in self._db().execute("SELECT name FROM entity_names")
        )

    def inert_ablations(self) -> dict[str, str]:
        """The ablations that cannot fire on the open store (:meth:`ArmBase.inert_ablations`).

        With no row in ``memory_entities`` the keys branch returns nothing for any text, so
        ``e`` is 0 everywhere: ``keys`` off, the ``gate`` off (the dense scan and the
        neighbours already run for every query) or ``recency_weight`` 0 (the term is
        ``recency_weight * e * r``) changes no answer. With no memory superseding another,
        ``c`` is 0 everywhere and ``correction_weight`` changes none. A variant is inert
        when every parameter it overrides is.

        Raises:
            ArmError: when the store is not open or cannot be read.
        """
        conn = self._db()
        try:
            links, corrections = conn.execute(
                "SELECT EXISTS (SELECT 1 FROM memory_entities), "
                "EXISTS (SELECT 1 FROM memories WHERE superseded_by IS NOT NULL)"
            ).fetchall()[0]
        except apsw.Error as exc:
            raise self._driver_error("reading what the ablations act on in", exc) from exc
        # the parameters whose mechanism has nothing to act on here, with why
        idle: dict[str, str] = {}
        if not links:
            why = "no memory is linked to an entity: the keys branch returns nothing"
            idle |= dict.fromkeys(("keys", "gate", "recency_weight"), why)
        if not corrections:
            idle["correction_weight"] = "no memory supersedes another: the correction lift is 0"
        return {
            variant: "; ".join(dict.fromkeys(idle[p] for p in overrides))
            for variant, overrides in self.ablations.items()
            if overrides and all(p in idle for p in overrides)
        }

    # ---------------------------------------------------------------------- query
    def _query_code(self, q: base.Query) -> bytes:
        """The query embedding's int8 codes (:func:`quantise_query`).

        Raises:
            ArmError: when the embedding is missing, not of size 384 or not finite.
        """
        v = q.embedding
        if not (type(v) is np.ndarray and v.dtype == np.float32 and v.shape == _QUERY_SHAPE):
            v = base.checked_vector(v, self.name, f"query {q.query_id!r}", base.VECTOR_DIM)
        try:
            return quantise_query(v)
        except ValueError:
            raise base.ArmError(
                f"{self.name}: query {q.query_id!r} embedding holds NaN or inf"
            ) from None

    def _sql(self, cond: str) -> tuple[str, str, str, str]:
        """The keys, text, dense and neighbour statements under ``cond``, composed once."""
        sql = self._sql_by_cond.get(cond)
        if sql is None:
            sql = self._sql_by_cond[cond] = branch_statements(cond)
        return sql

    def _statements(self, q: base.Query) -> dict[str, tuple[str, dict[str, Any]] | None]:
        """The statements whose bindings come from the query alone: keys, text, dense.

        ``text`` is ``None`` when the text has no search terms; ``dense`` runs only when
        the keys branch returns no memory (or the gate is off); ``neighbours`` is bound to
        its sources (``:src``) by :meth:`_gather`, and ``None`` when ``neighbour_weight``
        is 0.
        """
        cond, params = predicate_sql(q.filters)
        keys_sql, text_sql, dense_sql, nb_sql = self._sql(cond)
        names, ids = text_keys(q.text or "", self._name_starts)
        keys = (
            keys_sql,
            {**params, "names": json_words(names), "ids": json_words(ids), "kk": self.key_k},
        )
        match = fts5_match(q.text or "")
        text = None
        if match is not None:
            text = (text_sql, {**params, "match": match, "tk": self.text_k})
        q8 = self._query_code(q)
        dense = (dense_sql, {**params, "q8": q8, "dk": self.dense_k})
        nb = None
        if self.neighbour_weight > 0:
            nb = (
                nb_sql,
                {
                    **params,
                    "q8": q8,
                    "mc": self.neighbour_min_cosine,
                    "dw": self.dense_weight,
                    "cw": self.correction_weight,
                },
            )
        return {"keys": keys, "text": text, "dense": dense, "neighbours": nb}

    def _gather(self, stmts: dict[str, tuple[str, dict[str, Any]] | None]) -> dict[str, list[Any]]:
        """Run the statements of :meth:`_statements`; return their rows by branch.

        ``keys`` rows are ``(id, share of the named entities linked)`` (none when ``keys`` is
        off), ``text`` rows ``(id, -bm25)``, ``dense`` rows ``(id,)`` (none when the keys
        branch returned rows and ``gate`` is on); ``candidates`` rows
        (:data:`~agentmem.arms.sqlite.gated_sql.CANDIDATE_COLUMNS`) for every id the
        branches returned; ``neighbours`` rows
        the same plus the source's id, for the session neighbours of the first
        ``neighbour_k`` text and dense rows (none when the dense scan was gated off or
        ``neighbour_weight`` is 0).
        """
        conn = self._db()
        keys_stmt, text, dense = stmts["keys"], stmts["text"], stmts["dense"]
        keys = conn.execute(*keys_stmt).fetchall() if self.keys and keys_stmt else []
        out: dict[str, list[Any]] = {"keys": keys}
        out["text"] = conn.execute(*text).fetchall() if text is not None else []
        gated = bool(keys) and self.gate
        out["dense"] = conn.execute(*dense).fetchall() if dense is not None and not gated else []
        out["neighbours"] = []
        nb, nk = stmts.get("neighbours"), self.neighbour_k
        if nb is not None and not gated:
            src = list(dict.fromkeys(r[0] for r in (*out["text"][:nk], *out["dense"][:nk])))
            if src:
                nb_params = {**nb[1], "src": json.dumps(src)}
                out["neighbours"] = conn.execute(nb[0], nb_params).fetchall()
        ids = sorted({r[0] for branch in ("keys", "text", "dense") for r in out[branch]})
        out["candidates"] = []
        if ids:
            out["candidates"] = conn.execute(
                CANDIDATES_SQL,
                {
                    "q8": dense[1]["q8"] if dense else b"",
                    "ids": json.dumps(ids),
                    "dw": self.dense_weight,
                    "cw": self.correction_weight,
                },
            ).fetchall()
        return out

    def _fuse(self, rows: dict[str, list[Any]], k: int) -> list[str]:
        """The weighted-sum ranking of the gathered rows, cut to ``k`` (class docstring)."""
        cands = rows["candidates"]
        if not cands or k <= 0:
            return []
        e = dict(rows["keys"])
        text = rows["text"]
        best = max([r[1] for r in text], default=0.0)
        bm25 = dict(text) if best > 0 else {}  # t = bm25 / best: 0 without a positive best
        best = best if best > 0 else 1.0
        ndays = [r[2] for r in cands]  # -created_day
        d_lo = -max(ndays)
        d_span = -min(ndays) - d_lo
        kw, tw, rw = self.key_weight, self.text_weight, self.recency_weight
        e_get, b_get = e.get, bm25.get
        nb_rows = rows.get("neighbours")
        # the terms summed left to right as the class docstring writes them; the recency
        # term is 0 without a named entity (e = 0), so it is added only with one
        if not nb_rows:
            scored = []
            add = scored.append
            for i, mid, nday, nseq, dense, corr in cands:
                ek = e_get(i, 0.0)
                s = kw * ek + (tw * (b_get(i, 0.0) / best) + dense)
                s += corr
                if ek:
                    s += rw * ek * ((-nday - d_lo) / d_span if d_span > 0 else 0.0)
                add((-s, nday, nseq, mid))
            scored.sort()
            return [r[3] for r in scored[:k]]
        ranked: dict[int, tuple[float, int, int, str]] = {}
        evidence: dict[int, float] = {}
        for i, mid, nday, nseq, dense, corr in cands:
            ek = e_get(i, 0.0)
            ev = evidence[i] = tw * (b_get(i, 0.0) / best) + dense
            s = kw * ek + ev + corr
            if ek:
                s += rw * ek * ((-nday - d_lo) / d_span if d_span > 0 else 0.0)
            ranked[i] = (-s, nday, nseq, mid)
        nw = self.neighbour_weight
        for i, mid, nday, nseq, dense, corr, src in nb_rows:
            carried = -nw * evidence.get(src, 0.0)
            r = ranked.get(i)
            if r is None:  # not a candidate: its own cosine and correction lift
                ranked[i] = (min(-(dense + corr), carried), nday, nseq, mid)
            elif carried < r[0]:
                ranked[i] = (carried, r[1], r[2], r[3])
        return [r[3] for r in sorted(ranked.values())[:k]]

    def query(self, q: base.Query, k: int) -> base.Result:
        """Return at most ``k`` memory ids best first, plus the exact count if wanted.

        Hostile text or scope never raises: text naming nothing and holding no search
        terms is answered by the dense branch alone.

        Raises:
            ArmError: when the store is not open, the embedding is missing or malformed,
                or on an SQLite error.
        """
        conn = self._db()
        count = None
        try:  # inline, not _driver_failure: the message is built only on failure
            ids = self._fuse(self._gather(self._statements(q)), k) if k > 0 else []
            if q.wants_count:
                count = int(conn.execute(*self._count_sql(q)).fetchall()[0][0])
        except self.driver_errors as exc:
            raise self._driver_error(f"query {q.query_id!r} on", exc) from exc
        return base.Result(memory_ids=ids, count=count)

    def raw_query_call(self, q: base.Query, k: int) -> Callable[[], list[Any]]:
        """Return a zero-argument function making exactly the driver calls :meth:`query` makes.

        The statements and bindings are built here, once; each call runs them (the
        candidates' statement bound to the ids the branches returned) and returns the
        gathered rows by branch (``None`` when ``k <= 0``) and the count's rows (``[]``
        unless ``q.wants_count``), with no fusion.

        Raises:
            ArmError: when the store is not open or the embedding is malformed.
        """
        conn = self._db()
        stmts = self._statements(q)
        count = self._count_sql(q) if q.wants_count else None

        def call() -> list[Any]:
            rows = self._gather(stmts) if k > 0 else None
            return [rows, conn.execute(*count).fetchall() if count is not None else []]

        return call

    def raw_ids(self, raw: list[Any], k: int) -> list[str]:
        """Return the ids :meth:`query` makes of ``raw`` (:meth:`raw_query_call`'s output)."""
        return self._fuse(raw[0], k) if raw and raw[0] is not None else []

    def _plan_statements(
        self, q: base.Query, k: int
    ) -> list[tuple[str, tuple[str, dict[str, Any]] | None]]:
        """The keys (unless ``keys`` is off), text and dense statements for :meth:`explain`.

        The dense scan runs only when the keys branch returns no memory (or the gate is
        off); the candidates' cosine and supersession flags are then read by ``id``, and
        the neighbours of the first text and dense rows (not shown: both are bound to ids
        the others return).
        """
        stmts = self._statements(q)
        return [(n, stmts[n]) for n in ("keys", "text", "dense") if n != "keys" or self.keys]
