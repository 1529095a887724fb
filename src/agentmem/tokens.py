"""Token counts in the o200k_base encoding (gpt-4o), offline via ``bpe-openai``."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache


@lru_cache(maxsize=1)
def o200k_encoding():  # noqa: ANN202 - third-party type
    """The o200k_base encoding of ``bpe-openai``, loaded once (``encode_ordinary``, ...)."""
    import bpe_openai

    return bpe_openai.encoding_for_model("gpt-4o")


def count_tokens(texts: Sequence[str]) -> list[int]:
    """Return the o200k_base token count of each text (same order, same length)."""
    enc = o200k_encoding()
    return [len(enc.encode_ordinary(t)) for t in texts]
