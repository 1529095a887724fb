"""Long-conversation token economics: registered arms driven turn by turn, against append.

The seed claims (REFERENCE §5) that three-tier memory (L1 working memory capped at 3,000
tokens, rolling summaries, vector L3) cuts the cumulative tokens of a 100-turn
conversation by 89.9 % against appending everything, caps the per-turn context near
3,250 tokens and lifts long-range recall from 68.4 % (vector only) to 96.8 %. This sweep
measures those three numbers for every arm the config names
(``seed_systems.conversation.arms``), each driven the way an agent drives its memory:
write the turn through :meth:`~agentmem.arms.base.Arm.remember`, recall through
:meth:`~agentmem.arms.base.Arm.query`.

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

**Per turn** the context is assembled for a query: the probe question at probe turns,
else the current turn's text (its vector: the normalised mean of the turn's memory
vectors — exactly the memory's vector for one memory per turn; no model runs in the
sweep). Strategies:

* ``append`` (the baseline, no store): the whole history, current turn included.
* every configured arm: a fresh store per conversation (``build`` of an empty corpus
  under ``work_dir/<arm>``, the corpus's sessions, facts and entities beside it), then
  per turn

  - an arm that assembles its own context (:class:`ContextAssembler`, e.g.
    ``three-tier``: L1 working memory + L2 summaries + L3 vectors) first remembers the
    turn, then ``assemble_context(query, vector, k)`` is its context (for ``three-tier``
    all of L1, current turn included, its summary node(s) and the ``k`` nearest L3
    memories);
  - any other arm recalls ``query(Query(text, vector), k)`` over the history (the turns
    before this one; no query at turn 1 or with ``k = 0``), its context is those
    memories plus the current turn, and then it remembers the turn.

  The turn is one ``remember`` call of its memory rows (corpus columns, ``superseded_by``
  cleared); a correction names, in ``supersedes``, the memories it corrects that were
  remembered in an earlier turn of the conversation, so supersession happens when the
  correction arrives. Arms whose constructor takes ``l1_max_tokens`` or ``summariser``
  get the sweep's values over their ``arm_params``.

**Measures** (one row per strategy x conversation x turn, :data:`CONVERSATION_SCHEMA`):
``context_tokens`` — o200k tokens of the assembled context (memory bodies: the corpus's
``tokens`` column; summaries: the arm's own count; separators not counted; the probe
question not counted); ``cumulative_tokens`` — running sum over the conversation's turns;
``probe`` — the probe's query id (null at other turns); ``probe_hit`` — whether a gold
memory is in the context (null at other turns): for an assembling arm a memory counts when
it is an L1 or L3 item, or when an L2 summary in the context *quotes* one of its sentences
(:func:`agentmem.summarise.split_sentences`; a summary merely covering a memory it does
not quote does not count); ``latency_ms`` — wall time to assemble the context (append:
joining the history; recall: ``query`` plus joining; assembling arms: the
``assemble_context`` call); ``remember_ms`` — wall time of the turn's ``remember`` call
(null for ``append``).

**Defaults exercise compaction.** Corpus memories are ~23 o200k tokens, so 100 one-memory
turns (~2,300 tokens) never fill a 3,000-token L1: the default is ``turns=300`` (about
6,800 tokens, two or three compactions) with the seed's ``l1_max_tokens=3000``. The
seed's turns are chat exchanges of several hundred tokens; ``memories_per_turn=25``
(~565 tokens per turn, one session's worth) with ``turns=100`` is the closer analogue.

:func:`run_conversations` also returns per-turn tier data of the assembling arms
(:data:`TIER_SCHEMA`) and one row per probe (:data:`PROBE_SCHEMA`);
:func:`summarise_conversation` reduces the table (and those) per strategy beside
:data:`SEED_CLAIMS`.
"""

from __future__ import annotations

import inspect
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import polars as pl

from agentmem.arms import ARMS
from agentmem.arms.base import (
    MEMORY_SCHEMA,
    SUPERSEDES,
    VECTOR_DIM,
    Arm,
    Corpus,
    Embeddings,
    Query,
)
from agentmem.arms.three_tier import TIERS, AssembledContext
from agentmem.corpus.io import load_corpus
from agentmem.embeddings import load_embeddings
from agentmem.summarise import split_sentences
from agentmem.tokens import count_tokens

#: The baseline strategy (no store: the whole history is the context); always first.
APPEND = "append"
#: Sweep parameters handed to an arm whose constructor takes a parameter of that name.
SWEEP_ARM_PARAMS: tuple[str, ...] = ("l1_max_tokens", "summariser")
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
    "remember_ms": pl.Float64,
}
#: Per-turn tier data of an assembling arm (``strategy``): tokens per tier in the context,
#: assemble time per tier, and at probe turns the tiers holding a gold memory
#: (space-separated, ``""`` for a miss; null at other turns).
TIER_SCHEMA: dict[str, pl.DataType] = {
    "strategy": pl.String,
    "conversation": pl.Int64,
    "turn": pl.Int64,
    "l1_tokens": pl.Int64,
    "l2_tokens": pl.Int64,
    "l3_tokens": pl.Int64,
    "l1_ms": pl.Float64,
    "l2_ms": pl.Float64,
    "l3_ms": pl.Float64,
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
    frame: pl.DataFrame  # the rows as remember takes them (remember_frame)
    embeddings: Embeddings  # the stream's vectors keyed by memory id
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
def remember_frame(stream: pl.DataFrame, turn_of: Sequence[int]) -> pl.DataFrame:
    """The stream's rows as :meth:`~agentmem.arms.base.Arm.remember` takes them.

    Keeps the :data:`~agentmem.arms.base.MEMORY_SCHEMA` columns the stream has, clears
    ``superseded_by`` and adds :data:`~agentmem.arms.base.SUPERSEDES`: for a memory that
    the corpus names as the ``superseded_by`` of earlier stream memories, those of them
    stated in an earlier turn (a memory's correction within its own turn is left out),
    else null.

    Args:
        stream: the conversation's memory rows in stream order (corpus columns).
        turn_of: 1-based turn of each row.

    Returns:
        One row per stream row, same order.
    """
    ids = stream["memory_id"].to_list()
    turn_by_id = dict(zip(ids, turn_of, strict=True))
    olds: dict[str, list[str]] = {}
    for old, new in zip(ids, stream["superseded_by"].to_list(), strict=True):
        if new in turn_by_id and turn_by_id[old] < turn_by_id[new]:
            olds.setdefault(new, []).append(old)
    cols = [c for c in MEMORY_SCHEMA if c in stream.columns]
    return stream.select(cols).with_columns(
        superseded_by=pl.lit(None, dtype=pl.String),
        **{SUPERSEDES: pl.Series([olds.get(m) for m in ids], dtype=pl.List(pl.String))},
    )


@runtime_checkable
class ContextAssembler(Protocol):
    """An arm that assembles a turn's context itself (working memory + summaries + recall).

    The sweep then uses ``assemble_context`` instead of ``query`` for the context and
    records its tiers (:data:`TIER_SCHEMA`); :class:`~agentmem.arms.three_tier.ThreeTierArm`
    is one.
    """

    def assemble_context(self, query_text: str, query_vec: Any, k: int = 5) -> AssembledContext:
        """Return the context for a turn: items per tier L1, L2, L3, tokens and ms per tier."""
        ...


@dataclass
class _Context:
    """What a strategy put into the context for one turn (internal)."""

    ids: set[str]
    tokens: int
    latency_ms: float
    remember_ms: float | None = None
    tier: dict[str, Any] | None = None


class _Strategy(Protocol):
    """A context-assembly strategy driven turn by turn (internal)."""

    name: str

    def begin(self, conv: _Conversation) -> None: ...

    def turn(self, t: int, query: Query) -> _Context: ...

    def close(self) -> None: ...


class _Append:
    """Infinite append: the whole history is the context."""

    name = APPEND

    def begin(self, conv: _Conversation) -> None:
        self.c = conv
        self.cum = np.concatenate([[0], np.cumsum(conv.tokens)])

    def turn(self, t: int, query: Query) -> _Context:
        end = self.c.turns[t - 1].stop
        t0 = time.perf_counter()
        prompt = "\n".join(self.c.bodies[:end])
        ms = (time.perf_counter() - t0) * 1e3
        del prompt
        return _Context(set(self.c.ids[:end]), int(self.cum[end]), ms)

    def close(self) -> None:
        pass


class _ArmStrategy:
    """A registered arm: remember every turn; recall by ``query`` or ``assemble_context``."""

    def __init__(
        self, name: str, make: Callable[[], Arm], k: int, store_dir: Path, corpus: Corpus
    ) -> None:
        self.name = name
        self.make = make
        self.arm: Arm | None = None
        self.k = k
        self.store_dir = store_dir
        self.empty = Corpus(corpus.memories.clear(), corpus.sessions, corpus.facts, corpus.entities)

    def begin(self, conv: _Conversation) -> None:
        """Build a fresh, empty store for ``conv`` (replacing the last conversation's)."""
        self.c = conv
        self.pos = {m: i for i, m in enumerate(conv.ids)}
        self.close()
        self.arm = self.make()
        self.assembles = isinstance(self.arm, ContextAssembler)
        none = Embeddings([], np.zeros((0, VECTOR_DIM), dtype=np.float32))
        self.arm.build(self.empty, none, self.store_dir)
        if self.assembles:
            self.sentences = {
                m: split_sentences(b) for m, b in zip(conv.ids, conv.bodies, strict=True)
            }

    def _remember(self, t: int) -> float:
        cur = self.c.turns[t - 1]
        rows = self.c.frame.slice(cur.start, len(cur))
        t0 = time.perf_counter()
        self.arm.remember(rows, self.c.embeddings)
        return (time.perf_counter() - t0) * 1e3

    def turn(self, t: int, query: Query) -> _Context:
        if self.assembles:
            remember_ms = self._remember(t)
            ctx = self._assemble(t, query)
            ctx.remember_ms = remember_ms
            return ctx
        cur = self.c.turns[t - 1]
        t0 = time.perf_counter()
        picked: list[int] = []
        if cur.start and self.k:
            res = self.arm.query(query, self.k)
            picked = [self.pos[m] for m in res.memory_ids[: self.k] if m in self.pos]
        pos = picked + list(cur)
        prompt = "\n".join(self.c.bodies[i] for i in pos)
        ms = (time.perf_counter() - t0) * 1e3
        del prompt
        remember_ms = self._remember(t)
        ids = {self.c.ids[i] for i in pos}
        return _Context(ids, int(self.c.tokens[pos].sum()), ms, remember_ms)

    def _assemble(self, t: int, query: Query) -> _Context:
        t0 = time.perf_counter()
        ctx = self.arm.assemble_context(query.text, query.embedding, self.k)  # type: ignore[attr-defined]
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
            "hit_tiers": hit_tiers,
        }
        return _Context(ids, ctx.total_tokens, ms, tier=tier)

    def close(self) -> None:
        if self.arm is not None:
            self.arm.close()
            self.arm = None


def make_conversation_arm(
    name: str, params: Mapping[str, Any] | None, sweep_params: Mapping[str, Any]
) -> Arm:
    """Instantiate registered arm ``name`` for the sweep.

    Args:
        name: an ``agentmem.arms.ARMS`` name.
        params: its constructor parameters (config ``arm_params``).
        sweep_params: the sweep's :data:`SWEEP_ARM_PARAMS` values; each is passed when the
            arm's constructor takes a parameter of that name, overriding ``params``.

    Raises:
        ValueError: on an unknown arm or parameters its constructor refuses.
    """
    if name not in ARMS:
        raise ValueError(f"unknown arm {name!r}; known arms: {sorted(ARMS)}")
    cls = ARMS[name]
    takes = inspect.signature(cls).parameters
    kwargs = {**dict(params or {}), **{k: v for k, v in sweep_params.items() if k in takes}}
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: bad parameters {kwargs!r}: {exc}") from None


# --------------------------------------------------------------------------- run
@dataclass
class ConversationRun:
    """Everything one :func:`run_conversations` measured.

    Attributes:
        table: per strategy x conversation x turn (:data:`CONVERSATION_SCHEMA`).
        tiers: per assembling arm x conversation x turn (:data:`TIER_SCHEMA`; empty when
            no :class:`ContextAssembler` arm ran).
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
    arms: Sequence[str] = (),
    arm_params: Mapping[str, Mapping[str, Any] | None] | None = None,
) -> ConversationRun:
    """Simulate the conversations and measure every strategy (module docstring).

    Args:
        corpus_dir: corpus directory (memories, facts, queries, qrels Parquet files).
        embeddings_path: embeddings Parquet holding every memory and query id.
        work_dir: scratch directory for the arms' stores (``work_dir/<arm>``; embedded
            PostgreSQL servers are stopped before returning).
        conversations: number of conversations (>= 1).
        turns: turns per conversation (>= 1); default 300 so that L1 compacts.
        probes_every: a probe is attempted at every turn divisible by this (>= 1).
        min_gap: a probed fact was first stated at least this many turns earlier (>= 1).
        seed: seeds the stream choice and the probe draws (conversation ``c`` uses
            ``random.Random(seed * 1000 + c)``).
        l1_max_tokens: the working-memory cap in o200k tokens (seed: 3,000): defines a
            probe's ``beyond_l1`` and is passed to arms taking ``l1_max_tokens``.
        k: memories recalled per turn by ``query``, and from L3 (seed: 5).
        memories_per_turn: corpus memories per turn (>= 1).
        sampling: ``"window"`` or ``"topics"`` (:data:`SAMPLINGS`).
        summariser: passed to arms taking ``summariser`` (``"extractive"``:
            deterministic, offline).
        arms: registered arm names to drive, in output order after ``append``.
        arm_params: constructor parameters by arm name (config ``arm_params``).

    Returns:
        :class:`ConversationRun`.

    Raises:
        ValueError: on a parameter out of range, an unknown or repeated arm, parameters an
            arm refuses, an unknown sampling, or a corpus too small for one conversation.
        agentmem.arms.base.ArmError: when an arm's store fails.
    """
    conversations = _check_int("conversations", conversations, 1)
    turns = _check_int("turns", turns, 1)
    probes_every = _check_int("probes_every", probes_every, 1)
    min_gap = _check_int("min_gap", min_gap, 1)
    k = _check_int("k", k, 0)
    memories_per_turn = _check_int("memories_per_turn", memories_per_turn, 1)
    if sampling not in SAMPLINGS:
        raise ValueError(f"sampling must be one of {SAMPLINGS}, got {sampling!r}")
    arms = list(arms)
    if len(set(arms)) != len(arms):
        raise ValueError(f"arms: duplicate names in {arms}")
    sweep_params = {"l1_max_tokens": l1_max_tokens, "summariser": summariser}
    params = dict(arm_params or {})
    for name in arms:  # fail on a bad name or parameter before any store is made
        make_conversation_arm(name, params.get(name), sweep_params).close()
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
        turn_of = [i // memories_per_turn + 1 for i in range(n)]
        vecs = np.ascontiguousarray(vectors.get(ids), dtype=np.float32)
        conv = _Conversation(
            index=c,
            rows=list(stream.iter_rows(named=True)),
            ids=ids,
            bodies=stream["body"].to_list(),
            tokens=stream["tokens"].cast(pl.Int64).to_numpy(),
            vectors=vecs,
            turn_of=turn_of,
            turns=[range(t * memories_per_turn, (t + 1) * memories_per_turn) for t in range(turns)],
            frame=remember_frame(stream, turn_of),
            embeddings=Embeddings(ids, vecs),
        )
        _schedule_probes(conv, questions, correction_of, probes_every, min_gap, l1_max_tokens, rng)
        convs.append(conv)

    made: list[_Strategy] = [_Append()]
    for name in arms:
        made.append(
            _ArmStrategy(
                name,
                lambda name=name: make_conversation_arm(name, params.get(name), sweep_params),
                k,
                work_dir / name,
                corpus,
            )
        )
    rows: list[dict[str, Any]] = []
    tier_rows: list[dict[str, Any]] = []
    try:
        for strat in made:
            for conv in convs:
                strat.begin(conv)
                cum = 0
                for t in range(1, turns + 1):
                    probe = conv.probes.get(t)
                    if probe is not None:
                        qid, text, vec = probe[0].query_id, probe[0].text, probe[0].vector
                    else:
                        cur = conv.turns[t - 1]
                        qid, text = f"turn-{conv.index}-{t}", "\n".join(conv.bodies[i] for i in cur)
                        vec = conv.vectors[cur.start : cur.stop].mean(axis=0)
                        norm = float(np.linalg.norm(vec))
                        vec = (vec / norm if norm > 0 else vec).astype(np.float32)
                    ctx = strat.turn(t, Query(qid, text, vec))
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
                            "remember_ms": ctx.remember_ms,
                        }
                    )
                    if ctx.tier is not None:
                        tier_rows.append(
                            {"strategy": strat.name, "conversation": conv.index, "turn": t}
                            | ctx.tier
                        )
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
    probe_hit, latency_ms, remember_ms``; one row per strategy x conversation x turn
    (``append``, then the ``arms`` option in its order; conversations from 0, turns from
    1). Defaults: 300 one-memory turns and the seed's 3,000-token L1, so that L1 compacts
    (module docstring).

    Args:
        corpus_dir: corpus directory.
        embeddings_path: embeddings Parquet.
        work_dir: scratch directory for the stores.
        conversations: number of conversations.
        turns: turns per conversation.
        probes_every: probe attempt period in turns.
        min_gap: minimum turns between a fact's first statement and its probe.
        seed: RNG seed.
        l1_max_tokens: the working-memory cap (o200k tokens).
        k: memories recalled per turn, and from L3.
        **options: keyword options of :func:`run_conversations` (``memories_per_turn``,
            ``sampling``, ``summariser``, ``arms``, ``arm_params``).

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
    "p50_remember_ms": pl.Float64,
    "p95_remember_ms": pl.Float64,
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
      (negative = fewer tokens; the seed claims -89.9 for three-tier memory; null without
      an ``append`` row);
    - ``max_context_tokens`` / ``p95_context_tokens`` / ``mean_context_tokens``: of the
      per-turn context (the cap actually reached; the seed claims ~3,250);
    - ``long_range_recall``: share of probes with ``probe_hit`` (seed: 0.968 three-tier
      memory, 0.684 vector only);
    - ``beyond_l1_probes`` / ``beyond_l1_recall``: probes whose gold had left any L1 of
      ``l1_max_tokens`` (``beyond_l1`` in ``probes``) and their hit share — for an
      assembling arm these must come from L2 or L3 (null without ``probes``);
    - ``corrected_probes`` / ``corrected_recall``: probes whose fact's correction had been
      seen (gold = the correction), and their hit share (null without ``probes``, or no
      such probe);
    - ``p50_latency_ms`` / ``p95_latency_ms``: context assembly time per turn;
    - ``p50_remember_ms`` / ``p95_remember_ms``: the turn's ``remember`` call (null for
      ``append``);
    - ``p50_l1_ms`` / ``p50_l2_ms`` / ``p50_l3_ms``: for strategies with rows in ``tiers``
      (the assembling arms), the median assembly time of each tier (seed budgets: L1 < 2,
      L2 5-15, L3 15-40 ms); null otherwise.

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
    tier_p50: dict[str, dict[str, float]] = {}
    if tiers is not None and tiers.height:
        for (name,), g in tiers.group_by("strategy", maintain_order=True):
            tier_p50[str(name)] = {
                tier: float(g[f"{tier.lower()}_ms"].quantile(0.5, "linear")) for tier in TIERS
            }
    out = []
    for s in order:
        d = df.filter(pl.col("strategy") == s)
        pr = d.filter(pl.col("probe").is_not_null())
        corr = pr.join(seen, on=["conversation", "turn"]) if seen is not None else pr.clear()
        far = pr.join(beyond, on=["conversation", "turn"]) if beyond is not None else pr.clear()
        base = cum.get(APPEND)
        rem = d["remember_ms"].drop_nulls() if "remember_ms" in d.columns else pl.Series([])
        tp = tier_p50.get(s, {})
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
                "p50_remember_ms": float(rem.quantile(0.5, "linear")) if rem.len() else None,
                "p95_remember_ms": float(rem.quantile(0.95, "linear")) if rem.len() else None,
                "p50_l1_ms": tp.get("L1"),
                "p50_l2_ms": tp.get("L2"),
                "p50_l3_ms": tp.get("L3"),
            }
        )
    return pl.DataFrame(out, schema=SUMMARY_SCHEMA, orient="row")


#: Columns of :func:`summarise_tiers`.
TIER_SUMMARY_SCHEMA: dict[str, pl.DataType] = {
    "strategy": pl.String,
    "tier": pl.String,
    "p50_assemble_ms": pl.Float64,
    "p95_assemble_ms": pl.Float64,
    "mean_tokens": pl.Float64,
    "max_tokens": pl.Int64,
    "claimed_ms": pl.String,
}


def summarise_tiers(tiers: pl.DataFrame) -> pl.DataFrame:
    """Per-tier latency and context share of each assembling arm (:data:`TIER_SUMMARY_SCHEMA`).

    ``*_assemble_ms``: time of the tier's part of ``assemble_context`` per turn;
    ``mean_tokens``/``max_tokens``: the tier's tokens in the context; ``claimed_ms``: the
    seed's budget (REFERENCE §5). The write side is the ``remember_ms`` column of the
    per-turn table (one ``remember`` call per turn, every tier included).

    Args:
        tiers: :attr:`ConversationRun.tiers`.

    Returns:
        Rows ``L1``, ``L2``, ``L3`` per strategy, strategies in first-seen order (empty
        when ``tiers`` is empty).
    """
    out = []
    for (name,), g in tiers.group_by("strategy", maintain_order=True):
        for tier in TIERS:
            lo, hi = SEED_CLAIMS[f"{tier.lower()}_ms"]
            a = g[f"{tier.lower()}_ms"]
            tok = g[f"{tier.lower()}_tokens"]
            out.append(
                {
                    "strategy": name,
                    "tier": tier,
                    "p50_assemble_ms": float(a.quantile(0.5, "linear")),
                    "p95_assemble_ms": float(a.quantile(0.95, "linear")),
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
