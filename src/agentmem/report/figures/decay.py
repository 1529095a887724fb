"""Figure: sqlite-graph decay over simulated days (pruning, nDCG, valid facts, tokens)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from agentmem.report.figures._common import save, subplots


def plot(table_csv: str | Path, out_svg: str | Path) -> None:
    """Draw the decay sweep against the simulated day.

    Reads ``results/sweeps/decay.csv`` (columns ``day, pruned_fraction,
    context_tokens_per_query, currency_ndcg, lexical_ndcg, valid_fact_recall``). Left:
    fraction of memory nodes pruned and share of facts whose current value is still
    stored. Middle: nDCG@10 of the currency and lexical queries. Right: o200k tokens of
    the top-k memories returned per query.
    """
    t = pl.read_csv(table_csv).sort("day")
    day = t["day"]
    fig, (a, b, c) = subplots(1, 3, figsize=(12, 3.2))
    a.plot(day, t["pruned_fraction"], color="#c0392b", label="nodes pruned")
    a.plot(day, t["valid_fact_recall"], color="#27ae60", label="valid facts still stored")
    a.set_ylim(-0.02, 1.05)
    a.set_xlabel("simulated day")
    a.set_ylabel("fraction")
    a.set_title("Pruning and valid-fact recall")
    a.legend(frameon=False, fontsize=7)
    b.plot(day, t["currency_ndcg"], color="#8e44ad", label="currency")
    b.plot(day, t["lexical_ndcg"], color="#2980b9", label="lexical")
    b.set_ylim(0, 1.05)
    b.set_xlabel("simulated day")
    b.set_ylabel("nDCG@10")
    b.set_title("Retrieval quality")
    b.legend(frameon=False, fontsize=7)
    c.plot(day, t["context_tokens_per_query"], color="#7f8c8d")
    c.set_ylim(0, max(1.0, float(t["context_tokens_per_query"].max() or 0)) * 1.15)
    c.set_xlabel("simulated day")
    c.set_ylabel("tokens of top-k per query (o200k)")
    c.set_title("Context tokens per query")
    fig.suptitle("sqlite-graph decay: confidence·exp(−rate·days^0.8), pruned below 0.05",
                 fontsize=9)  # fmt: skip
    fig.tight_layout()
    save(fig, out_svg)
