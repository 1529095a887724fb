"""What the subcommands share: exit codes, the error line, the arm and the query vector."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

#: Exit codes: the arm or its store failed; the arguments were bad.
EXIT_ARM, EXIT_USAGE = 1, 2


def fail(message: str, code: int) -> int:
    """Print ``agentmem: <message>`` on stderr; return ``code`` (the exit code)."""
    print(f"agentmem: {message}", file=sys.stderr)
    return code


def recorded_params(store: str | Path, name: str) -> dict[str, Any] | None:
    """The constructor parameters store ``store`` of arm ``name`` was built with.

    Read from the build record the workflow writes beside its stores: a store
    ``<root>/stores/<size>/<name>`` has ``<root>/builds/<size>/<name>.json``, whose
    ``params`` are the ones the build used (config ``arm_params``). ``None`` when the store
    is not in that layout or the record is missing or unreadable.
    """
    path = Path(store).resolve()
    if path.name != name or path.parent.parent.name != "stores":
        return None
    record = path.parent.parent.parent / "builds" / path.parent.name / f"{name}.json"
    try:
        params = json.loads(record.read_text()).get("params")
    except (OSError, ValueError, AttributeError):
        return None
    return dict(params) if isinstance(params, dict) else None


def new_arm(name: str, store: str | Path | None = None) -> tuple[Any, int]:
    """Instantiate arm ``name``: ``(arm, 0)``, or ``(None, exit code)`` after a message.

    With ``store``, the arm gets the parameters the store was built with
    (:func:`recorded_params`), else its defaults.
    """
    from agentmem.arms import ARMS, plugin_problem
    from agentmem.arms.factory import make_arm

    broken = plugin_problem(name)
    if broken is not None:
        return None, fail(broken.message(), EXIT_ARM)
    if name not in ARMS:
        return None, fail(
            f"unknown arm {name!r}; registered arms: {', '.join(sorted(ARMS))}", EXIT_USAGE
        )
    from agentmem.arms.base import ArmError

    params = recorded_params(store, name) if store is not None else None
    try:
        return make_arm(name, params), 0
    except ArmError as exc:
        return None, fail(str(exc), EXIT_ARM)
    except (TypeError, ValueError) as exc:
        return None, fail(f"{name}: the store's recorded parameters {params!r}: {exc}", EXIT_ARM)


def text_embedding(arm: Any, text: str) -> Any:
    """The text's embedding with the project's encoder; zeros for arms that read no vectors.

    The ONNX backend when the workflow's exported model
    (:data:`agentmem.encoder.WORKFLOW_ONNX_MODEL`, ``results/cache/encoder/`` under the
    working directory) exists: it skips importing torch, and it is the encoder the
    workflow's stores were built with under the default config. Otherwise torch
    (sentence-transformers). The two agree to cosine 0.9999.
    """
    import numpy as np

    from agentmem.arms.base import VECTOR_DIM

    if arm.capabilities.vector_access == "none":  # text-only arm: skip loading the model
        return np.zeros(VECTOR_DIM, dtype=np.float32)
    from agentmem.embeddings import encode
    from agentmem.encoder import WORKFLOW_ONNX_MODEL

    if WORKFLOW_ONNX_MODEL.is_file():  # imports no transformers (about 0.8 s)
        return encode([text], backend="onnx", onnx_model=WORKFLOW_ONNX_MODEL)[0]
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # no "Loading weights" bar on a command's stderr
    return encode([text])[0]


def add_command(
    sub: argparse._SubParsersAction, name: str, doc: str | None, **kwargs: Any
) -> argparse.ArgumentParser:
    """Register the subcommand ``name`` on ``sub``, its help text read from ``doc``.

    ``doc`` is the command module's docstring: its first line ``"``agentmem NAME``: what it
    does."`` gives the one-line help of the command list, the paragraphs after it the
    description (filled to the terminal's width).

    Returns:
        The subcommand's parser; ``kwargs`` (``epilog``, shown as written; ``usage``) go to
        ``add_parser``.
    """
    first, _, rest = (doc or "").partition("\n")
    summary = first.partition(": ")[2].rstrip(".") or first
    paragraphs = [textwrap.fill(" ".join(p.split())) for p in rest.strip().split("\n\n")]
    return sub.add_parser(
        name,
        help=summary,
        description="\n\n".join(p for p in paragraphs if p) or summary,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        **kwargs,
    )


def add_arm_and_store(p: argparse.ArgumentParser) -> None:
    """Add the ``--arm`` and ``--store`` options (both required) to a subcommand's parser."""
    p.add_argument("--arm", required=True, help="arm name (see `agentmem arms`)")
    p.add_argument("--store", required=True, help="store directory, e.g. results/stores/m/ARM")
