"""The workflow's external datasets: which exist, their runs, inputs and targets.

Each dataset id (``<name>`` for an agentmem-memory dataset, ``<name>-<unit>`` for a LoCoMo
unit) is prepared, embedded, run by the arms of its entry in each of its settings and
scored under ``results/external/<id>/`` (docs/DATASETS.md).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from snakemake.exceptions import WorkflowError

from agentmem.config import EXTERNAL_SETTINGS, Config
from agentmem.external import DatasetError, validate_dataset
from agentmem.external.schema import DATASET_FILES
from agentmem.sweeps.ablation import ablated_arms
from agentmem.workflow.selection import ExternalRun, external_runs


class PreflightError(Exception):
    """A dataset or setting that stops the workflow before any job; the message says why."""


def source_present(entry: Any) -> bool:
    """Whether an ``external`` entry's source (LoCoMo file, dataset directory) exists."""
    p = Path(entry.path)
    return p.is_file() if entry.format == "locomo" else p.is_dir()


class ExternalPlan:
    """The external datasets of one configuration.

    Attributes:
        runs: every configured dataset by id (:class:`ExternalRun`), present or not.
        locomo_names: the entries of format ``locomo``, by name.
        present: names of the entries whose source exists (the others are skipped).
        ids: ids of the datasets the default target builds: source present and some
            configured arm to run.
        notices: one line per entry left out, saying why and what to set.
    """

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.runs = external_runs(cfg)
        self.locomo_names = [n for n, d in cfg.external.items() if d.format == "locomo"]
        self.present = [n for n, d in cfg.external.items() if source_present(d)]
        self.ids = [i for i, r in self.runs.items() if r.name in self.present and r.arms]
        self.notices: list[str] = []
        for name, entry in cfg.external.items():
            if name in self.present:
                continue
            if entry.format == "locomo":
                self.notices.append(
                    f"LoCoMo file {entry.path} not found: skipping the LoCoMo targets "
                    f"(set external.{name}.path in config/config.yaml or in your --configfile)."
                )
            else:
                self.notices.append(
                    f"dataset directory {entry.path} not found: skipping the targets of "
                    f"external.{name} (set its path; the format: docs/DATASETS.md)."
                )
        for name, entry in cfg.external.items():
            if name in self.present and entry.arms is not None:
                if not any(r.arms for r in self.runs.values() if r.name == name):
                    why = "is []" if not entry.arms else f"{entry.arms} names none of arms"
                    self.notices.append(f"external.{name}.arms {why}: skipping its targets")

    def check_datasets(self) -> None:
        """Validate every present agentmem-memory dataset (file, line and field of a fault).

        Raises:
            PreflightError: ``agentmem: external.<name>: <what is wrong>``.
        """
        for name in self.present:
            if self.cfg.external[name].format == "agentmem-memory":
                try:
                    validate_dataset(self.cfg.external[name].path)
                except DatasetError as exc:
                    raise PreflightError(f"agentmem: external.{name}: {exc}") from None

    # -- input functions of the {dataset}, {locomo} and {setting} wildcards -----------------

    def run(self, wildcards: Any) -> ExternalRun:
        """The :class:`ExternalRun` of the {dataset} wildcard."""
        return self.runs[wildcards.dataset]

    def locomo_path(self, wildcards: Any) -> str:
        """The {locomo} entry's configured LoCoMo file (``external.<name>.path``)."""
        return self.cfg.external[wildcards.locomo].path

    def locomo_source(self, wildcards: Any) -> list[str]:
        """The {locomo} entry's LoCoMo file as an input when present, else nothing.

        Without it the job fails with a message saying where to get the file.
        """
        path = self.locomo_path(wildcards)
        return [path] if Path(path).is_file() else []

    def locomo_limit(self, wildcards: Any) -> int | None:
        """The {locomo} entry's ``limit_conversations`` (None: every conversation)."""
        return self.cfg.external[wildcards.locomo].limit_conversations

    def source(self, wildcards: Any) -> list[str]:
        """The dataset files prepare_external reads for the {dataset}.

        A LoCoMo unit's converted dataset, or the configured directory's files (none when
        it is missing: the job then says so).
        """
        run = self.run(wildcards)
        if run.format == "agentmem-memory" and not Path(run.path).is_dir():
            return []
        return [f"{run.source}/{name}" for name in DATASET_FILES]

    def prepare_params(self, wildcards: Any) -> str:
        """The dataset directory prepare_external reads (``ExternalRun.source``)."""
        return self.run(wildcards).source

    def warmup(self, wildcards: Any) -> int:
        """Untimed calls per query of the {dataset}'s runs (its entry's ``warmup``)."""
        return self.cfg.external[self.run(wildcards).name].warmup

    def repeats(self, wildcards: Any) -> int:
        """Calls per query of the {dataset}'s runs (its entry's ``repeats``)."""
        return self.cfg.external[self.run(wildcards).name].repeats

    def batch(self, wildcards: Any) -> bool:
        """Whether the {dataset}'s runs are one untimed batch pass (no warm-up, one call).

        Such runs only score quality: the arms answer through their batch search
        (:func:`agentmem.runner.batch_pass`) and record no latency.
        """
        return (self.warmup(wildcards), self.repeats(wildcards)) == (0, 1)

    @staticmethod
    def priority(wildcards: Any) -> float:
        """The priority of the {arm}'s run on a dataset: its ``query_cost`` - 1 (0 for most).

        A costlier arm's untimed run starts first among the dataset's runs
        (:attr:`agentmem.arms.base.ArmBase.query_cost`), so it does not end the study alone.
        """
        from agentmem.arms import ARMS

        return float(getattr(ARMS[wildcards.arm], "query_cost", 1.0)) - 1.0

    def runs_both(self, dataset: str) -> bool:
        """Whether the dataset's entry runs every setting (then one job per arm runs all)."""
        return set(self.runs[dataset].settings) == set(EXTERNAL_SETTINGS)

    @staticmethod
    def job_settings(wildcards: Any) -> list[str]:
        """The settings one arm job runs: its {setting} wildcard's, else every setting."""
        setting = getattr(wildcards, "setting", None)
        return [setting] if setting else list(EXTERNAL_SETTINGS)

    def ids_regex(self, both: bool) -> str:
        """The {dataset} constraint of the arm jobs: ids that run every setting, or not.

        ``both``: the ids whose entry runs every setting; else the others. A pattern
        matching nothing when there is none.
        """
        ids = [i for i in self.runs if self.runs_both(i) == both]
        return "|".join(re.escape(i) for i in ids) or "(?!)"

    def runs_of(self, wildcards: Any) -> list[str]:
        """The runs Parquet of every setting x arm of the {dataset} (settings outer).

        Raises:
            WorkflowError: when the entry runs no arm (none of its ``arms`` is configured).
        """
        run = self.run(wildcards)
        if not run.arms:
            raise WorkflowError(
                f"{wildcards.dataset}: external.{run.name}.arms names none of the configured "
                f"arms {list(self.cfg.arms)}: nothing to score"
            )
        return [
            f"results/external/{wildcards.dataset}/runs/{setting}/{arm}.parquet"
            for setting, arm in self.run_keys(wildcards)
        ]

    def run_keys(self, wildcards: Any) -> list[list[str]]:
        """[setting, arm] of each of :meth:`runs_of`'s files, in the same order."""
        run = self.run(wildcards)
        return [[setting, arm] for setting in run.settings for arm in run.arms]

    def ablation_arms(self, wildcards: Any) -> list[str]:
        """The {dataset}'s arms that declare ablations, when it runs scoped (else none)."""
        run = self.run(wildcards)
        return ablated_arms(run.arms) if "scoped" in run.settings else []

    def ablation_stores(self, wildcards: Any) -> list[str]:
        """The scoped store directories of :meth:`ablation_arms`, in the same order.

        The store of both settings when the dataset runs both (one job builds it), else
        the scoped setting's own.
        """
        d = wildcards.dataset
        root = f"results/stores/external/{d}" + ("" if self.runs_both(d) else "/scoped")
        return [f"{root}/{a}" for a in self.ablation_arms(wildcards)]

    def ablation_runs(self, wildcards: Any) -> list[str]:
        """The scoped runs of :meth:`ablation_arms` (made with their stores), same order."""
        d = wildcards.dataset
        return [
            f"results/external/{d}/runs/scoped/{a}.parquet" for a in self.ablation_arms(wildcards)
        ]

    def tuning_scopes(self, wildcards: Any) -> list[str]:
        """The {dataset} entry's ``tuning_scopes`` (scored apart as ``held-out``)."""
        return list(self.cfg.external[self.run(wildcards).name].tuning_scopes)

    def units(self) -> dict[str, str | None]:
        """Dataset id -> the LoCoMo unit whose published figures are shown beside it."""
        return {i: (r.unit if r.format == "locomo" else None) for i, r in self.runs.items()}

    def published_unit(self, wildcards: Any) -> str | None:
        """The LoCoMo unit whose published figures the {dataset}'s comparison shows.

        ``None`` for an agentmem-memory dataset (no published figures).
        """
        return self.units()[wildcards.dataset]

    def figure_options(self, wildcards: Any) -> dict[str, Any]:
        """Keyword arguments of the external figure: the dataset id and its published unit."""
        return {"dataset": wildcards.dataset, "unit": self.published_unit(wildcards)}

    # -- targets ----------------------------------------------------------------------------

    def targets(self) -> list[str]:
        """Every present external dataset's scores, comparison, figure and ablation sweep.

        The ablation sweep only when the dataset runs scoped an arm that declares
        ablations.
        """
        out = []
        for i in self.ids:
            out += [
                f"results/external/{i}/scores.csv",
                f"results/external/{i}/vs_published.md",
                f"results/figures/external-{i}.svg",
            ]
            run = self.runs[i]
            if "scoped" in run.settings and ablated_arms(run.arms):
                out.append(f"results/external/{i}/ablation.csv")
        return out

    def scores(self) -> list[str]:
        """Scores of the external datasets in the report (those whose source exists)."""
        return [f"results/external/{i}/scores.csv" for i in self.ids]
