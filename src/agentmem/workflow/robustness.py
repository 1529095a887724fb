"""The workflow's further corpora (docs/ROBUSTNESS.md): their files, inputs and arms.

Each further corpus has its results tree under ``results/robustness/<id>/`` in the layout
of ``results/`` itself (:mod:`agentmem.robustness`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from snakemake.exceptions import WorkflowError
from snakemake.io import expand

from agentmem.choices import RUNS_BY_KIND
from agentmem.config import Config
from agentmem.config.robustness import STUDY_CORPUS_ID
from agentmem.report.reference import ANOMALY_ARM
from agentmem.robustness import robustness_arms, robustness_corpora
from agentmem.sweeps.postfilter import postfilter_roles
from agentmem.workflow.sources import Sources

#: the results tree of the {variant} wildcard's corpus
ROB = "results/robustness/{variant}"


class RobustnessPlan:
    """The further corpora of one configuration.

    Args:
        cfg: the validated configuration.
        main: the main size.
        encoder_model: the exported graphs the headline encoder reads.
        sources: where library files are.

    Attributes:
        arms: the arms run on each further corpus (untimed).
        corpora: the further corpora by id (:class:`agentmem.robustness.RobustnessCorpus`);
            none when no robustness arm is configured (a second ``--configfile`` narrowing
            ``arms``).
        notices: a line when corpora are configured but no arm is left to run on them,
            and one when the study's corpus file is configured but absent.
    """

    def __init__(self, cfg: Config, main: str, encoder_model: list[str], sources: Sources) -> None:
        self.cfg = cfg
        self.main = main
        self.encoder_model = encoder_model
        self.sources = sources
        self.arms = robustness_arms(cfg)
        configured = robustness_corpora(cfg)
        self.notices: list[str] = []
        study = configured.get(STUDY_CORPUS_ID)
        if study is not None and not Path(str(study.source)).is_file():
            del configured[STUDY_CORPUS_ID]
            self.notices.append(
                f"the study's corpus file {study.source} not found: skipping the further "
                f"corpus {STUDY_CORPUS_ID} (make it with the study's own generator, "
                "README.md 'The study's own corpus'; or set robustness.study_corpus: null)"
            )
        self.corpora = configured if self.arms else {}
        if configured and not self.arms:
            self.notices.append(
                "robustness.arms names none of the configured arms: skipping the further "
                "corpora (the findings table then has the study's and the headline run's "
                "columns only)"
            )

    def size(self, variant: str) -> str:
        """The corpus size of further corpus ``variant``."""
        return self.corpora[variant].size

    def size_params(self, wildcards: Any) -> dict[str, Any]:
        """Size settings of the {variant} wildcard's generated corpus at {size}.

        The facts are the size's; the questions per class are ``robustness.queries_per_class``
        (null: the main size's), so every further corpus is asked as many questions a class
        as the headline corpus (docs/ROBUSTNESS.md).
        """
        per_class = self.cfg.robustness.queries_per_class
        if per_class is None:
            per_class = self.cfg.sizes[self.main].queries_per_class
        return {**self.cfg.sizes[wildcards.size].model_dump(), "queries_per_class": per_class}

    def options(self, wildcards: Any) -> dict[str, Any]:
        """Generator options of the {variant} wildcard's corpus.

        Raises:
            WorkflowError: when {size} is not the size the corpus is configured at.
        """
        corpus = self.corpora[wildcards.variant]
        if wildcards.size != corpus.size:
            key = {"seed": "robustness.seed_size", "model": "main_size"}.get(
                corpus.kind, "robustness.variant_size"
            )
            raise WorkflowError(
                f"{corpus.id} is configured at size {corpus.size} ({key}), not {wildcards.size}"
            )
        return corpus.options.model_dump()

    def files(self, variant: str, *patterns: str) -> list[str]:
        """Files of corpus ``variant`` at its size.

        ``patterns`` are relative to the corpus's root, with ``{size}`` and ``{arm}``; a
        pattern naming ``{arm}`` gives one file per robustness arm.
        """
        root = self.corpora[variant].root
        return [
            f
            for p in patterns
            for f in expand(
                f"{root}/{p}", size=self.size(variant), arm=self.arms, allow_missing=True
            )
        ]

    def study_source(self, wildcards: Any = None) -> list[str]:
        """The study's corpus file, the input of its import ([] when it is not run)."""
        corpus = self.corpora.get(STUDY_CORPUS_ID)
        return [] if corpus is None else [str(corpus.source)]

    def choices(self, wildcards: Any) -> list[str]:
        """The choices configurations run on the {variant} wildcard's corpus (by its kind)."""
        return list(RUNS_BY_KIND.get(self.corpora[wildcards.variant].kind, ()))

    def swept_arms(self) -> list[str]:
        """The post-filtering arms among the robustness arms (the post-filter sweep's)."""
        return postfilter_roles(self.arms)[0]

    def anomaly_arms(self) -> list[str]:
        """The arm the study ran its update-anomaly probe on, if it is a robustness arm."""
        return [a for a in self.arms if a == ANOMALY_ARM]

    def inputs(self, variant: str) -> list[str]:
        """Every file of corpus ``variant`` the findings table reads."""
        return self.files(
            variant,
            "corpus/{size}/manifest.json",
            "tables/by_class_{size}.csv",
            "tables/choices_{size}.csv",
            "tables/validation_{size}.csv",
            "trials/anomaly_{size}.csv",
            "sweeps/postfilter_{size}.csv",
            "builds/{size}/{arm}.json",
        )

    def encoder_after(self, wildcards: Any) -> list[str]:
        """The headline vectors the {variant}'s encoder waits for (to read them from the cache).

        Those of its size for a design variant or their baseline (the headline seed and
        model: most texts shared), when the headline run embeds that size; none for a
        seed, a further model or the study's corpus (hardly a text shared), whose encoder
        starts as soon as the model is there.
        """
        corpus = self.corpora[wildcards.variant]
        embedded = {self.main, *self.cfg.scaling_sizes}
        if corpus.kind not in ("variant", "baseline") or corpus.size not in embedded:
            return []
        return [f"results/embeddings/{corpus.size}.parquet"]

    def encoder(self, wildcards: Any) -> list[str]:
        """The exported model the {variant}'s encoder reads.

        None for a further model, which ships its own graph.
        """
        return [] if self.corpora[wildcards.variant].model else self.encoder_model

    def outputs(self, pattern: str) -> list[str]:
        """``pattern`` (under a corpus's root, with ``{arm}``) for every robustness arm.

        The {variant} and {size} wildcards are kept for the rule's own wildcards.
        """
        return expand(f"{ROB}/{pattern}", arm=self.arms, allow_missing=True)

    def arm_sources(self, wildcards: Any = None) -> list[str]:
        """Source files of every robustness arm, the runner and the probes.

        Editing one reruns the further corpora's runs.
        """
        lib = self.sources.library_file
        return [
            *self.sources.arms(self.arms),
            lib("agentmem/runner.py"),
            lib("agentmem/robustness.py"),
            lib("agentmem/trials/anomaly.py"),
            lib("agentmem/sweeps/postfilter.py"),
            lib("agentmem/sweeps/choices.py"),
            lib("agentmem/choices.py"),
        ]

    def findings_corpora(self) -> dict[str, list[str]]:
        """Further corpus id -> [kind, size, results directory], in config order."""
        return {i: [c.kind, c.size, c.root] for i, c in self.corpora.items()}

    def seed_by_class(self) -> dict[str, str]:
        """Seed label -> by-class CSV of each seed corpus.

        The headline run's table is there too when the seeds are at the main size.
        """
        seeds = {i: c for i, c in self.corpora.items() if c.kind == "seed"}
        out = {}
        if not seeds or any(c.size == self.main for c in seeds.values()):
            out[f"seed-{self.cfg.corpus.seed}"] = "results/tables/by_class.csv"
        for i, c in seeds.items():
            out[i] = f"{c.root}/tables/by_class_{c.size}.csv"
        return out
