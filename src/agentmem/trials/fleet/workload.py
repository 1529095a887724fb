"""The fleet's workload: what every agent process asks and writes, drawn from one corpus.

An agent runs a list of operations (:data:`OPS`): a *recall* asks one of the corpus's
queries (text, embedding, predicate, as the query runs ask it); a *remember* writes a new
memory, a copy of a corpus memory's body and embedding under a new id; a *correction*
writes a new memory that supersedes every memory of one corpus fact (its body the
fact's latest statement, an agent re-recording the current value). Every new memory
carries its agent's scope (``scope_id``), so the read-your-writes recall that follows a
remember can ask within it.

Plans depend on the seed, the run and the agent only, never on the arm: every arm sees
the same operations. Corrections are spread so that no two of them, in any run, touch
the same fact (a correction's check then has one right answer). docs/experiments/fleet.md
describes the experiment.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from agentmem.corpus.io import load_corpus, load_queries
from agentmem.embeddings import load_embeddings
from agentmem.types import Corpus, Embeddings, Predicate, Query

__all__ = ["OPS", "FleetData", "Op", "agent_scope", "plan_runs"]

#: Operation kinds, in the order of the mix's shares.
OPS: tuple[str, ...] = ("recall", "remember", "correction")

#: An operation: ``(kind, key, new_id)``: a recall's query index (``new_id`` ``""``), a
#: remember's source memory id, a correction's fact id.
Op = tuple[str, str, str]


def agent_scope(run: str, agent: int) -> str:
    """The scope (and session) id of agent ``agent``'s new memories in run ``run``."""
    return f"fleet-{run}-a{agent:02d}"


@dataclass
class FleetData:
    """The corpus a fleet works on, loaded once per process.

    Attributes:
        corpus: the corpus (the store is built from it).
        vectors: the corpus embeddings (memories and queries).
        queries: the corpus queries, in file order (a recall names one by index).
        fact_memories: fact id -> its memory ids, for the facts whose memories are all
            current (the facts a correction may supersede), in memory order.
        new_day: ``created_day`` of every new memory (one day after the corpus's last).
        bodies: memory id -> body.
    """

    corpus: Corpus
    vectors: Embeddings
    queries: list[Query]
    fact_memories: dict[str, list[str]]
    new_day: int
    bodies: dict[str, str]

    @classmethod
    def load(cls, corpus_dir: str | Path, embeddings: str | Path) -> FleetData:
        """Read a corpus directory and its embeddings.

        Raises:
            agentmem.corpus.io.CorpusError: when a corpus file is missing or a query has
                no embedding.
            ValueError: when the corpus has no memory or no query.
        """
        vectors = load_embeddings(embeddings)
        corpus = load_corpus(corpus_dir)
        mem = corpus.memories
        queries = load_queries(corpus_dir, vectors)
        if mem.height == 0 or not queries:
            raise ValueError(f"fleet corpus {corpus_dir} has no memories or no queries")
        current = (
            mem.filter(pl.col("fact_id").is_not_null())
            .group_by("fact_id", maintain_order=True)
            .agg(pl.col("memory_id"), pl.col("superseded_by").null_count().alias("cur"))
        )
        facts = {
            f: ids
            for f, ids, cur in current.select("fact_id", "memory_id", "cur").iter_rows()
            if cur == len(ids)
        }
        return cls(
            corpus=corpus,
            vectors=vectors,
            queries=queries,
            fact_memories=facts,
            new_day=int(mem.get_column("created_day").max()) + 1,  # type: ignore[arg-type]
            bodies=dict(mem.select("memory_id", "body").iter_rows()),
        )

    @property
    def memories(self) -> pl.DataFrame:
        """The corpus memories (``memory_id``, ``body``, ``fact_id``, ``superseded_by``, ...)."""
        return self.corpus.memories

    def body(self, memory_id: str) -> str:
        """The body of corpus memory ``memory_id`` (KeyError when it is not one)."""
        return self.bodies[memory_id]

    def new_memory(
        self, op: Op, run: str, agent: int
    ) -> tuple[pl.DataFrame, Embeddings, list[str]]:
        """The one-row frame, embeddings and superseded ids of a remember or correction.

        Returns:
            ``(frame for Arm.remember, its embeddings, ids it supersedes)``; a remember
            supersedes nothing, a correction every memory of its fact.
        """
        kind, key, new_id = op
        if kind == "correction":
            olds = self.fact_memories[key]
            source = olds[-1]
        else:
            olds, source = [], key
        scope = agent_scope(run, agent)
        frame = pl.DataFrame(
            {
                "memory_id": [new_id],
                "body": [self.body(source)],
                "created_day": [self.new_day],
                "session_id": [scope],
                "scope_id": [scope],
                "fact_id": [key if kind == "correction" else None],
                "kind": ["semantic" if kind == "correction" else "episodic"],
                "supersedes": [olds],
            },
            schema_overrides={"fact_id": pl.String, "supersedes": pl.List(pl.String)},
        )
        vec = np.asarray(self.vectors.get([source]), dtype=np.float32)
        return frame, Embeddings(ids=[new_id], matrix=vec), list(olds)

    def own_write_query(self, frame: pl.DataFrame, vectors: Embeddings) -> Query:
        """The read-your-writes recall of a just-remembered memory: its body, in its scope."""
        mid = frame.item(0, "memory_id")
        return Query(
            query_id=f"ryw-{mid}",
            text=str(frame.item(0, "body")),
            embedding=vectors.matrix[0],
            scope=str(frame.item(0, "scope_id")),
        )

    def current_query(self, new_id: str, body: str, vector: np.ndarray) -> Query:
        """The current-only recall a correction must answer: its body, superseded excluded."""
        return Query(
            query_id=f"current-{new_id}",
            text=body,
            embedding=vector,
            predicate=Predicate("superseded_by", "is_null"),
        )


def plan_runs(
    data: FleetData,
    runs: Sequence[tuple[str, int, int]],
    mix: dict[str, float],
    seed: int,
) -> dict[str, list[list[Op]]]:
    """Draw every agent's operations for every run.

    Args:
        data: the fleet corpus.
        runs: ``(run name, agents, operations per agent)``, in running order.
        mix: share of each kind of :data:`OPS` (summing to 1).
        seed: the trial seed; agent ``a`` of run ``r`` draws from ``Random(f"{seed}:{r}:{a}")``.

    Returns:
        run name -> one operation list per agent: first the agent's warm-up write (a
        remember, run untimed: a process's first write pays one-off costs), then
        ``operations`` operations drawn from the mix.

    Each fact whose memories are all current is corrected at most once in the whole
    trial; once every one has been, a correction drawn from the mix becomes a remember.
    """
    facts = list(data.fact_memories)
    random.Random(f"{seed}:facts").shuffle(facts)
    source_ids = data.memories.get_column("memory_id").to_list()
    weights = [float(mix.get(k, 0.0)) for k in OPS]
    out: dict[str, list[list[Op]]] = {}
    next_fact = 0
    for run, agents, operations in runs:
        plans = []
        for a in range(agents):
            rng = random.Random(f"{seed}:{run}:{a}")
            ops: list[Op] = [("remember", rng.choice(source_ids), f"fleet-{run}-a{a:02d}-warm")]
            for i, kind in enumerate(rng.choices(OPS, weights=weights, k=operations)):
                new_id = f"fleet-{run}-a{a:02d}-{i:05d}"
                if kind == "recall":
                    ops.append((kind, str(rng.randrange(len(data.queries))), ""))
                elif kind == "remember":
                    ops.append((kind, rng.choice(source_ids), new_id))
                elif next_fact < len(facts):
                    ops.append((kind, facts[next_fact], new_id))
                    next_fact += 1
                else:  # every fact corrected once already: a plain remember instead
                    ops.append(("remember", rng.choice(source_ids), new_id))
            plans.append(ops)
        out[run] = plans
    return out
