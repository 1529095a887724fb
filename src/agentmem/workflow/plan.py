"""What the workflow builds for one configuration: sizes, arms, targets and input files.

:class:`Plan` is computed once from the validated :class:`~agentmem.config.Config` when the
Snakefile is parsed. ``workflow/rules/common.smk`` binds its attributes and methods to the
names the rules use. Input functions are methods taking Snakemake's ``wildcards`` (any
object with the wildcard names as attributes).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from snakemake.io import expand

from agentmem.choices import RUNS_BY_KIND, arms_with_choices
from agentmem.config import Config
from agentmem.jobs import CORPUS_FILES
from agentmem.sweeps.ablation import ablated_arms
from agentmem.sweeps.pareto import Point, grid_points, knobbed_arms
from agentmem.sweeps.postfilter import postfilter_roles
from agentmem.workflow.external import ExternalPlan
from agentmem.workflow.robustness import RobustnessPlan
from agentmem.workflow.selection import budget_arms, conversation_arms, scaling_arms
from agentmem.workflow.sources import Sources

#: the report's figures, each a target ``results/figures/<name>.svg`` (and ``.png``)
FIGURE_NAMES = (
    "ndcg_heatmap",
    "crash",
    "lost_update",
    "fleet",
    "anomaly",
    "postfilter",
    "budget",
    "scaling",
    "validation",
    "er_diagram",
    "overall",
    "latency",
    "storage",
    "capabilities",
    "conversation",
    "decay",
    "findings",
)

#: the operating-points figures, each a target ``results/figures/<name>.svg``
PARETO_FIGURES = ("pareto", "pareto_classes", "pareto_storage")


class Plan:
    """The workflow of one configuration.

    Args:
        cfg: the validated configuration.
        basedir: the repository root (the Snakefile's directory); library files are
            listed as inputs under ``basedir/src`` so that editing one reruns its dependants.

    Attributes:
        sizes: every configured size; ``main``: the main size; ``corpus_sizes``: the sizes
            whose corpus is built (main size first, then the scaling sizes).
        arm_names: the configured arms, in order. ``fleet_arms``, ``scaling_arms``,
            ``postfilter_arms``, ``ablation_arms``, ``conversation_arms``, ``budget_arms``:
            the arms each experiment runs (each from its config section and the arms'
            declarations).
        external: the external datasets (:class:`ExternalPlan`); ``robustness``: the
            further corpora (:class:`RobustnessPlan`).
        notices: lines the workflow prints before it starts (parts it leaves out, and why).
    """

    def __init__(self, cfg: Config, basedir: str | Path) -> None:
        self.cfg = cfg
        self.basedir = Path(basedir)
        self.sizes = list(cfg.sizes)
        self.main = cfg.main_size
        self.main_corpus = f"results/corpus/{self.main}"
        self.corpus_sizes = list(dict.fromkeys([self.main, *cfg.scaling_sizes]))
        self.arm_names = list(cfg.arms)
        fleet = cfg.trials.fleet
        self.fleet_arms = [a for a in self.arm_names if fleet.arms is None or a in fleet.arms]
        self.fleet_size = fleet.size or self.main
        self.crash_families = list(cfg.trials.crash.families)
        self.scaling_arms = scaling_arms(cfg)
        self.scaling_entries = [(a, s) for s in cfg.scaling_sizes for a in self.scaling_arms]
        self.postfilter_arms = [a for role in postfilter_roles(self.arm_names) for a in role]
        self.ablation_arms = ablated_arms(self.arm_names)
        self.conversation_arms = conversation_arms(cfg)
        self.budget_arms = budget_arms(cfg)
        self.figures = [f"results/figures/{name}.svg" for name in FIGURE_NAMES]
        self.onnx_encoder = f"results/cache/encoder/{cfg.embedding.model}.onnx"
        self.onnx_int8_encoder = f"results/cache/encoder/{cfg.embedding.model}.int8.onnx"
        self.external = ExternalPlan(cfg)
        self.sources = Sources(basedir)
        self.robustness = RobustnessPlan(cfg, self.main, self.encoder_model(), self.sources)
        #: the study's choices on the headline corpus: configurations and the arms they change
        self.choice_configurations = list(RUNS_BY_KIND.get("headline", ()))
        self.choice_arms = [
            a
            for a in self.robustness.arms
            if any(arms_with_choices([a], c) for c in self.choice_configurations)
        ]
        #: the operating-points sweep: its size and every arm's points, in arm order
        self.pareto_size = cfg.pareto.size or self.main
        asked = self.arm_names if cfg.pareto.arms is None else cfg.pareto.arms
        self.pareto_arms = [a for a in knobbed_arms(asked) if a in self.arm_names]
        grids = {
            a: grid_points(a, cfg.arm_params.get(a), cfg.pareto.grids.get(a))
            for a in self.pareto_arms
        }
        # an arm whose grid holds no point but the default has no operating points to show
        self.pareto_arms = [a for a in self.pareto_arms if len(grids[a]) > 1]
        self.pareto_points: list[Point] = [p for a in self.pareto_arms for p in grids[a]]
        self.notices: list[str] = []
        left_out = [a for a in fleet.arms or () if a not in self.arm_names]
        if left_out:
            self.notices.append(
                f"trials.fleet.arms {left_out} are not in arms: the fleet leaves them out"
                + ("" if self.fleet_arms else " (no arm is left: its table holds the columns only)")
            )
        unrun = [a for a in cfg.pareto.arms or () if a not in self.arm_names]
        if unrun:
            self.notices.append(
                f"pareto.arms {unrun} are not in arms: the operating points leave them out"
            )
        self.notices += self.robustness.notices + self.external.notices

    # -- sizes and settings ---------------------------------------------------------------

    def above_main(self, size: str) -> bool:
        """True for a corpus size with more facts than the main size (its runs come last)."""
        return self.cfg.sizes[size].facts > self.cfg.sizes[self.main].facts

    def size_params(self, wildcards: Any) -> dict[str, Any]:
        """Size settings (facts, queries_per_class) of the {size} wildcard."""
        return self.cfg.sizes[wildcards.size].model_dump()

    def arm_params(self, wildcards: Any) -> dict[str, Any]:
        """Constructor parameters of the {arm} wildcard, from config ``arm_params``."""
        return dict(self.cfg.arm_params.get(wildcards.arm, {}))

    def encoder_model(self, wildcards: Any = None) -> list[str]:
        """The graphs an encoder job reads, by ``embedding.backend``.

        The ONNX export for ``onnx``; for ``onnx-int8`` the fp32 export (the path the job
        is given) and its int8 graph beside it (what it runs); none for ``torch``.
        """
        return self.encoder_graphs(self.cfg.embedding.backend)

    def encoder_graphs(self, backend: str) -> list[str]:
        """The graphs an encoder job of ``backend`` reads (see :meth:`encoder_model`)."""
        return {
            "onnx": [self.onnx_encoder],
            "onnx-int8": [self.onnx_encoder, self.onnx_int8_encoder],
        }.get(backend, [])

    def size_backend(self, size: str) -> str:
        """The encoder backend of the scaling corpus ``size``.

        ``embedding.backend_above_main`` for a size above the main one when it is set,
        else ``embedding.backend``.
        """
        emb = self.cfg.embedding
        if emb.backend_above_main is not None and self.above_main(size):
            return emb.backend_above_main
        return emb.backend

    def size_encoder(self, wildcards: Any) -> list[str]:
        """The graphs the {size} encoder job reads (:meth:`size_backend`)."""
        return self.encoder_graphs(self.size_backend(wildcards.size))

    # -- files ----------------------------------------------------------------------------

    def library_file(self, relpath: str) -> str:
        """Absolute path of a file under ``src/`` (an input, so edits rerun dependants)."""
        return self.sources.library_file(relpath)

    def library_package(self, relpath: str, pattern: str = "*.py") -> list[str]:
        """Absolute paths of a package's files under ``src/``, sorted."""
        return self.sources.library_package(relpath, pattern)

    def captions(self) -> list[str]:
        """Absolute paths of the report's caption files (:meth:`Sources.captions`)."""
        return self.sources.captions()

    @staticmethod
    def corpus_files(*names: str, corpus: str = "results/corpus/{size}") -> dict[str, str]:
        """Named inputs: the files ``names`` (keys of ``CORPUS_FILES``) of one corpus."""
        return {name: f"{corpus}/{CORPUS_FILES[name]}" for name in names}

    def arm_sources(self, wildcards: Any) -> list[str]:
        """Source files an arm run depends on: the {arm}'s files and the runner."""
        return [*self.sources.arms([wildcards.arm]), self.library_file("agentmem/runner.py")]

    def conversation_sources(self) -> list[str]:
        """The conversation sweep's package and the source files of the arms it drives."""
        return [
            *self.library_package("agentmem/sweeps/conversation"),
            *self.sources.arms(self.conversation_arms),
        ]

    def fleet_sources(self) -> list[str]:
        """The fleet trial's package and the source files of the arms it runs."""
        return [
            *self.library_package("agentmem/trials/fleet"),
            *self.sources.arms(self.fleet_arms),
        ]

    def main_files(self, pattern: str, arms: list[str] | None = None) -> list[str]:
        """``pattern`` (with ``{size}`` and ``{arm}``) at the main size for ``arms``.

        ``arms`` defaults to every configured arm; the paths are in arm order.
        """
        return expand(pattern, size=self.main, arm=self.arm_names if arms is None else arms)

    def postfilter_stores(self) -> list[str]:
        """Store directories of the post-filter arms at the main size, in their order."""
        return self.main_files("results/stores/{size}/{arm}", self.postfilter_arms)

    def ablation_stores(self) -> list[str]:
        """Store directories of the ablated arms at the main size, in their order."""
        return self.main_files("results/stores/{size}/{arm}", self.ablation_arms)

    def ablation_runs(self) -> list[str]:
        """The runs of the ablated arms at the main size (built with their stores)."""
        return self.main_files("results/runs/{size}/{arm}.parquet", self.ablation_arms)

    def choice_stores(self) -> list[str]:
        """Store directories, at the main size, of the arms the study's choices change."""
        return self.main_files("results/stores/{size}/{arm}", self.choice_arms)

    def pareto_point_files(self) -> list[str]:
        """Every operating point's record, ``results/pareto/points/{arm}/{point}.json``."""
        return [f"results/pareto/points/{p.arm}/{p.point}.json" for p in self.pareto_points]

    def pareto_targets(self) -> list[str]:
        """The operating points' tables and figures (none when no arm has points)."""
        if not self.pareto_points:
            return []
        return [
            "results/pareto/points.csv",
            "results/pareto/frontier.csv",
            "results/pareto/pareto.md",
            *(f"results/figures/{name}.svg" for name in PARETO_FIGURES),
        ]

    def pareto_point(self, wildcards: Any) -> Point:
        """The operating point the ``{arm}``/``{point}`` wildcards name.

        Raises:
            ValueError: they name no configured point.
        """
        for p in self.pareto_points:
            if p.arm == wildcards.arm and p.point == wildcards.point:
                return p
        raise ValueError(f"no operating point {wildcards.point!r} of {wildcards.arm!r}")

    def pareto_point_inputs(self, wildcards: Any) -> dict[str, Any]:
        """A point's inputs beyond the corpus: for a query-time point the store and build."""
        p = self.pareto_point(wildcards)
        if p.stage == "build":
            return {}
        size = self.pareto_size
        return {
            "store": f"results/stores/{size}/{p.arm}",
            "build": f"results/builds/{size}/{p.arm}.json",
        }

    def pareto_point_params(self, wildcards: Any) -> dict[str, Any]:
        """A point's job parameters: its knob, stage and constructor parameters.

        Only these (not the whole grid) are the job's params, so adding a value to a grid
        runs the new point alone.
        """
        p = self.pareto_point(wildcards)
        return {"knob": p.knob, "stage": p.stage, "params": dict(p.params)}

    def main_metrics(self) -> list[str]:
        """Per-query score tables of every arm at the main size."""
        return self.main_files("results/metrics/{size}/{arm}.parquet")

    def main_builds(self) -> list[str]:
        """Build records of every arm at the main size."""
        return self.main_files("results/builds/{size}/{arm}.json")

    def anomaly_tables(self) -> list[str]:
        """One update-anomaly probe per arm at the main size."""
        return self.main_files("results/trials/anomaly/{size}/{arm}.csv")

    def crash_tables(self) -> list[str]:
        """One crash-trial table per configured family."""
        return expand("results/trials/crash/{family}.csv", family=self.crash_families)

    # -- targets --------------------------------------------------------------------------

    def study_cells(self) -> list[str]:
        """The study's cell table, when its corpus is run ([] otherwise)."""
        from agentmem.config.robustness import STUDY_CORPUS_ID

        if STUDY_CORPUS_ID not in self.robustness.corpora:
            return []
        return ["results/tables/study_cells.csv"]

    def report_figures(self) -> list[str]:
        """Figures in the HTML report.

        An external dataset's when its source exists, the study's cells when its corpus is
        run, the operating points' when any arm has points.
        """
        cells = ["results/figures/study_cells.svg"] if self.study_cells() else []
        pareto = [f for f in self.pareto_targets() if f.startswith("results/figures/")]
        return (
            self.figures
            + [f"results/figures/external-{i}.svg" for i in self.external.ids]
            + cells
            + pareto
        )

    def pareto_tables(self) -> list[str]:
        """The operating points' tables the report reads (none when no arm has points)."""
        if not self.pareto_points:
            return []
        return [f"results/pareto/{name}.csv" for name in ("points", "budgets", "findings")]

    def all_targets(self) -> list[str]:
        """Everything ``snakemake`` builds by default."""
        main = self.main
        return [
            "results/tables/by_class.csv",
            "results/tables/by_class.md",
            "results/tables/capabilities.md",
            "results/tables/fill_rate.csv",
            f"results/tables/hnsw_recall_{main}.json",
            "results/trials/crash.csv",
            "results/trials/lost_update.csv",
            "results/trials/fleet.csv",
            "results/trials/anomaly.csv",
            f"results/trials/restatements/{main}.json",
            "results/tables/validation.csv",
            "results/schema/er.mmd",
            f"results/tables/dense_probe_{main}.csv",
            "results/sweeps/postfilter.csv",
            *(["results/sweeps/ablation.csv"] if self.ablation_arms else []),
            "results/sweeps/budget.csv",
            "results/sweeps/scaling.csv",
            "results/capture.json",
            "results/tables/vs_reference.md",
            "results/tables/paired_bootstrap.csv",
            "results/tables/findings.csv",
            "results/tables/findings.md",
            *self.study_cells(),
            *(["results/figures/study_cells.svg"] if self.study_cells() else []),
            "results/tables/by_class_seeds.csv",
            "results/report/index.html",
            *self.figures,
            *self.pareto_targets(),
            *self.external.targets(),
        ]
