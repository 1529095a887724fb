"""The further corpora the study's findings are re-checked on (config ``robustness``).

Each :class:`RobustnessCorpus` is one corpus the workflow generates, embeds, runs the
robustness arms on (one untimed pass through their batch search) and scores under
``results/robustness/<id>/``, in the layout of ``results/`` itself (``corpus/<size>/``,
``builds/<size>/<arm>.json``, ...; its tables carry the size, ``tables/by_class_<size>.csv``),
so that :class:`agentmem.report.reference.OurResults` reads it as it reads the headline run:

- ``seed-<n>``: the default options with corpus seed ``n``, at ``robustness.seed_size``;
- ``<variant>``: the default options with the variant's overrides, at
  ``robustness.variant_size``;
- ``default-<size>``: the default options at the variants' size, their baseline, when that
  size is not the main size (at the main size the headline run is the baseline);
- ``model-<name>``: the headline corpus embedded by a further model (``robustness.models``);
- ``study-corpus``: the study's own generated corpus (``robustness.study_corpus``), read
  from its generator's file (:mod:`agentmem.corpus.study`) instead of generated.

docs/ROBUSTNESS.md describes the variants and why each is there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import polars as pl

if TYPE_CHECKING:
    from agentmem.config import Config, CorpusConfig

Kind = Literal["seed", "variant", "baseline", "model", "study-corpus"]


@dataclass(frozen=True)
class RobustnessCorpus:
    """One further corpus.

    Attributes:
        id: its directory name under ``results/robustness/`` (``seed-<n>``, the variant's
            name, ``default-<size>``, ``model-<name>`` or ``study-corpus``).
        kind: ``seed``, ``variant``, ``baseline`` (the variants' default-options corpus),
            ``model`` (the headline corpus, another embedding model) or ``study-corpus``.
        size: the corpus size it is generated at (a key of ``sizes``); the study's corpus
            is labelled with the main size, the size of the study's own headline corpus.
        options: the generator options (the study's corpus is read, not generated).
        overrides: what differs from ``corpus`` (``{"seed": n}`` for a seed corpus).
        model: the embedding model, None for the headline one (``embedding.model``).
        source: the file the corpus is read from (``study-corpus`` only).
    """

    id: str
    kind: Kind
    size: str
    options: CorpusConfig
    overrides: dict
    model: str | None = None
    source: str | None = None

    @property
    def root(self) -> str:
        """Its results directory, ``results/robustness/<id>``."""
        return f"results/robustness/{self.id}"


def robustness_corpora(cfg: Config) -> dict[str, RobustnessCorpus]:
    """Every further corpus by id: seeds, baseline, variants, models, the study's corpus.

    The study's corpus is there when ``robustness.study_corpus`` is set, whether or not its
    file exists (the workflow's plan drops it with a notice when it does not). The baseline
    ``default-<size>`` is there when variants are configured at a size other than the main
    size.
    """
    from agentmem.config import variant_options
    from agentmem.config.robustness import STUDY_CORPUS_ID

    rob = cfg.robustness
    out: dict[str, RobustnessCorpus] = {}
    seed_size = rob.seed_size or cfg.main_size
    for seed in rob.seeds:
        opts = cfg.corpus.model_copy(update={"seed": seed})
        out[f"seed-{seed}"] = RobustnessCorpus(
            f"seed-{seed}", "seed", seed_size, opts, {"seed": seed}
        )
    variant_size = rob.variant_size or cfg.main_size
    if rob.variants and variant_size != cfg.main_size:
        rid = f"default-{variant_size}"
        out[rid] = RobustnessCorpus(rid, "baseline", variant_size, cfg.corpus, {})
    for v in rob.variants:
        opts = variant_options(cfg.corpus, v.options)
        out[v.name] = RobustnessCorpus(v.name, "variant", variant_size, opts, dict(v.options))
    for model in rob.models:
        rid = f"model-{model}"
        out[rid] = RobustnessCorpus(rid, "model", cfg.main_size, cfg.corpus, {}, model)
    if rob.study_corpus is not None:
        out[STUDY_CORPUS_ID] = RobustnessCorpus(
            STUDY_CORPUS_ID, "study-corpus", cfg.main_size, cfg.corpus, {}, source=rob.study_corpus
        )
    return out


def robustness_arms(cfg: Config) -> list[str]:
    """The arms run on every further corpus, in the order of ``arms``.

    ``robustness.arms`` that are configured in ``arms``; when it is null, the study's ten
    arms (:data:`agentmem.report.reference.REFERENCE_ARMS`) that are.
    """
    if cfg.robustness.arms is None:
        from agentmem.report.reference import REFERENCE_ARMS

        wanted = set(REFERENCE_ARMS)
    else:
        wanted = set(cfg.robustness.arms)
    return [a for a in cfg.arms if a in wanted]


def check_corpus(
    arms: Sequence[str],
    arm_params: Mapping[str, Mapping[str, Any]],
    corpus_dir: str | Path,
    embeddings: str | Path,
    stores_dir: str | Path,
    outputs: Mapping[str, Any],
    k: int = 10,
    anomaly: Mapping[str, Any] | None = None,
    postfilter: Mapping[str, Any] | None = None,
    choices: Sequence[str] = (),
) -> pl.DataFrame:
    """Run the robustness arms on one further corpus and the probes the findings read.

    Each arm is built from scratch in ``stores_dir/<arm>`` and answers every query once,
    untimed (:func:`agentmem.runner.run_arm` with ``batch``: one pass through the arm's
    batch search, no latency); its run is scored
    with the corpus's qrels and memories (:func:`agentmem.report.tables.score_run_file`)
    and the scores tabulated by class. Then, on the stores just built, the update-anomaly
    probe (:func:`agentmem.trials.anomaly.run_anomaly_probe`), the post-filter sweep
    (:func:`agentmem.sweeps.postfilter.postfilter_sweep`) and the study's implementation
    choices (:func:`agentmem.sweeps.choices.choices_sweep`).

    Args:
        arms: arm names, in table order.
        arm_params: constructor parameters by arm (config ``arm_params``).
        corpus_dir: the corpus directory (memories, sessions, facts, entities, queries, qrels).
        embeddings: the corpus's embeddings Parquet.
        stores_dir: the directory of the arms' stores (created).
        outputs: ``runs``, ``builds``, ``plans``, ``metrics`` (one path per arm each, in the
            order of ``arms``), ``by_class_csv``, ``by_class_md``, and ``choices``,
            ``anomaly`` and ``postfilter`` (CSV paths; a probe that does not run leaves a
            header-only file).
        k: result list length.
        anomaly: ``{"arms": [...], "settings": config trials.anomaly}``, or None (no probe).
        postfilter: ``{"arms": [...], "overfetch": [...]}``, or None (no sweep).
        choices: configurations of :data:`agentmem.choices.CONFIGURATIONS` to run the arms
            under (``()``: none).

    Returns:
        The by-class table.

    Raises:
        ValueError: when an ``outputs`` list does not have one path per arm.
    """
    from agentmem.io import write_csv
    from agentmem.report.tables import score_run_file, write_by_class
    from agentmem.runner import run_arm
    from agentmem.sweeps.choices import choices_sweep
    from agentmem.sweeps.postfilter import postfilter_sweep
    from agentmem.trials.anomaly import run_anomaly_probe

    for key in ("runs", "builds", "plans", "metrics"):
        if len(outputs[key]) != len(arms):
            raise ValueError(f"outputs[{key!r}] has {len(outputs[key])} paths for {len(arms)} arms")
    corpus, stores = Path(corpus_dir), Path(stores_dir)
    stores.mkdir(parents=True, exist_ok=True)
    for i, arm in enumerate(arms):
        run_arm(
            arm,
            dict(arm_params.get(arm, {})),
            corpus,
            embeddings,
            stores / arm,
            outputs["runs"][i],
            outputs["builds"][i],
            outputs["plans"][i],
            k=k,
            warmup=0,
            repeats=1,
            batch=True,
        )
        score_run_file(
            outputs["runs"][i],
            corpus / "queries.parquet",
            corpus / "qrels.parquet",
            outputs["metrics"][i],
            k=k,
            memories=corpus / "memories.parquet",
        )
    table = write_by_class(
        dict(zip(arms, outputs["metrics"], strict=True)),
        outputs["by_class_csv"],
        outputs["by_class_md"],
        latency_note="no latency: quality only, one untimed pass (the headline runs are timed)",
    )
    if "choices" in outputs:
        sweep = choices_sweep(
            corpus,
            embeddings,
            {a: stores / a for a in arms},
            list(choices),
            k=k,
            arm_params={a: dict(p) for a, p in arm_params.items()},
        )
        write_csv(outputs["choices"], sweep)
    if anomaly is not None:
        rows = []
        for arm in anomaly["arms"]:
            out = stores / f".anomaly-{arm}.csv"
            run_anomaly_probe(
                arm,
                dict(arm_params.get(arm, {})),
                stores / arm,
                corpus,
                embeddings,
                out,
                anomaly["settings"],
            )
            rows.append(pl.read_csv(out))
        write_csv(outputs["anomaly"], pl.concat(rows, how="diagonal_relaxed"))
    elif "anomaly" in outputs:
        write_csv(outputs["anomaly"], pl.DataFrame(schema={"arm": pl.String}))
    if postfilter is not None:
        sweep = postfilter_sweep(
            corpus,
            embeddings,
            {a: stores / a for a in postfilter["arms"]},
            overfetch=postfilter["overfetch"],
            k=k,
            arm_params={a: dict(p) for a, p in arm_params.items()},
        )
        write_csv(outputs["postfilter"], sweep)
    elif "postfilter" in outputs:
        write_csv(outputs["postfilter"], pl.DataFrame(schema={"arm": pl.String}))
    return table
