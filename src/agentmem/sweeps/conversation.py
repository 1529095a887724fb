"""Long-conversation token economics: three-tier memory vs append, vector RAG and FTS (issue 8).

The seed claims (REFERENCE §5) that three-tier memory (L1 working memory capped at 3,000
tokens, rolling summaries, vector L3) cuts the cumulative tokens of a 100-turn
conversation by 89.9 % against appending everything, caps the per-turn context near
3,250 tokens and lifts long-range recall from 68.4 % (vector only) to 96.8 %. This sweep
measures those three numbers.

**Simulated conversations.** A conversation is a stream of corpus memories in time order
(``seq``); the stream is cut into ``turns`` turns of ``memories_per_turn`` consecutive
memories each. Two ways to pick the stream (``sampling``):

* ``"window"`` (default): consecutive sessions — the stream starts at the first memory of
  a session drawn uniformly at random (seeded) among those leaving enough memories, and
  runs for ``turns * memories_per_turn`` memories. This is the corpus's own time line; a
  fact is mostly mentioned once within a window, and corrections (all written on the
  corpus's correction day) follow their originals only in windows spanning that day.
* ``"topics"``: the memories of a random set of facts ("topics": half of them facts that
  have a probe question, half not, interleaved) plus the distractors that mention their
  subjects, in time order, cut to length. Restatements and corrections of one fact then
  recur within the conversation over the whole simulated year.

**Probes.** At every turn ``t`` with ``t % probes_every == 0`` the agent is asked a probe
question about a fact first stated (its first memory in the stream) at least ``min_gap``
turns earlier. Probe questions are the corpus's own queries about a single fact (classes
:data:`PROBE_CLASSES`, with their stored embeddings; each fact has at most one). Choice
(seeded): a gap ``g`` is drawn uniformly from ``[min_gap, t - 1]`` and the probe asks about
the eligible fact first stated nearest to turn ``t - g`` (ties at random), so probe gaps
spread over the whole history (a fact may be probed again at a later turn); every third
probe prefers a fact corrected in the corpus, among those first a fact whose correction
was already seen. No eligible fact -> no probe at that turn. **Gold**: when the fact's
correction memory has been seen (its turn <= ``t``), the correction only (the fact's
*current* value); otherwise every memory of the fact seen so far (they all state the
value then current).

**Per turn** every strategy first receives the turn, then assembles its context for a
query: the probe question at probe turns, else the current turn's text (its vector: the
normalised mean of the turn's memory vectors — exactly the memory's vector for one
memory per turn; no model runs in the sweep).

* ``append``: the whole history, current turn included.
* ``vector-rag``: the ``k`` memories of the history before this turn with the highest
  cosine to the query (exact: an in-memory numpy matrix of unit vectors, dot product;
  ties newest first — HNSW could only lose recall), plus the current turn.
* ``sqlite-fts``: the ``k`` history memories ranked by FTS5 ``bm25`` (``porter
  unicode61``, match expression :func:`agentmem.arms.text.fts5_match`; ties newest first)
  in an apsw SQLite file under ``work_dir``, plus the current turn; text without terms
  retrieves nothing.
* ``three-tier``: :class:`~agentmem.arms.three_tier.ThreeTierArm` (one store under
  ``work_dir``, :meth:`~agentmem.arms.three_tier.ThreeTierArm.reset` between
  conversations) — every memory of the turn through ``ingest_turn`` (L1 capped at
  ``l1_max_tokens``, rolling compaction into L2 summaries by the deterministic
  :class:`~agentmem.summarise.ExtractiveSummariser` unless ``summariser`` says otherwise),
  then ``assemble_context(query, vector, k)``: all of L1 (current turn included), the
  arm's ``l2_context_nodes`` summary node(s) and the ``k`` nearest L3 memories.

**Measures** (one row per strategy x conversation x turn, :data:`CONVERSATION_SCHEMA`):
``context_tokens`` — o200k tokens of the assembled context (memory bodies: the corpus's
``tokens`` column; summaries: the arm's own count; separators not counted; the probe
question not counted); ``cumulative_tokens`` — running sum over the conversation's turns;
``probe`` — the probe's query id (null at other turns); ``probe_hit`` — whether a gold
memory is in the context (null at other turns): for ``three-tier`` a memory counts when it
is an L1 or L3 item, or when an L2 summary in the context *quotes* one of its sentences
(:func:`agentmem.summarise.split_sentences`; a summary merely covering a memory it does
not quote does not count); ``latency_ms`` — wall time to assemble the context (append:
joining the history; RAG: search plus joining; three-tier: the ``assemble_context`` call).

**Defaults exercise compaction.** Corpus memories are ~23 o200k tokens, so 100 one-memory
turns (~2,300 tokens) never fill a 3,000-token L1: the default is ``turns=300`` (about
6,800 tokens, two or three compactions) with the seed's ``l1_max_tokens=3000``. The
seed's turns are chat exchanges of several hundred tokens; ``memories_per_turn=25``
(~565 tokens per turn, one session's worth) with ``turns=100`` is the closer analogue.

:func:`run_conversations` also returns per-turn tier data for ``three-tier``
(:data:`TIER_SCHEMA`) and one row per probe (:data:`PROBE_SCHEMA`);
:func:`summarise_conversation` reduces the table (and those) per strategy beside
:data:`SEED_CLAIMS`.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import apsw
import numpy as np
import polars as pl

from agentmem.arms.text import fts5_match
from agentmem.arms.three_tier import TIERS, ThreeTierArm
from agentmem.corpus.io import load_corpus
from agentmem.embeddings import load_embeddings
from agentmem.summarise import split_sentences
from agentmem.tokens import count_tokens

#: Strategies in output order.
STRATEGIES: tuple[str, ...] = ("append", "vector-rag", "sqlite-fts", "three-tier")
#: Query classes whose questions are about one fact and can serve as probes.
PROBE_CLASSES: tuple[str, ...] = (
    "lexical",
    "semantic",
    "hybrid",
    "currency",
    "negation",
    "aggregate",
)
#: Ways to pick a conversation's memories (module docstring).
SAMPLINGS: tuple[str, ...] = ("window", "topics")
#: The seed's claims (REFERENCE §5): cumulative tokens vs append (%), per-turn cap
#: (tokens), long-range recall of three-tier and of vector-only memory, and latency
#: budgets per tier (ms; L2 and L3 as ranges).
SEED_CLAIMS: dict[str, Any] = {
    "tokens_vs_append_pct": -89.9,
    "context_cap_tokens": 3250,
    "long_range_recall": 0.968,
    "vector_only_recall": 0.684,
    "l1_ms": (0.0, 2.0),
    "l2_ms": (5.0, 15.0),
    "l3_ms": (15.0, 40.0),
}
#: Columns of the per-turn table (``results/sweeps/conversation.csv``).
CONVERSATION_SCHEMA: dict[str, pl.DataType] = {
    "strategy": pl.String,
    "conversation": pl.Int64,
    "turn": pl.Int64,
    "context_tokens": pl.Int64,
    "cumulative_tokens": pl.Int64,
    "probe": pl.String,
    "probe_hit": pl.Boolean,
    "latency_ms": pl.Float64,
}
#: Per-turn tier data of ``three-tier``: tokens per tier in the context, assemble time per
#: tier, ingest time per tier (summed over the turn's memories), L2 nodes written, and at
#: probe turns the tiers holding a gold memory (space-separated, ``""`` for a miss; null
#: at other turns).
TIER_SCHEMA: dict[str, pl.DataType] = {
    "conversation": pl.Int64,
    "turn": pl.Int64,
    "l1_tokens": pl.Int64,
    "l2_tokens": pl.Int64,
    "l3_tokens": pl.Int64,
    "l1_ms": pl.Float64,
    "l2_ms": pl.Float64,
    "l3_ms": pl.Float64,
    "ingest_l1_ms": pl.Float64,
    "ingest_l2_ms": pl.Float64,
    "ingest_l3_ms": pl.Float64,
    "compactions": pl.Int64,
    "hit_tiers": pl.String,
}
#: One row per probe: the question, its fact, the turn the fact was first stated and the
#: gap in turns, ``gold_tokens_since`` (o200k tokens from the newest gold memory through
#: the end of the probe turn: when it exceeds ``l1_max_tokens``, ``beyond_l1``, no gold
#: memory can still be in three-tier's L1), whether the fact is corrected in the corpus and
#: whether that correction was seen by the probe turn, the gold ids (space-separated).
PROBE_SCHEMA: dict[str, pl.DataType] = {
    "conversation": pl.Int64,
    "turn": pl.Int64,
    "probe": pl.String,
    "query_class": pl.String,
    "fact_id": pl.String,
    "first_turn": pl.Int64,
    "gap": pl.Int64,
    "gold_tokens_since": pl.Int64,
    "beyond_l1": pl.Boolean,
    "corrected": pl.Boolean,
    "correction_seen": pl.Boolean,
    "gold": pl.String,
}


# ------------------------------------------------------------------------ inputs
@dataclass(frozen=True)
class ProbeQuestion:
    """A corpus query usable as a probe.

    Attributes:
        query_id: id in ``queries.parquet``.
        query_class: its class (one of :data:`PROBE_CLASSES`).
        text: the question.
        vector: its stored embedding, float32 ``(384,)``.
        fact_id: the one fact all its qrels belong to.
    """

    query_id: str
    query_class: str
    text: str
    vector: np.ndarray
    fact_id: str


def probe_questions(
    memories: pl.DataFrame, queries: pl.DataFrame, qrels: pl.DataFrame, vectors: Any
) -> dict[str, ProbeQuestion]:
    """Map each fact that has a single-fact corpus query to that query.

    A query qualifies when its class is in :data:`PROBE_CLASSES` and all its relevant
    memories belong to one fact (the corpus draws each fact for at most one query; should
    two qualify, the smaller query id wins).

    Args:
        memories: corpus memories (memory_id, fact_id).
        queries: ``queries.parquet`` rows (query_id, class, text).
        qrels: ``qrels.parquet`` rows (query_id, memory_id).
        vectors: :class:`~agentmem.arms.base.Embeddings` holding the query ids.

    Returns:
        ``{fact_id: ProbeQuestion}``.

    Raises:
        KeyError: when a qualifying query has no embedding.
    """
    facts = (
        qrels.join(memories.select("memory_id", "fact_id"), on="memory_id", how="left")
        .group_by("query_id")
        .agg(n=pl.col("fact_id").n_unique(), fact_id=pl.col("fact_id").first())
        .filter((pl.col("n") == 1) & pl.col("fact_id").is_not_null())
    )
    q = (
        queries.filter(pl.col("class").is_in(PROBE_CLASSES))
        .join(facts.select("query_id", "fact_id"), on="query_id", how="inner")
        .sort("query_id")
    )
    out: dict[str, ProbeQuestion] = {}
    for row in q.iter_rows(named=True):
        if row["fact_id"] in out:
            continue
        vec = np.asarray(vectors.get([row["query_id"]])[0], dtype=np.float32)
        out[row["fact_id"]] = ProbeQuestion(
            row["query_id"], row["class"], row["text"], vec, row["fact_id"]
        )
    return out


def _window_stream(memories: pl.DataFrame, n: int, rng: random.Random) -> pl.DataFrame:
    """Return ``n`` consecutive memories starting at a random session start (seq order)."""
    mem = memories.sort("seq")
    if mem.height < n:
        raise ValueError(f"the corpus has {mem.height} memories; a conversation needs {n}")
    sid = mem["session_id"].to_list()
    starts = [i for i in range(mem.height - n + 1) if i == 0 or sid[i] != sid[i - 1]]
    return mem.slice(rng.choice(starts), n)


def _topic_stream(
    memories: pl.DataFrame,
    n: int,
    rng: random.Random,
    probeable: set[str],
    subject_of: Mapping[str, str],
) -> pl.DataFrame:
    """Return the first ``n`` memories (seq order) of randomly chosen facts and their distractors.

    Facts are taken alternately from a shuffled list of probe-able facts and a shuffled
    list of the others; each brings all its memories and the fact-less memories whose
    ``entity_ids`` name its subject; facts are added until ``n`` memories are selected.

    Raises:
        ValueError: when all facts together give fewer than ``n`` memories.
    """
    mem = memories.sort("seq")
    fact = mem["fact_id"].to_list()
    ents = mem["entity_ids"].to_list()
    by_fact: dict[str, list[int]] = {}
    by_entity: dict[str, list[int]] = {}
    for i, (f, es) in enumerate(zip(fact, ents, strict=True)):
        if f is not None:
            by_fact.setdefault(f, []).append(i)
        else:
            for e in es or []:
                by_entity.setdefault(e, []).append(i)
    with_q = sorted(f for f in by_fact if f in probeable)
    without = sorted(f for f in by_fact if f not in probeable)
    rng.shuffle(with_q)
    rng.shuffle(without)
    order: list[str] = []
    for i in range(max(len(with_q), len(without))):
        order += [x[i] for x in (with_q, without) if i < len(x)]
    chosen: set[int] = set()
    for f in order:
        if len(chosen) >= n:
            break
        chosen.update(by_fact[f])
        chosen.update(by_entity.get(subject_of.get(f, ""), []))
    if len(chosen) < n:
        raise ValueError(
            f"the corpus's facts give {len(chosen)} memories; a conversation needs {n}"
        )
    return mem[sorted(chosen)[:n]]


@dataclass
class _Conversation:
    """One simulated conversation (internal)."""

    index: int
    rows: list[dict[str, Any]]  # memory rows in stream order
    ids: list[str]
    bodies: list[str]
    tokens: np.ndarray  # int64 (n,)
    vectors: np.ndarray  # float32 (n, 384)
    turn_of: list[int]  # 1-based turn of each stream position
    turns: list[range]  # stream positions of turn t at index t - 1
    probes: dict[int, tuple[ProbeQuestion, frozenset[str], dict[str, Any]]] = field(
        default_factory=dict
    )  # turn -> (question, gold ids, probe row)


def _schedule_probes(
    conv: _Conversation,
    questions: Mapping[str, ProbeQuestion],
    correction_of: Mapping[str, str],
    probes_every: int,
    min_gap: int,
    l1_max_tokens: int,
    rng: random.Random,
) -> None:
    """Fill ``conv.probes`` (rules in the module docstring)."""
    first: dict[str, int] = {}
    seen_at: dict[str, int] = {}
    fact_mems: dict[str, list[tuple[int, str, int]]] = {}
    for pos, row in enumerate(conv.rows):
        f = row["fact_id"]
        t = conv.turn_of[pos]
        seen_at.setdefault(row["memory_id"], t)
        if f is not None:
            first.setdefault(f, t)
            fact_mems.setdefault(f, []).append((t, row["memory_id"], pos))
    cum = np.concatenate([[0], np.cumsum(conv.tokens)])
    n_probes = 0
    for t in range(1, len(conv.turns) + 1):
        if t % probes_every:
            continue
        eligible = sorted(f for f in questions if f in first and first[f] <= t - min_gap)
        if not eligible:
            continue

        def corr_seen(f: str, t: int = t) -> bool:
            c = correction_of.get(f)
            return c is not None and seen_at.get(c, t + 1) <= t

        pool = eligible
        if n_probes % 3 == 2:
            pool = (
                [f for f in pool if corr_seen(f)] or [f for f in pool if f in correction_of] or pool
            )
        # gap drawn uniformly; the pool fact first stated nearest that many turns ago
        target = t - rng.randint(min_gap, t - 1) if t - 1 >= min_gap else 1
        best = min(abs(first[f] - target) for f in pool)
        f = rng.choice([f for f in pool if abs(first[f] - target) == best])
        n_probes += 1
        q = questions[f]
        seen = corr_seen(f)
        gold_pos = (
            [p for _, m, p in fact_mems[f] if m == correction_of[f] and seen_at[m] <= t]
            if seen
            else [p for tt, m, p in fact_mems[f] if tt <= t and m != correction_of.get(f)]
        )
        gold = frozenset(conv.ids[p] for p in gold_pos)
        since = int(cum[conv.turns[t - 1].stop] - cum[max(gold_pos)])
        conv.probes[t] = (
            q,
            gold,
            {
                "conversation": conv.index,
                "turn": t,
                "probe": q.query_id,
                "query_class": q.query_class,
                "fact_id": f,
                "first_turn": first[f],
                "gap": t - first[f],
                "gold_tokens_since": since,
                "beyond_l1": since > l1_max_tokens,
                "corrected": f in correction_of,
                "correction_seen": seen,
                "gold": " ".join(sorted(gold)),
            },
        )


# -------------------------------------------------------------------- strategies
@dataclass
class _Context:
    """What a strategy put into the context for one turn (internal)."""

    ids: set[str]
    tokens: int
    latency_ms: float
    tier: dict[str, Any] | None = None


class _Strategy(Protocol):
    """A context-assembly strategy driven turn by turn (internal)."""

    name: str

    def begin(self, conv: _Conversation) -> None: ...

    def add_turn(self, t: int) -> None: ...

    def context(self, t: int, text: str, vec: np.ndarray) -> _Context: ...

    def close(self) -> None: ...


class _Append:
    """Infinite append: the whole history is the context."""

    name = "append"

    def begin(self, conv: _Conversation) -> None:
        self.c = conv
        self.cum = np.concatenate([[0], np.cumsum(conv.tokens)])

    def add_turn(self, t: int) -> None:
        pass

    def context(self, t: int, text: str, vec: np.ndarray) -> _Context:
        end = self.c.turns[t - 1].stop
        t0 = time.perf_counter()
        prompt = "\n".join(self.c.bodies[:end])
        ms = (time.perf_counter() - t0) * 1e3
        del prompt
        return _Context(set(self.c.ids[:end]), int(self.cum[end]), ms)

    def close(self) -> None:
        pass


class _VectorRag:
    """Top-k history memories by exact cosine (numpy), plus the current turn."""

    name = "vector-rag"

    def __init__(self, k: int) -> None:
        self.k = k

    def begin(self, conv: _Conversation) -> None:
        self.c = conv

    def add_turn(self, t: int) -> None:
        pass

    def context(self, t: int, text: str, vec: np.ndarray) -> _Context:
        cur = self.c.turns[t - 1]
        h = cur.start
        t0 = time.perf_counter()
        picked: list[int] = []
        if h and self.k:
            sims = self.c.vectors[:h] @ vec
            # best first; ties newest first (larger stream position)
            order = np.lexsort((-np.arange(h), -sims))
            picked = [int(i) for i in order[: self.k]]
        pos = picked + list(cur)
        prompt = "\n".join(self.c.bodies[i] for i in pos)
        ms = (time.perf_counter() - t0) * 1e3
        del prompt
        return _Context({self.c.ids[i] for i in pos}, int(self.c.tokens[pos].sum()), ms)

    def close(self) -> None:
        pass


class _SqliteFts:
    """Top-k history memories by FTS5 bm25 in an apsw SQLite file, plus the current turn."""

    name = "sqlite-fts"

    def __init__(self, k: int, path: Path) -> None:
        self.k = k
        path.parent.mkdir(parents=True, exist_ok=True)
        for suffix in ("", "-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)
        self.db = apsw.Connection(str(path))
        self.db.execute("PRAGMA journal_mode=WAL").fetchall()
        self.db.execute("PRAGMA synchronous=NORMAL")

    def begin(self, conv: _Conversation) -> None:
        self.c = conv
        self.db.execute(
            "DROP TABLE IF EXISTS turns_fts; DROP TABLE IF EXISTS turns; "
            "CREATE TABLE turns(id INTEGER PRIMARY KEY, memory_id TEXT NOT NULL, "
            "body TEXT NOT NULL); "
            "CREATE VIRTUAL TABLE turns_fts USING fts5(body, content='turns', "
            "content_rowid='id', tokenize='porter unicode61');"
        )

    def add_turn(self, t: int) -> None:
        rows = [(i + 1, self.c.ids[i], self.c.bodies[i]) for i in self.c.turns[t - 1]]
        with self.db:
            self.db.executemany("INSERT INTO turns(id, memory_id, body) VALUES (?, ?, ?)", rows)
            self.db.executemany(
                "INSERT INTO turns_fts(rowid, body) VALUES (?, ?)", [(r[0], r[2]) for r in rows]
            )

    def context(self, t: int, text: str, vec: np.ndarray) -> _Context:
        cur = self.c.turns[t - 1]
        t0 = time.perf_counter()
        match = fts5_match(text)
        picked: list[int] = []
        if match is not None and cur.start and self.k:
            picked = [
                int(r[0]) - 1
                for r in self.db.execute(
                    "SELECT t.id FROM turns_fts JOIN turns AS t ON t.id = turns_fts.rowid "
                    "WHERE turns_fts MATCH ? AND t.id <= ? "
                    "ORDER BY bm25(turns_fts), t.id DESC LIMIT ?",
                    (match, cur.start, self.k),
                )
            ]
        pos = picked + list(cur)
        prompt = "\n".join(self.c.bodies[i] for i in pos)
        ms = (time.perf_counter() - t0) * 1e3
        del prompt
        return _Context({self.c.ids[i] for i in pos}, int(self.c.tokens[pos].sum()), ms)

    def close(self) -> None:
        self.db.close()


class _ThreeTier:
    """The three-tier arm driven turn by turn (``ingest_turn`` / ``assemble_context``)."""

    name = "three-tier"

    def __init__(self, k: int, store_dir: Path, params: Mapping[str, Any]) -> None:
        self.k = k
        self.arm = ThreeTierArm(**params)
        self.arm.create(store_dir)
        self.ingest_ms = {tier: 0.0 for tier in TIERS}
        self.compactions = 0

    def begin(self, conv: _Conversation) -> None:
        self.c = conv
        self.arm.reset()
        self.sentences = {m: split_sentences(b) for m, b in zip(conv.ids, conv.bodies, strict=True)}

    def add_turn(self, t: int) -> None:
        self.ingest_ms = {tier: 0.0 for tier in TIERS}
        self.compactions = 0
        for i in self.c.turns[t - 1]:
            ev = self.arm.ingest_turn(self.c.rows[i], self.c.vectors[i])
            for tier in TIERS:
                self.ingest_ms[tier] += ev.latency_ms.get(tier, 0.0)
            self.compactions += len(ev.compactions)

    def context(self, t: int, text: str, vec: np.ndarray) -> _Context:
        t0 = time.perf_counter()
        ctx = self.arm.assemble_context(text, vec, self.k)
        ms = (time.perf_counter() - t0) * 1e3
        by_tier: dict[str, set[str]] = {tier: set() for tier in TIERS}
        for it in ctx.items:
            if it.tier == "L2":
                by_tier["L2"].update(
                    m for m in it.memory_ids if any(s in it.text for s in self.sentences.get(m, ()))
                )
            else:
                by_tier[it.tier].update(it.memory_ids)
        ids = set().union(*by_tier.values())
        probe = self.c.probes.get(t)
        hit_tiers = " ".join(tier for tier in TIERS if by_tier[tier] & probe[1]) if probe else None
        tier = {
            "l1_tokens": ctx.tokens["L1"],
            "l2_tokens": ctx.tokens["L2"],
            "l3_tokens": ctx.tokens["L3"],
            "l1_ms": ctx.latency_ms["L1"],
            "l2_ms": ctx.latency_ms["L2"],
            "l3_ms": ctx.latency_ms["L3"],
            "ingest_l1_ms": self.ingest_ms["L1"],
            "ingest_l2_ms": self.ingest_ms["L2"],
            "ingest_l3_ms": self.ingest_ms["L3"],
            "compactions": self.compactions,
            "hit_tiers": hit_tiers,
        }
        return _Context(ids, ctx.total_tokens, ms, tier)

    def close(self) -> None:
        self.arm.close()


# --------------------------------------------------------------------------- run
@dataclass
class ConversationRun:
    """Everything one :func:`run_conversations` measured.

    Attributes:
        table: per strategy x conversation x turn (:data:`CONVERSATION_SCHEMA`).
        tiers: per conversation x turn of ``three-tier`` (:data:`TIER_SCHEMA`; empty when
            ``three-tier`` did not run).
        probes: one row per probe (:data:`PROBE_SCHEMA`).
    """

    table: pl.DataFrame
    tiers: pl.DataFrame
    probes: pl.DataFrame


def _check_int(name: str, value: Any, minimum: int) -> int:
    """Return ``value`` if it is an int ``>= minimum``, else raise ``ValueError`` naming it."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


def run_conversations(
    corpus_dir: str | Path,
    embeddings_path: str | Path,
    work_dir: str | Path,
    conversations: int = 3,
    turns: int = 300,
    probes_every: int = 10,
    min_gap: int = 20,
    seed: int = 0,
    l1_max_tokens: int = 3000,
    k: int = 5,
    *,
    memories_per_turn: int = 1,
    sampling: str = "window",
    summariser: str = "extractive",
    three_tier_params: Mapping[str, Any] | None = None,
    strategies: tuple[str, ...] = STRATEGIES,
) -> ConversationRun:
    """Simulate the conversations and measure every strategy (module docstring).

    Args:
        corpus_dir: corpus directory (memories, facts, queries, qrels Parquet files).
        embeddings_path: embeddings Parquet holding every memory and query id.
        work_dir: scratch directory for the ``sqlite-fts`` file and the ``three-tier``
            store (its embedded PostgreSQL is stopped before returning).
        conversations: number of conversations (>= 1).
        turns: turns per conversation (>= 1); default 300 so that L1 compacts.
        probes_every: a probe is attempted at every turn divisible by this (>= 1).
        min_gap: a probed fact was first stated at least this many turns earlier (>= 1).
        seed: seeds the stream choice and the probe draws (conversation ``c`` uses
            ``random.Random(seed * 1000 + c)``).
        l1_max_tokens: three-tier's L1 cap in o200k tokens (seed: 3,000).
        k: memories retrieved by the RAG strategies and from L3 (seed: 5).
        memories_per_turn: corpus memories per turn (>= 1).
        sampling: ``"window"`` or ``"topics"`` (:data:`SAMPLINGS`).
        summariser: three-tier's summariser (``"extractive"``: deterministic, offline).
        three_tier_params: further :class:`~agentmem.arms.three_tier.ThreeTierArm`
            parameters (``l1_max_tokens`` and ``summariser`` arguments win).
        strategies: subset of :data:`STRATEGIES` to run.

    Returns:
        :class:`ConversationRun`.

    Raises:
        ValueError: on a parameter out of range, an unknown strategy or sampling, or a
            corpus too small for one conversation.
        agentmem.arms.base.ArmError: when the three-tier store fails.
    """
    conversations = _check_int("conversations", conversations, 1)
    turns = _check_int("turns", turns, 1)
    probes_every = _check_int("probes_every", probes_every, 1)
    min_gap = _check_int("min_gap", min_gap, 1)
    k = _check_int("k", k, 0)
    memories_per_turn = _check_int("memories_per_turn", memories_per_turn, 1)
    if sampling not in SAMPLINGS:
        raise ValueError(f"sampling must be one of {SAMPLINGS}, got {sampling!r}")
    unknown = [s for s in strategies if s not in STRATEGIES]
    if unknown or not strategies:
        raise ValueError(f"unknown strategies {unknown}; choose from {STRATEGIES}")
    corpus_dir, work_dir = Path(corpus_dir), Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)

    corpus = load_corpus(corpus_dir)
    memories = corpus.memories
    if "tokens" not in memories.columns:
        memories = memories.with_columns(
            tokens=pl.Series(count_tokens(memories["body"].to_list()), dtype=pl.Int32)
        )
    vectors = load_embeddings(embeddings_path)
    questions = probe_questions(
        memories,
        pl.read_parquet(corpus_dir / "queries.parquet"),
        pl.read_parquet(corpus_dir / "qrels.parquet"),
        vectors,
    )
    sup = memories.filter(pl.col("superseded_by").is_not_null())
    correction_of = {
        f: c for f, c in zip(sup["fact_id"], sup["superseded_by"], strict=True) if f is not None
    }
    subject_of: dict[str, str] = {}
    if corpus.facts is not None and "subject_id" in corpus.facts.columns:
        subject_of = dict(zip(corpus.facts["fact_id"], corpus.facts["subject_id"], strict=True))

    n = turns * memories_per_turn
    convs: list[_Conversation] = []
    for c in range(conversations):
        rng = random.Random(seed * 1000 + c)
        if sampling == "window":
            stream = _window_stream(memories, n, rng)
        else:
            stream = _topic_stream(memories, n, rng, set(questions), subject_of)
        ids = stream["memory_id"].to_list()
        conv = _Conversation(
            index=c,
            rows=list(stream.iter_rows(named=True)),
            ids=ids,
            bodies=stream["body"].to_list(),
            tokens=stream["tokens"].cast(pl.Int64).to_numpy(),
            vectors=np.ascontiguousarray(vectors.get(ids), dtype=np.float32),
            turn_of=[i // memories_per_turn + 1 for i in range(n)],
            turns=[range(t * memories_per_turn, (t + 1) * memories_per_turn) for t in range(turns)],
        )
        _schedule_probes(conv, questions, correction_of, probes_every, min_gap, l1_max_tokens, rng)
        convs.append(conv)

    made: list[_Strategy] = []
    rows: list[dict[str, Any]] = []
    tier_rows: list[dict[str, Any]] = []
    try:
        for name in STRATEGIES:
            if name not in strategies:
                continue
            if name == "append":
                made.append(_Append())
            elif name == "vector-rag":
                made.append(_VectorRag(k))
            elif name == "sqlite-fts":
                made.append(_SqliteFts(k, work_dir / "sqlite-fts" / "turns.db"))
            else:
                params = {
                    **dict(three_tier_params or {}),
                    "l1_max_tokens": l1_max_tokens,
                    "summariser": summariser,
                }
                made.append(_ThreeTier(k, work_dir / "three-tier", params))
        for strat in made:
            for conv in convs:
                strat.begin(conv)
                cum = 0
                for t in range(1, turns + 1):
                    strat.add_turn(t)
                    probe = conv.probes.get(t)
                    if probe is not None:
                        text, vec = probe[0].text, probe[0].vector
                    else:
                        cur = conv.turns[t - 1]
                        text = "\n".join(conv.bodies[i] for i in cur)
                        vec = conv.vectors[cur.start : cur.stop].mean(axis=0)
                        norm = float(np.linalg.norm(vec))
                        vec = (vec / norm if norm > 0 else vec).astype(np.float32)
                    ctx = strat.context(t, text, vec)
                    cum += ctx.tokens
                    rows.append(
                        {
                            "strategy": strat.name,
                            "conversation": conv.index,
                            "turn": t,
                            "context_tokens": ctx.tokens,
                            "cumulative_tokens": cum,
                            "probe": probe[0].query_id if probe else None,
                            "probe_hit": bool(ctx.ids & probe[1]) if probe else None,
                            "latency_ms": ctx.latency_ms,
                        }
                    )
                    if ctx.tier is not None:
                        tier_rows.append({"conversation": conv.index, "turn": t, **ctx.tier})
    finally:
        for strat in made:
            strat.close()
    probe_rows = [p[2] for conv in convs for _, p in sorted(conv.probes.items())]
    return ConversationRun(
        table=pl.DataFrame(rows, schema=CONVERSATION_SCHEMA, orient="row"),
        tiers=pl.DataFrame(tier_rows, schema=TIER_SCHEMA, orient="row"),
        probes=pl.DataFrame(probe_rows, schema=PROBE_SCHEMA, orient="row"),
    )


def conversation_sweep(
    corpus_dir: str | Path,
    embeddings_path: str | Path,
    work_dir: str | Path,
    conversations: int = 3,
    turns: int = 300,
    probes_every: int = 10,
    min_gap: int = 20,
    seed: int = 0,
    l1_max_tokens: int = 3000,
    k: int = 5,
    **options: Any,
) -> pl.DataFrame:
    """Return the per-turn table of :func:`run_conversations` (:data:`CONVERSATION_SCHEMA`).

    Columns ``strategy, conversation, turn, context_tokens, cumulative_tokens, probe,
    probe_hit, latency_ms``; one row per strategy x conversation x turn (strategies in
    :data:`STRATEGIES` order, conversations from 0, turns from 1). Defaults: 300 one-memory
    turns and the seed's 3,000-token L1, so that L1 compacts (module docstring).

    Args:
        corpus_dir: corpus directory.
        embeddings_path: embeddings Parquet.
        work_dir: scratch directory for the stores.
        conversations: number of conversations.
        turns: turns per conversation.
        probes_every: probe attempt period in turns.
        min_gap: minimum turns between a fact's first statement and its probe.
        seed: RNG seed.
        l1_max_tokens: three-tier's L1 cap (o200k tokens).
        k: memories retrieved by RAG and from L3.
        **options: keyword options of :func:`run_conversations` (``memories_per_turn``,
            ``sampling``, ``summariser``, ``three_tier_params``, ``strategies``).

    Raises:
        ValueError: as :func:`run_conversations`.
    """
    return run_conversations(
        corpus_dir,
        embeddings_path,
        work_dir,
        conversations,
        turns,
        probes_every,
        min_gap,
        seed,
        l1_max_tokens,
        k,
        **options,
    ).table


# ------------------------------------------------------------------------ summary
#: Columns of :func:`summarise_conversation`.
SUMMARY_SCHEMA: dict[str, pl.DataType] = {
    "strategy": pl.String,
    "conversations": pl.Int64,
    "turns": pl.Int64,
    "cumulative_tokens": pl.Int64,
    "tokens_vs_append_pct": pl.Float64,
    "max_context_tokens": pl.Int64,
    "p95_context_tokens": pl.Float64,
    "mean_context_tokens": pl.Float64,
    "probes": pl.Int64,
    "long_range_recall": pl.Float64,
    "beyond_l1_probes": pl.Int64,
    "beyond_l1_recall": pl.Float64,
    "corrected_probes": pl.Int64,
    "corrected_recall": pl.Float64,
    "p50_latency_ms": pl.Float64,
    "p95_latency_ms": pl.Float64,
    "p50_l1_ms": pl.Float64,
    "p50_l2_ms": pl.Float64,
    "p50_l3_ms": pl.Float64,
}


def summarise_conversation(
    df: pl.DataFrame,
    tiers: pl.DataFrame | None = None,
    probes: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Reduce the per-turn table to one row per strategy (:data:`SUMMARY_SCHEMA`).

    Definitions (per strategy, over all its conversations):

    - ``cumulative_tokens``: sum over conversations of the last turn's cumulative tokens;
    - ``tokens_vs_append_pct = 100 * (cumulative_tokens / cumulative_tokens(append) - 1)``
      (negative = fewer tokens; the seed claims -89.9 for three-tier; null without an
      ``append`` row);
    - ``max_context_tokens`` / ``p95_context_tokens`` / ``mean_context_tokens``: of the
      per-turn context (the cap actually reached; the seed claims ~3,250);
    - ``long_range_recall``: share of probes with ``probe_hit`` (seed: 0.968 three-tier,
      0.684 vector only);
    - ``beyond_l1_probes`` / ``beyond_l1_recall``: probes whose gold had left any L1 of
      ``l1_max_tokens`` (``beyond_l1`` in ``probes``) and their hit share — for
      ``three-tier`` these must come from L2 or L3 (null without ``probes``);
    - ``corrected_probes`` / ``corrected_recall``: probes whose fact's correction had been
      seen (gold = the correction), and their hit share (null without ``probes``, or no
      such probe);
    - ``p50_latency_ms`` / ``p95_latency_ms``: context assembly time per turn;
    - ``p50_l1_ms`` / ``p50_l2_ms`` / ``p50_l3_ms``: for ``three-tier`` only (from
      ``tiers``), the median assembly time of each tier (seed budgets: L1 < 2, L2 5-15,
      L3 15-40 ms); null otherwise.

    Args:
        df: the per-turn table (:data:`CONVERSATION_SCHEMA`).
        tiers: optional :attr:`ConversationRun.tiers`.
        probes: optional :attr:`ConversationRun.probes`.

    Returns:
        One row per strategy, in the order they first appear in ``df``.
    """
    order = list(dict.fromkeys(df["strategy"].to_list()))
    last = df.group_by("strategy", "conversation").agg(pl.col("cumulative_tokens").max())
    cum = dict(last.group_by("strategy").agg(pl.col("cumulative_tokens").sum()).iter_rows())
    seen = beyond = None
    if probes is not None:
        seen = probes.filter(pl.col("correction_seen")).select("conversation", "turn")
        beyond = probes.filter(pl.col("beyond_l1")).select("conversation", "turn")
    tier_p50: dict[str, float | None] = {"L1": None, "L2": None, "L3": None}
    if tiers is not None and tiers.height:
        for tier in TIERS:
            tier_p50[tier] = float(tiers[f"{tier.lower()}_ms"].quantile(0.5, "linear"))
    out = []
    for s in order:
        d = df.filter(pl.col("strategy") == s)
        pr = d.filter(pl.col("probe").is_not_null())
        corr = pr.join(seen, on=["conversation", "turn"]) if seen is not None else pr.clear()
        far = pr.join(beyond, on=["conversation", "turn"]) if beyond is not None else pr.clear()
        base = cum.get("append")
        out.append(
            {
                "strategy": s,
                "conversations": d["conversation"].n_unique(),
                "turns": d.height // max(d["conversation"].n_unique(), 1),
                "cumulative_tokens": int(cum[s]),
                "tokens_vs_append_pct": (100.0 * (cum[s] / base - 1.0)) if base else None,
                "max_context_tokens": int(d["context_tokens"].max()),
                "p95_context_tokens": float(d["context_tokens"].quantile(0.95, "linear")),
                "mean_context_tokens": float(d["context_tokens"].mean()),
                "probes": pr.height,
                "long_range_recall": float(pr["probe_hit"].mean()) if pr.height else None,
                "beyond_l1_probes": far.height if probes is not None else None,
                "beyond_l1_recall": float(far["probe_hit"].mean()) if far.height else None,
                "corrected_probes": corr.height if probes is not None else None,
                "corrected_recall": float(corr["probe_hit"].mean()) if corr.height else None,
                "p50_latency_ms": float(d["latency_ms"].quantile(0.5, "linear")),
                "p95_latency_ms": float(d["latency_ms"].quantile(0.95, "linear")),
                "p50_l1_ms": tier_p50["L1"] if s == "three-tier" else None,
                "p50_l2_ms": tier_p50["L2"] if s == "three-tier" else None,
                "p50_l3_ms": tier_p50["L3"] if s == "three-tier" else None,
            }
        )
    return pl.DataFrame(out, schema=SUMMARY_SCHEMA, orient="row")


#: Columns of :func:`summarise_tiers`.
TIER_SUMMARY_SCHEMA: dict[str, pl.DataType] = {
    "tier": pl.String,
    "p50_assemble_ms": pl.Float64,
    "p95_assemble_ms": pl.Float64,
    "p50_ingest_ms": pl.Float64,
    "p95_ingest_ms": pl.Float64,
    "mean_tokens": pl.Float64,
    "max_tokens": pl.Int64,
    "claimed_ms": pl.String,
}


def summarise_tiers(tiers: pl.DataFrame) -> pl.DataFrame:
    """Per-tier latency and context share of ``three-tier`` (:data:`TIER_SUMMARY_SCHEMA`).

    ``*_assemble_ms``: time of the tier's part of ``assemble_context`` per turn;
    ``*_ingest_ms``: time the tier spent ingesting the turn's memories (``L2`` is the
    compaction: summarising and node writes, 0 at turns without one; ``L3`` includes the
    duplicate-id lookup and the eviction inserts); ``mean_tokens``/``max_tokens``: the
    tier's tokens in the context; ``claimed_ms``: the seed's budget (REFERENCE §5).

    Args:
        tiers: :attr:`ConversationRun.tiers`.

    Returns:
        Rows ``L1``, ``L2``, ``L3`` (empty when ``tiers`` is empty).
    """
    out = []
    if tiers.height:
        for tier in TIERS:
            lo, hi = SEED_CLAIMS[f"{tier.lower()}_ms"]
            a = tiers[f"{tier.lower()}_ms"]
            i = tiers[f"ingest_{tier.lower()}_ms"]
            tok = tiers[f"{tier.lower()}_tokens"]
            out.append(
                {
                    "tier": tier,
                    "p50_assemble_ms": float(a.quantile(0.5, "linear")),
                    "p95_assemble_ms": float(a.quantile(0.95, "linear")),
                    "p50_ingest_ms": float(i.quantile(0.5, "linear")),
                    "p95_ingest_ms": float(i.quantile(0.95, "linear")),
                    "mean_tokens": float(tok.mean()),
                    "max_tokens": int(tok.max()),
                    "claimed_ms": f"< {hi:g}" if lo == 0 else f"{lo:g}-{hi:g}",
                }
            )
    return pl.DataFrame(out, schema=TIER_SUMMARY_SCHEMA, orient="row")


def write_conversation_sweep(
    table_path: str | Path,
    summary_path: str | Path,
    corpus_dir: str | Path,
    embeddings_path: str | Path,
    work_dir: str | Path,
    *,
    tiers_path: str | Path | None = None,
    probes_path: str | Path | None = None,
    **params: Any,
) -> ConversationRun:
    """Run :func:`run_conversations` and write its tables as CSV (atomically).

    Args:
        table_path: per-turn table (``results/sweeps/conversation.csv``).
        summary_path: :func:`summarise_conversation` of the run, with tiers and probes
            (``results/sweeps/conversation_summary.csv``).
        corpus_dir: corpus directory.
        embeddings_path: embeddings Parquet.
        work_dir: scratch directory for the stores.
        tiers_path: optional CSV for :func:`summarise_tiers`.
        probes_path: optional CSV for the probe rows (:data:`PROBE_SCHEMA`).
        **params: parameters of :func:`run_conversations`.

    Returns:
        The :class:`ConversationRun`.
    """
    from agentmem.io import write_csv

    run = run_conversations(corpus_dir, embeddings_path, work_dir, **params)
    write_csv(table_path, run.table)
    write_csv(summary_path, summarise_conversation(run.table, run.tiers, run.probes))
    if tiers_path is not None:
        write_csv(tiers_path, summarise_tiers(run.tiers))
    if probes_path is not None:
        write_csv(probes_path, run.probes)
    return run
