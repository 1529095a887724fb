"""The implementation choices on which our arms and the study's differ, declared once.

Three choices decide most of the distance between our per-class nDCG@10 and the study's
published table on the study's own corpus (docs/arms/choices.md):

- ``terms``: the term extraction (the study's tokeniser and 48-word stopword list, a
  repeated word counted twice; :func:`agentmem.text.study_query_terms`);
- ``ties``: the tie-breaks (the study's ``seq`` descending in the scan arms, the engine's
  order between equal bm25 / ``ts_rank_cd`` scores, memory id ascending between equal
  RRF scores);
- ``normalisation``: ``ts_rank_cd``'s length normalisation (the study passes none).

An arm declares, per choice, the constructor overrides that make it the study's
(:attr:`agentmem.arms.base.ArmBase.study_choices`). A *configuration* is a named set of
choices: :data:`AS_SHIPPED` (none, the arms as configured), :data:`STUDY` (all of them)
and each choice alone (its name).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

#: choice name -> what taking the study's side of it changes
CHOICES: dict[str, str] = {
    "terms": "the study's tokeniser and stopword list (repeated words kept)",
    "ties": "the study's tie-breaks (seq DESC in scans, engine order in bm25 / ts_rank_cd, "
    "memory id ascending between equal RRF scores)",
    "normalisation": "ts_rank_cd without length normalisation (0, the study's)",
}
#: the configuration of the arms as configured (no study choice)
AS_SHIPPED = "as-shipped"
#: the configuration with every study choice
STUDY = "study"
#: every configuration name, in table order
CONFIGURATIONS: tuple[str, ...] = (AS_SHIPPED, STUDY, *CHOICES)


#: The configurations run beside the arms as shipped, by kind of corpus (``headline``, and
#: the kinds of :class:`agentmem.robustness.RobustnessCorpus`; a kind not named: none):
#: the study's choices on the headline and seed corpora, and on the study's own corpus
#: each choice alone too, so that the findings table shows which choice moves which
#: finding (docs/arms/choices.md)
RUNS_BY_KIND: dict[str, tuple[str, ...]] = {
    "headline": (STUDY,),
    "seed": (STUDY,),
    "study-corpus": (STUDY, *CHOICES),
}


def configuration_choices(configuration: str) -> tuple[str, ...]:
    """The choices a configuration takes from the study.

    Raises:
        ValueError: for a name not in :data:`CONFIGURATIONS`.
    """
    if configuration == AS_SHIPPED:
        return ()
    if configuration == STUDY:
        return tuple(CHOICES)
    if configuration in CHOICES:
        return (configuration,)
    raise ValueError(
        f"unknown choices configuration {configuration!r}; one of {', '.join(CONFIGURATIONS)}"
    )


def choice_overrides(
    declared: Mapping[str, Mapping[str, Any]], configuration: str
) -> dict[str, Any]:
    """The constructor overrides of one arm under ``configuration``.

    Args:
        declared: the arm's ``study_choices`` (choice -> overrides).
        configuration: a name of :data:`CONFIGURATIONS`.

    Returns:
        The union of the declared overrides of the configuration's choices; ``{}`` when the
        arm declares none of them (it runs as shipped).

    Raises:
        ValueError: unknown configuration, or a declared choice not in :data:`CHOICES`.
    """
    unknown = set(declared) - set(CHOICES)
    if unknown:
        raise ValueError(f"study_choices names unknown choices {sorted(unknown)}")
    out: dict[str, Any] = {}
    for choice in configuration_choices(configuration):
        out.update(declared.get(choice, {}))
    return out


def arms_with_choices(arm_names: Iterable[str], configuration: str) -> list[str]:
    """The arms of ``arm_names`` that ``configuration`` changes, in the order given."""
    from agentmem.arms import ARMS

    return [
        a
        for a in arm_names
        if a in ARMS and choice_overrides(getattr(ARMS[a], "study_choices", {}), configuration)
    ]
