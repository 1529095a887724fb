"""Summarisers that compact a run of memories into one short text (the three-tier arm's L2).

A summariser is anything with ``summarise(texts, budget_tokens) -> str`` (:class:`Summariser`);
every one here guarantees ``count_tokens([summary])[0] <= budget_tokens`` (o200k_base,
:func:`agentmem.tokens.count_tokens`). The arm that uses them: ``docs/arms/three-tier.md``.

* :class:`ExtractiveSummariser` (default, deterministic, offline): SumBasic-style greedy
  sentence selection (Nenkova & Vanderwende 2005, "The impact of frequency on
  summarization", MSR-TR-2005-101) up to the token budget, printed in original order.
* :class:`OpenAICompatibleSummariser`: an OpenAI-compatible ``/chat/completions``
  endpoint (``AGENTMEM_LLM_BASE_URL``, ``AGENTMEM_LLM_MODEL``, optional
  ``AGENTMEM_LLM_API_KEY``) through :mod:`urllib` only; used only when asked for, and
  tested only when the variables are set.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Mapping
from typing import Any, ClassVar, Protocol, runtime_checkable

from agentmem.text import query_terms
from agentmem.tokens import count_tokens

#: Environment variable: base URL of the OpenAI-compatible API, including the version
#: path (e.g. ``http://localhost:8000/v1``); ``/chat/completions`` is appended.
ENV_BASE_URL = "AGENTMEM_LLM_BASE_URL"
#: Environment variable: model name sent as ``"model"``.
ENV_MODEL = "AGENTMEM_LLM_MODEL"
#: Environment variable: API key sent as ``Authorization: Bearer <key>`` (optional: local
#: servers such as vLLM or llama.cpp usually need none).
ENV_API_KEY = "AGENTMEM_LLM_API_KEY"

#: Weight of an identifier occurrence (``CFG-799``) relative to an ordinary word when the
#: extractive summariser estimates word probabilities: identifiers are what an agent later
#: searches for, so sentences naming them are preferred.
IDENTIFIER_WEIGHT = 2.0

_IDENTIFIER = re.compile(r"^[a-z]+-\d+$")
# sentence ends: . ! ? (optionally followed by closing quotes/brackets) then whitespace,
# or any line break.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[.!?][\"')\]])\s+|\n+")


class SummariserError(RuntimeError):
    """A summariser could not produce a summary (missing configuration, HTTP failure...)."""


@runtime_checkable
class Summariser(Protocol):
    """Turns a run of memory texts into one summary within a token budget.

    Implementations must be safe to call with empty lists, empty strings and hostile
    text, and must return a string of at most ``budget_tokens`` o200k tokens.
    """

    def summarise(self, texts: list[str], budget_tokens: int) -> str:
        """Summarise ``texts`` (oldest first) in at most ``budget_tokens`` o200k tokens.

        Args:
            texts: the memory bodies being compacted, in chronological order.
            budget_tokens: maximum length of the summary in o200k tokens (``<= 0`` gives
                ``""``).

        Returns:
            The summary text.
        """
        ...


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences (stripped, non-empty).

    A sentence ends at ``.``, ``!`` or ``?`` (plus any closing quote or bracket) followed
    by whitespace, or at a line break. Identifiers and decimals (``CFG-799``, ``1.5s``)
    are not split because no whitespace follows their dot.

    Args:
        text: any text.

    Returns:
        The sentences in order; ``[]`` for empty or whitespace-only text.
    """
    return [s.strip() for s in _SENTENCE_END.split(text or "") if s and s.strip()]


def truncate_to_tokens(text: str, budget_tokens: int) -> str:
    """Return the longest prefix of ``text`` (cut on a token boundary) within the budget.

    Args:
        text: the text to cut.
        budget_tokens: maximum o200k tokens.

    Returns:
        ``text`` itself when it fits; otherwise the longest decoded token prefix that is a
        true prefix of ``text`` (no split characters) and re-encodes to
        ``<= budget_tokens`` tokens, trailing whitespace removed (``""`` for a budget
        ``<= 0`` or when no such prefix exists).
    """
    if budget_tokens <= 0 or not text:
        return ""
    if count_tokens([text])[0] <= budget_tokens:
        return text
    from agentmem.tokens import o200k_encoding

    enc = o200k_encoding()
    ids = enc.encode_ordinary(text)
    n = min(len(ids), budget_tokens)
    while n > 0:
        # a cut inside a multi-byte character leaves incomplete trailing bytes: drop them,
        # so the result is always a true prefix of ``text`` (no U+FFFD)
        cut = enc.decode_bytes(ids[:n]).decode("utf-8", errors="ignore").rstrip()
        if cut and text.startswith(cut) and count_tokens([cut])[0] <= budget_tokens:
            return cut
        n -= 1
    return ""


def _normalise(sentence: str) -> str:
    """Case-fold and collapse whitespace, for detecting repeated sentences."""
    return " ".join(sentence.casefold().split())


class ExtractiveSummariser:
    """Deterministic extractive summariser: SumBasic-style sentence selection to a budget.

    Method (Nenkova & Vanderwende 2005, SumBasic, with two changes noted):

    1. Split every text into sentences (:func:`split_sentences`); identical sentences
       (case/space-insensitive) become one candidate, at their first position.
    2. Terms of a sentence: :func:`agentmem.text.query_terms` (lower-cased,
       stopwords dropped, identifiers such as ``CFG-799`` kept whole). Word probability
       ``p(w) = c(w) / sum_v c(v)`` where ``c`` counts occurrences over *all* sentences
       (repeats included, so a restated fact is salient), an identifier counting
       :data:`IDENTIFIER_WEIGHT` times (change 1).
    3. Greedy: score each remaining candidate by the mean ``p(w)`` over its distinct terms
       (sentences without terms score 0); take the best (ties: earliest); keep it if the
       summary with it still fits ``budget_tokens`` (o200k, measured on the joined text),
       else drop it; after a keep, ``p(w) <- p(w)^2`` for its terms (SumBasic's redundancy
       update). Original SumBasic takes the best sentence containing the single most
       probable word; we take the best sentence overall (change 2).
    4. Output: the kept sentences in original order, joined by newlines. If no sentence
       fits at all, the best sentence cut to the budget (:func:`truncate_to_tokens`).

    No randomness and no model: the same texts and budget always give the same summary.
    """

    name: ClassVar[str] = "extractive"

    def summarise(self, texts: list[str], budget_tokens: int) -> str:
        """Summarise ``texts`` by sentence extraction within ``budget_tokens`` o200k tokens.

        Args:
            texts: memory bodies, oldest first (any content; empty strings are ignored).
            budget_tokens: maximum summary length in o200k tokens.

        Returns:
            Selected sentences in original order joined by newlines; ``""`` when the
            budget is ``<= 0`` or the texts hold no sentence.
        """
        if budget_tokens <= 0:
            return ""
        sentences: list[str] = []
        seen: set[str] = set()
        counts: Counter[str] = Counter()
        cand_terms: list[list[str]] = []
        for text in texts:
            for s in split_sentences(text or ""):
                terms = query_terms(s)
                for t in terms:
                    counts[t] += IDENTIFIER_WEIGHT if _IDENTIFIER.match(t) else 1.0
                key = _normalise(s)
                if key in seen:
                    continue
                seen.add(key)
                sentences.append(s)
                cand_terms.append(terms)
        if not sentences:
            return ""
        total = sum(counts.values()) or 1.0
        prob = {t: c / total for t, c in counts.items()}

        def score(i: int) -> float:
            terms = cand_terms[i]
            return sum(prob[t] for t in terms) / len(terms) if terms else 0.0

        remaining = list(range(len(sentences)))
        chosen: list[int] = []
        best_first: int | None = None
        while remaining:
            best = max(remaining, key=lambda i: (score(i), -i))
            if best_first is None:
                best_first = best
            remaining.remove(best)
            trial = sorted([*chosen, best])
            text = "\n".join(sentences[i] for i in trial)
            if count_tokens([text])[0] > budget_tokens:
                continue
            chosen = trial
            for t in cand_terms[best]:
                prob[t] = prob[t] ** 2
        if not chosen:
            assert best_first is not None
            return truncate_to_tokens(sentences[best_first], budget_tokens)
        return "\n".join(sentences[i] for i in chosen)


class OpenAICompatibleSummariser:
    """Summarises through an OpenAI-compatible chat-completions endpoint (stdlib only).

    Sends ``POST <base_url>/chat/completions`` with ``{"model", "messages",
    "temperature": 0, "max_tokens": budget_tokens}`` and takes
    ``choices[0].message.content``. The reply is cut to the budget with
    :func:`truncate_to_tokens` because the server's tokenizer may differ from o200k.

    Args:
        base_url: API base including the version path (e.g. ``http://host:8000/v1``);
            default from ``AGENTMEM_LLM_BASE_URL``.
        model: model name; default from ``AGENTMEM_LLM_MODEL``.
        api_key: bearer token; default from ``AGENTMEM_LLM_API_KEY`` (optional).
        timeout_s: HTTP timeout in seconds.
        env: the environment to read (default :data:`os.environ`).

    Raises:
        SummariserError: when the base URL or the model is missing (the message names the
            environment variables to set).
    """

    name: ClassVar[str] = "openai"

    SYSTEM_PROMPT: ClassVar[str] = (
        "You compress an AI agent's conversation memory. Write a faithful summary of the "
        "messages you are given: keep every identifier (such as CFG-799 or SVC-5345), "
        "number, owner, decision and correction exactly as written; drop chit-chat. "
        "Plain sentences, no preamble."
    )

    def __init__(
        self,
        *,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        env: Mapping[str, str] | None = None,
    ) -> None:
        env = os.environ if env is None else env
        self.base_url = (base_url or env.get(ENV_BASE_URL, "")).strip().rstrip("/")
        self.model = (model or env.get(ENV_MODEL, "")).strip()
        self._api_key = (api_key or env.get(ENV_API_KEY, "")).strip() or None
        self.timeout_s = float(timeout_s)
        missing = [n for n, v in ((ENV_BASE_URL, self.base_url), (ENV_MODEL, self.model)) if not v]
        if missing:
            raise SummariserError(
                "the OpenAI-compatible summariser needs " + " and ".join(missing) + " set "
                f"(e.g. {ENV_BASE_URL}=http://localhost:8000/v1 {ENV_MODEL}=<model>; "
                f"{ENV_API_KEY} if the server wants a key), or use the 'extractive' summariser"
            )
        if not re.match(r"^https?://", self.base_url, re.IGNORECASE):
            raise SummariserError(f"{ENV_BASE_URL} must be an http(s) URL, got {self.base_url!r}")

    @staticmethod
    def available(env: Mapping[str, str] | None = None) -> bool:
        """Return whether the base URL and model variables are set (tests skip otherwise)."""
        env = os.environ if env is None else env
        return bool(env.get(ENV_BASE_URL, "").strip() and env.get(ENV_MODEL, "").strip())

    def _request(self, payload: dict[str, Any]) -> dict[str, Any]:
        """POST ``payload`` as JSON and return the decoded JSON reply.

        Raises:
            SummariserError: on an HTTP error status, a network failure or a non-JSON
                reply (the message names the URL, never the key).
        """
        url = f"{self.base_url}/chat/completions"
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        req = urllib.request.Request(
            url, data=json.dumps(payload).encode("utf-8"), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:  # noqa: S310
                body = resp.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:500].decode("utf-8", "replace")
            raise SummariserError(f"{url} answered HTTP {exc.code}: {detail}") from None
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            raise SummariserError(f"cannot reach {url}: {exc}") from None
        try:
            data = json.loads(body)
        except ValueError:
            raise SummariserError(f"{url} did not return JSON: {body[:200]!r}") from None
        if not isinstance(data, dict):
            raise SummariserError(f"{url} returned {type(data).__name__}, expected an object")
        return data

    def summarise(self, texts: list[str], budget_tokens: int) -> str:
        """Ask the model for a summary of ``texts`` and cut it to ``budget_tokens``.

        Args:
            texts: memory bodies, oldest first.
            budget_tokens: maximum summary length in o200k tokens.

        Returns:
            The model's summary (``""`` for a budget ``<= 0`` or no non-empty text; no
            request is made then).

        Raises:
            SummariserError: when the request fails or the reply has no message content.
        """
        texts = [t for t in texts if t and t.strip()]
        if budget_tokens <= 0 or not texts:
            return ""
        numbered = "\n".join(f"{i + 1}. {t}" for i, t in enumerate(texts))
        payload = {
            "model": self.model,
            "temperature": 0,
            "max_tokens": int(budget_tokens),
            "messages": [
                {"role": "system", "content": self.SYSTEM_PROMPT},
                {
                    "role": "user",
                    "content": (
                        f"Summarise these {len(texts)} messages in at most "
                        f"{int(budget_tokens)} tokens:\n{numbered}"
                    ),
                },
            ],
        }
        data = self._request(payload)
        try:
            content = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise SummariserError(
                f"{self.base_url}/chat/completions reply has no choices[0].message.content: "
                f"{json.dumps(data)[:300]}"
            ) from None
        if not isinstance(content, str):
            raise SummariserError("the model returned non-text message content")
        return truncate_to_tokens(content.strip(), int(budget_tokens))


#: Summariser names accepted by :func:`make_summariser` (and the arm's ``summariser``).
SUMMARISERS: dict[str, type] = {
    ExtractiveSummariser.name: ExtractiveSummariser,
    OpenAICompatibleSummariser.name: OpenAICompatibleSummariser,
}


def make_summariser(name: str) -> Summariser:
    """Return a new summariser by name (``"extractive"`` or ``"openai"``).

    Raises:
        ValueError: on an unknown name.
        SummariserError: for ``"openai"`` when its environment variables are missing.
    """
    try:
        cls = SUMMARISERS[name]
    except KeyError:
        raise ValueError(
            f"unknown summariser {name!r}; choose one of {sorted(SUMMARISERS)}"
        ) from None
    return cls()


def summariser_name(s: Summariser) -> str:
    """Return ``s.name`` when it has one, else its class name (recorded in the store)."""
    n = getattr(s, "name", None)
    return n if isinstance(n, str) and n else type(s).__name__


__all__ = [
    "ENV_API_KEY",
    "ENV_BASE_URL",
    "ENV_MODEL",
    "IDENTIFIER_WEIGHT",
    "SUMMARISERS",
    "ExtractiveSummariser",
    "OpenAICompatibleSummariser",
    "Summariser",
    "SummariserError",
    "make_summariser",
    "split_sentences",
    "summariser_name",
    "truncate_to_tokens",
]
