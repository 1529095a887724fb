"""The one conversion of embeddings an arm receives into float32 arrays, with clear errors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from agentmem.errors import ArmError
from agentmem.types import VECTOR_DIM, Embeddings


def float32_array(values: Any, owner: str, what: str) -> np.ndarray:
    """Return embeddings (one vector or a matrix of them) as a contiguous float32 array.

    The one conversion of embeddings the arms make. Arrays of integers, floats or booleans
    and (nested) lists of numbers convert; anything else is refused: strings (numpy would
    read ``"0.5"`` as a number and fail on ``"a"`` with a message naming neither arm nor
    field), bytes, complex numbers (numpy would drop the imaginary part), dates, ragged
    lists and objects that are not numbers. The shape is left as given.

    Args:
        values: the embedding(s), any array-like.
        owner: the arm name, for the message.
        what: what they are, e.g. ``"query 'q1' embedding"`` or ``"build: embeddings"``.

    Raises:
        ArmError: ``"<owner>: <what>: not numeric (dtype <U1)"``, or ``"... not an array of
            numbers (<numpy's reason>)"``.
    """
    try:
        arr = np.asarray(values)
        if arr.dtype.kind in "biufO":  # "O": e.g. Decimal elements, converted one by one
            return np.ascontiguousarray(arr, dtype=np.float32)
    except (TypeError, ValueError) as exc:  # ragged lists, objects that are not numbers
        raise ArmError(f"{owner}: {what}: not an array of numbers ({exc})") from None
    raise ArmError(f"{owner}: {what}: not numeric (dtype {arr.dtype})")


def checked_vector(vec: Any, owner: str, what: str, dim: int = VECTOR_DIM) -> np.ndarray:
    """Return an embedding as a contiguous float32 array of shape ``(dim,)``.

    Args:
        vec: the embedding (any array-like), e.g. ``Query.embedding``.
        owner: the arm name, for the message.
        what: what the vector belongs to, e.g. ``"query 'lexical-001'"``.
        dim: required length (384 for all-MiniLM-L6-v2).

    Raises:
        ArmError: when ``vec`` is ``None``, is not numeric (:func:`float32_array`) or does
            not hold ``dim`` values.
    """
    if vec is None:
        raise ArmError(f"{owner}: {what} has no embedding")
    v = float32_array(vec, owner, f"{what} embedding").reshape(-1)
    if v.shape[0] != dim:
        raise ArmError(f"{owner}: {what} embedding has {v.shape[0]} values, need {dim}")
    return v


def embedding_matrix(vectors: Embeddings, ids: Sequence[str], owner: str, where: Any) -> np.ndarray:
    """The embeddings of ``ids`` for a build: float32 ``(len(ids), VECTOR_DIM)``.

    Row ``i`` is the vector of ``ids[i]``.

    Args:
        vectors: the embeddings keyed by memory id.
        ids: the memory ids, in the order of the rows wanted.
        owner: the arm name, for the message.
        where: the store (a path, a database), for the message.

    Raises:
        ArmError: an id has no embedding (``"<owner>: no embedding for id 'x' (<where>)"``),
            the embeddings are not numbers (:func:`float32_array`), or their shape is not
            ``(n, VECTOR_DIM)``.
    """
    try:
        mat = float32_array(vectors.get(list(ids)), owner, "build: embeddings")
    except KeyError as exc:
        raise ArmError(f"{owner}: {exc.args[0]} ({where})") from None
    if not len(ids):
        return np.zeros((0, VECTOR_DIM), np.float32)
    if mat.ndim != 2 or mat.shape[1] != VECTOR_DIM:
        raise ArmError(f"{owner}: embeddings have shape {mat.shape}, need (n, {VECTOR_DIM})")
    return mat
