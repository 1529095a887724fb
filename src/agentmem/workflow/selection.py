"""Which arms and datasets each part of the workflow runs, read from a :class:`Config`.

Plain functions of the validated configuration, so the workflow's rule files only wire
them (``workflow/rules/common.smk``) and the tests can check them without Snakemake.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentmem.config import Config, LocomoConfig


@dataclass(frozen=True)
class ExternalRun:
    """One dataset the workflow prepares, embeds, runs every arm on and scores.

    Attributes:
        id: ``<name>`` for an agentmem-memory dataset, ``<name>-<unit>`` for a LoCoMo unit;
            its outputs are under ``results/external/<id>/``.
        name: its key under ``external``.
        format: ``locomo`` or ``agentmem-memory``.
        unit: the LoCoMo memory unit, ``None`` for an agentmem-memory dataset.
        path: the configured ``path`` (the LoCoMo JSON or the dataset directory).
        source: the agentmem-memory directory the workflow prepares: ``path``, or for a
            LoCoMo unit the converter's output ``results/external/<name>/source/<unit>``.
        settings: the retrieval settings (:data:`EXTERNAL_SETTINGS`) it runs.
        arms: the arms it runs: its entry's ``arms`` that are in ``arms``, in the order of
            ``arms`` (every arm if the entry has none); empty when none of them is (a second
            ``--configfile`` narrowing ``arms``), and then the workflow skips the dataset.
    """

    id: str
    name: str
    format: str
    unit: str | None
    path: str
    source: str
    settings: tuple[str, ...]
    arms: tuple[str, ...]


def external_runs(cfg: Config) -> dict[str, ExternalRun]:
    """Every configured external dataset by id, in config order (a LoCoMo entry's in unit order)."""
    out: dict[str, ExternalRun] = {}
    for name, d in cfg.external.items():
        arms = tuple(a for a in cfg.arms if d.arms is None or a in d.arms)
        settings = tuple(d.settings)
        if isinstance(d, LocomoConfig):
            for unit in d.units:
                rid = f"{name}-{unit}"
                source = f"results/external/{name}/source/{unit}"
                out[rid] = ExternalRun(rid, name, d.format, unit, d.path, source, settings, arms)
        else:
            out[name] = ExternalRun(name, name, d.format, None, d.path, d.path, settings, arms)
    return out


def conversation_arms(cfg: Config) -> list[str]:
    """The ``seed_systems.conversation.arms`` that are configured in ``arms``, in order."""
    have = set(cfg.arms)
    return [a for a in cfg.seed_systems.conversation.arms if a in have]


def scaling_arms(cfg: Config) -> list[str]:
    """The arms the scaling sweep runs: ``scaling_arms`` that are in ``arms`` (every arm if null).

    In the order of ``arms``, so a second ``--configfile`` that narrows ``arms`` narrows the
    sweep with it.
    """
    if cfg.scaling_arms is None:
        return list(cfg.arms)
    wanted = set(cfg.scaling_arms)
    return [a for a in cfg.arms if a in wanted]


def budget_arms(cfg: Config) -> list[str]:
    """The arms the token-budget sweep runs, in the order of ``arms``.

    Every configured arm with ``sweeps.budget_products``; without it, the arms whose
    class is not a product's (``family != "product"``).
    """
    from agentmem.arms import ARMS

    if cfg.sweeps.budget_products:
        return list(cfg.arms)
    return [a for a in cfg.arms if ARMS[a].family != "product"]


def paired_tests(cfg: Config) -> list[list[str]]:
    """The ``report.paired_tests`` pairs whose two arms are both configured in ``arms``."""
    have = set(cfg.arms)
    return [[a, b] for a, b in cfg.report.paired_tests if a in have and b in have]
