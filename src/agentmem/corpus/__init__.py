"""The synthetic corpus: world, facts, memories, sessions, queries and qrels (DESIGN §4)."""

from agentmem.corpus.io import load_corpus, load_qrels, load_queries, write_corpus

__all__ = ["load_corpus", "load_qrels", "load_queries", "write_corpus"]
