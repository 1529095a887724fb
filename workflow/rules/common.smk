# Helpers, config validation and wildcard constraints (no rules here).
import functools
import re
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from agentmem.config import EXTERNAL_SETTINGS, LOCOMO_UNITS, load_config
from agentmem.workflow.selection import (
    conversation_arms,
    external_runs,
    paired_tests,
    scaling_arms,
)
from agentmem.external import DatasetError, validate_dataset
from agentmem.external.format import DATASET_FILES
from agentmem.external.score import RUN_K
from agentmem.jobs import CORPUS_FILES, CORPUS_TABLES
from agentmem.report.reference import ANOMALY_ARM
from agentmem.robustness import robustness_arms, robustness_corpora
from agentmem.sweeps.ablation import ablated_arms
from agentmem.sweeps.postfilter import postfilter_roles

# 0) plug-in arms (entry-point group agentmem.arms) that clash with another arm's name, fail
#    to import or break the arm contract stop the workflow here, naming arm, package, problem.
from agentmem.arms import PLUGIN_PROBLEMS
from agentmem.arms.registry import format_problems

if PLUGIN_PROBLEMS:
    sys.exit(format_problems(PLUGIN_PROBLEMS))
# 1) the pydantic model: one line per bad key or value, cross-field checks (main_size in
#    sizes, arm names and parameters) ...
CFG = load_config(config)
# 2) ... and the JSON schema generated from it, as Snakemake users expect (fills defaults).
validate(config, schema="../schemas/config.schema.yaml")

# 3) docs/MEASUREMENT.md §1: no two timing jobs overlap, which needs the resource cap bench_slot=1.
#    profiles/default sets it, but a --resources flag on the command line replaces that
#    whole list (Snakemake does not merge it), silently lifting the cap: refuse to start.
#    Only the scheduling process enforces resources; a job running on a node (or in a
#    subprocess) is not given the global list and is not checked.
_bench_slot = workflow.global_resources.get("bench_slot")
_bench_slot = getattr(_bench_slot, "value", _bench_slot)
if workflow.is_main_process and _bench_slot != 1:
    sys.exit(
        f"agentmem: the resource bench_slot must be 1 (got {_bench_slot}), or timing jobs "
        "would run side by side. A --resources flag replaces the list in "
        "profiles/default/config.yaml, so repeat it: "
        "--resources bench_slot=1 background_slot=<N>"
    )

SIZES = list(CFG.sizes)
MAIN = CFG.main_size
#: the main size's corpus directory
MAIN_CORPUS = f"results/corpus/{MAIN}"


def above_main(size):
    """True for a corpus size with more facts than the main size (its runs come last)."""
    return CFG.sizes[size].facts > CFG.sizes[MAIN].facts


#: sizes whose corpus the workflow builds: the main size and the scaling sizes
CORPUS_SIZES = list(dict.fromkeys([MAIN, *CFG.scaling_sizes]))
ARM_NAMES = list(CFG.arms)
# the fleet trial's arms (config trials.fleet.arms, in the order of arms) and corpus size
FLEET_ARMS = [
    a for a in ARM_NAMES if CFG.trials.fleet.arms is None or a in CFG.trials.fleet.arms
]
FLEET_SIZE = CFG.trials.fleet.size or MAIN
_fleet_left_out = [a for a in CFG.trials.fleet.arms or () if a not in ARM_NAMES]
if _fleet_left_out:
    print(
        f"trials.fleet.arms {_fleet_left_out} are not in arms: the fleet leaves them out"
        + ("" if FLEET_ARMS else " (no arm is left: its table holds the columns only)"),
        file=sys.stderr,
    )
CRASH_FAMILIES = list(CFG.trials.crash.families)
#: arms the scaling sweep runs at every scaling size (the others at the main size only)
SCALING_ARMS = scaling_arms(CFG)
SCALING_ENTRIES = [(a, s) for s in CFG.scaling_sizes for a in SCALING_ARMS]
#: arms the post-filter sweep compares: the configured post-filtering arms it sweeps,
#: then the in-search HNSW arms drawn as reference lines (from the arms' declarations)
POSTFILTER_ARMS = [a for role in postfilter_roles(ARM_NAMES) for a in role]
#: arms that declare ablations (each design choice removed in turn; agentmem.sweeps.ablation)
ABLATION_ARMS = ablated_arms(ARM_NAMES)
#: arms the conversation sweep drives (seed_systems.conversation.arms that are configured)
CONVERSATION_ARMS = conversation_arms(CFG)
#: the arms run on each further corpus (untimed)
ROBUSTNESS_ARMS = robustness_arms(CFG)
#: the further corpora the findings are re-checked on, by id (agentmem.robustness); none
#: when no robustness arm is configured (a second --configfile narrowing `arms`)
ROBUSTNESS = robustness_corpora(CFG) if ROBUSTNESS_ARMS else {}
if robustness_corpora(CFG) and not ROBUSTNESS_ARMS:
    print(
        "robustness.arms names none of the configured arms: skipping the further corpora "
        "(the findings table then has the study's and the headline run's columns only)",
        file=sys.stderr,
    )
#: the external datasets by id (agentmem.workflow.selection.ExternalRun), whether present or not
EXTERNAL = external_runs(CFG)
#: the configured LoCoMo entries (format locomo) by name
LOCOMO_NAMES = [n for n, d in CFG.external.items() if d.format == "locomo"]


wildcard_constraints:
    size="|".join(SIZES),
    arm="|".join(re.escape(a) for a in ARM_NAMES),
    family="|".join(re.escape(f) for f in CRASH_FAMILIES),
    dataset="|".join(re.escape(i) for i in EXTERNAL),
    setting="|".join(EXTERNAL_SETTINGS),
    locomo="|".join(re.escape(n) for n in LOCOMO_NAMES),
    unit="|".join(LOCOMO_UNITS),
    variant="|".join(re.escape(i) for i in ROBUSTNESS) or "(?!)",


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
FIGURES = [f"results/figures/{name}.svg" for name in FIGURE_NAMES]


def library_file(relpath):
    """Absolute path of a file under src/ (listed as an input so edits rerun dependants)."""
    return str(Path(workflow.basedir) / "src" / relpath)


def library_package(relpath, pattern="*.py"):
    """Absolute paths of a package's files under src/ (inputs, so edits rerun dependants)."""
    return sorted(
        str(f) for f in (Path(workflow.basedir) / "src" / relpath).glob(pattern)
    )


# the exported ONNX encoder (agentmem.encoder.export_onnx), read by the encoder jobs when
# embedding.backend is onnx
ONNX_ENCODER = f"results/cache/encoder/{CFG.embedding.model}.onnx"
# its int8 graph (agentmem.encoder.quantize_onnx), read beside it when embedding.backend is
# onnx-int8
ONNX_INT8_ENCODER = f"results/cache/encoder/{CFG.embedding.model}.int8.onnx"


def encoder_threads(wildcards):
    """Threads of the {size} wildcard's encoder: 1 above the main size (a background job);
    else 2, but 1 in a local run with --cores 2 or fewer, where a 2-thread job waits until
    both cores are free at once while 1-thread untimed jobs keep taking the one that frees
    up (over a minute at the head of the smoke run). On a cluster, the profile's
    set-threads."""
    if above_main(wildcards.size):
        return 1
    if not (workflow.local_exec and workflow.is_main_process):  # a cluster, or its job
        return 2
    try:
        cores = workflow.cores
    except WorkflowError:  # no --cores given
        return 2
    return 1 if cores <= 2 else 2


def encoder_model(wildcards=None):
    """The graphs an encoder job reads: [ONNX_ENCODER] for onnx; for onnx-int8 the fp32
    export (the path the job is given) and its int8 graph beside it (what it runs); none
    for torch."""
    return {
        "onnx": [ONNX_ENCODER],
        "onnx-int8": [ONNX_ENCODER, ONNX_INT8_ENCODER],
    }.get(CFG.embedding.backend, [])


def corpus_files(*names, corpus="results/corpus/{size}"):
    """Named inputs: the files ``names`` (keys of CORPUS_FILES) of one corpus directory."""
    return {name: f"{corpus}/{CORPUS_FILES[name]}" for name in names}


def size_params(wildcards):
    """Size settings (facts, queries_per_class) for the {size} wildcard, as a dict."""
    return CFG.sizes[wildcards.size].model_dump()


def arm_params(wildcards):
    """Constructor parameters for the {arm} wildcard, from config `arms:`."""
    return dict(CFG.arm_params.get(wildcards.arm, {}))


@functools.cache
def arm_files(cls):
    """Source files of arm class ``cls`` wherever it is installed (a plug-in's is outside src/).

    Its module; when that module is part of a package other than agentmem/arms itself (a
    family package such as agentmem/arms/sqlite/, or a plug-in's), every module of it.
    Computed once per class (every arm run's input function asks again); callers copy it.
    """
    import inspect

    import agentmem.arms

    source = Path(inspect.getsourcefile(cls) or inspect.getfile(cls)).resolve()
    folder = source.parent
    in_package = (folder / "__init__.py").is_file()
    if not in_package or folder == Path(agentmem.arms.__file__).resolve().parent:
        return [str(source)]
    return sorted(str(p) for p in folder.glob("*.py"))


def arm_sources(wildcards):
    """Source files an arm run depends on, so editing them reruns that arm (and only it).

    The arm's source files (:func:`arm_files`) and the runner.
    """
    from agentmem.arms import ARMS

    return [*arm_files(ARMS[wildcards.arm]), library_file("agentmem/runner.py")]


def conversation_sources():
    """The conversation sweep's module and the source files of the arms it drives."""
    from agentmem.arms import ARMS

    files = dict.fromkeys(f for a in CONVERSATION_ARMS for f in arm_files(ARMS[a]))
    return [*library_package("agentmem/sweeps/conversation"), *files]


def fleet_sources():
    """The fleet trial's package and the source files of the arms it runs."""
    from agentmem.arms import ARMS

    files = dict.fromkeys(f for a in FLEET_ARMS for f in arm_files(ARMS[a]))
    return [*library_package("agentmem/trials/fleet"), *files]


def postfilter_stores():
    """Store directories of the post-filter arms at the main size (POSTFILTER_ARMS order)."""
    return expand("results/stores/{size}/{arm}", size=MAIN, arm=POSTFILTER_ARMS)


def ablation_stores():
    """Store directories of the ablated arms at the main size (ABLATION_ARMS order)."""
    return expand("results/stores/{size}/{arm}", size=MAIN, arm=ABLATION_ARMS)


def main_metrics():
    """Per-query score tables of every arm at the main size."""
    return expand("results/metrics/{size}/{arm}.parquet", size=MAIN, arm=ARM_NAMES)


def main_builds():
    """Build records of every arm at the main size."""
    return expand("results/builds/{size}/{arm}.json", size=MAIN, arm=ARM_NAMES)


def crash_tables():
    """One crash-trial table per configured family."""
    return expand("results/trials/crash/{family}.csv", family=CRASH_FAMILIES)


def anomaly_tables():
    """One update-anomaly probe per arm at the main size."""
    return expand("results/trials/anomaly/{size}/{arm}.csv", size=MAIN, arm=ARM_NAMES)


# External datasets (config `external`): each dataset id (<name> for an agentmem-memory
# dataset, <name>-<unit> for a LoCoMo unit) is prepared, embedded, run by the arms of its
# entry in each of its settings and scored under results/external/<id>/.


def _external_present(entry):
    """Whether an external entry's source (LoCoMo file, dataset directory) exists."""
    p = Path(entry.path)
    return p.is_file() if entry.format == "locomo" else p.is_dir()


#: names of the external entries whose source exists (the others' targets are skipped)
EXTERNAL_PRESENT = [n for n, d in CFG.external.items() if _external_present(d)]
for _name, _entry in CFG.external.items():
    if _name in EXTERNAL_PRESENT:
        continue
    if _entry.format == "locomo":
        print(
            f"LoCoMo file {_entry.path} not found: skipping the LoCoMo targets "
            f"(set external.{_name}.path in config/config.yaml or in your --configfile).",
            file=sys.stderr,
        )
    else:
        print(
            f"dataset directory {_entry.path} not found: skipping the targets of "
            f"external.{_name} (set its path; the format: docs/DATASETS.md).",
            file=sys.stderr,
        )
# A malformed agentmem-memory dataset stops the workflow here, naming file, line and field
# (agentmem.external.validate_dataset, which logs its referential issues as one warning
# line). Checked once, by the scheduling process (a cluster job re-reads the Snakefile).
if workflow.is_main_process:
    for _name in EXTERNAL_PRESENT:
        if CFG.external[_name].format == "agentmem-memory":
            try:
                validate_dataset(CFG.external[_name].path)
            except DatasetError as exc:
                sys.exit(f"agentmem: external.{_name}: {exc}")
#: ids of the datasets the default target builds (those whose source exists and that
#: run some configured arm)
EXTERNAL_IDS = [i for i, r in EXTERNAL.items() if r.name in EXTERNAL_PRESENT and r.arms]
for _name, _entry in CFG.external.items():
    if _name in EXTERNAL_PRESENT and _entry.arms is not None:
        if not any(r.arms for r in EXTERNAL.values() if r.name == _name):
            _why = "is []" if not _entry.arms else f"{_entry.arms} names none of arms"
            print(
                f"external.{_name}.arms {_why}: skipping its targets", file=sys.stderr
            )


def external_run(wildcards):
    """The :class:`agentmem.workflow.selection.ExternalRun` of the {dataset} wildcard."""
    return EXTERNAL[wildcards.dataset]


def locomo_source(wildcards):
    """The {locomo} entry's LoCoMo file as an input when present; else nothing (the job
    then fails with a message saying where to get it)."""
    path = locomo_path(wildcards)
    return [path] if Path(path).is_file() else []


def locomo_path(wildcards):
    """The {locomo} entry's configured LoCoMo file (``external.<name>.path``)."""
    return CFG.external[wildcards.locomo].path


def locomo_limit(wildcards):
    """The {locomo} entry's ``limit_conversations`` (None: every conversation)."""
    return CFG.external[wildcards.locomo].limit_conversations


def external_source(wildcards):
    """The dataset files prepare_external reads: a LoCoMo unit's converted dataset, or the
    configured directory's files (none when it is missing: the job then says so)."""
    run = external_run(wildcards)
    if run.format == "agentmem-memory" and not Path(run.path).is_dir():
        return []
    return [f"{run.source}/{name}" for name in DATASET_FILES]


def external_prepare_params(wildcards):
    """The dataset directory prepare_external reads (``ExternalRun.source``)."""
    return external_run(wildcards).source


def external_warmup(wildcards):
    """Untimed calls per query of the {dataset} wildcard's runs (its entry's ``warmup``)."""
    return CFG.external[external_run(wildcards).name].warmup


def external_repeats(wildcards):
    """Calls per query of the {dataset} wildcard's runs (its entry's ``repeats``)."""
    return CFG.external[external_run(wildcards).name].repeats


def external_scoped(wildcards):
    """Whether the {setting} wildcard keeps each query's scope (``scoped``)."""
    return wildcards.setting == "scoped"


def external_runs_of(wildcards):
    """The runs Parquet of every setting x arm of the {dataset} wildcard (settings outer;
    the arms of its entry, :class:`agentmem.workflow.selection.ExternalRun`).

    Raises:
        WorkflowError: when the entry runs no arm (none of its ``arms`` is configured).
    """
    run = external_run(wildcards)
    if not run.arms:
        raise WorkflowError(
            f"{wildcards.dataset}: external.{run.name}.arms names none of the configured "
            f"arms {ARM_NAMES}: nothing to score"
        )
    return [
        f"results/external/{wildcards.dataset}/runs/{setting}/{arm}.parquet"
        for setting in external_run(wildcards).settings
        for arm in external_run(wildcards).arms
    ]


def external_run_keys(wildcards):
    """[setting, arm] of each of :func:`external_runs_of`'s files, in the same order."""
    return [
        [setting, arm]
        for setting in external_run(wildcards).settings
        for arm in external_run(wildcards).arms
    ]


def published_unit(wildcards):
    """The LoCoMo unit whose published figures the comparison shows (None: no published
    figures, for an agentmem-memory dataset)."""
    return external_units()[wildcards.dataset]


def external_figure_options(wildcards):
    """Keyword arguments of the external figure: the dataset id and its published unit."""
    return {"dataset": wildcards.dataset, "unit": published_unit(wildcards)}


def external_targets():
    """Scores, comparison and figure of every external dataset whose source exists."""
    return [
        f
        for i in EXTERNAL_IDS
        for f in (
            f"results/external/{i}/scores.csv",
            f"results/external/{i}/vs_published.md",
            f"results/figures/external-{i}.svg",
        )
    ]


def external_scores():
    """Scores of the external datasets in the report (those whose source exists)."""
    return [f"results/external/{i}/scores.csv" for i in EXTERNAL_IDS]


def external_units():
    """Dataset id -> the LoCoMo unit whose published figures the report shows beside it."""
    return {i: (r.unit if r.format == "locomo" else None) for i, r in EXTERNAL.items()}


def report_figures():
    """Figures embedded in the HTML report (an external dataset's when its source exists)."""
    return FIGURES + [f"results/figures/external-{i}.svg" for i in EXTERNAL_IDS]


def all_targets():
    """Everything `snakemake` builds by default."""
    return [
        "results/tables/by_class.csv",
        "results/tables/by_class.md",
        "results/tables/capabilities.md",
        "results/tables/fill_rate.csv",
        f"results/tables/hnsw_recall_{MAIN}.json",
        "results/trials/crash.csv",
        "results/trials/lost_update.csv",
        "results/trials/fleet.csv",
        "results/trials/anomaly.csv",
        f"results/trials/restatements/{MAIN}.json",
        "results/tables/validation.csv",
        "results/schema/er.mmd",
        f"results/tables/dense_probe_{MAIN}.csv",
        "results/sweeps/postfilter.csv",
        *(["results/sweeps/ablation.csv"] if ABLATION_ARMS else []),
        "results/sweeps/budget.csv",
        "results/sweeps/scaling.csv",
        "results/capture.json",
        "results/tables/vs_reference.md",
        "results/tables/paired_bootstrap.csv",
        "results/tables/findings.csv",
        "results/tables/findings.md",
        "results/tables/by_class_seeds.csv",
        "results/report/index.html",
        *FIGURES,
        *external_targets(),
    ]


# Further corpora (config `robustness`, agentmem.robustness): under results/robustness/<id>/
#: the results tree of the {variant} wildcard's corpus
ROB = "results/robustness/{variant}"


def robustness_size(variant):
    """The corpus size of robustness corpus ``variant``."""
    return ROBUSTNESS[variant].size


def robustness_options(wildcards):
    """Generator options of the {variant} wildcard's corpus (a dict).

    Raises:
        WorkflowError: when {size} is not the size the corpus is configured at.
    """
    corpus = ROBUSTNESS[wildcards.variant]
    if wildcards.size != corpus.size:
        key = {"seed": "robustness.seed_size", "model": "main_size"}.get(
            corpus.kind, "robustness.variant_size"
        )
        raise WorkflowError(
            f"{corpus.id} is configured at size {corpus.size} ({key}), not {wildcards.size}"
        )
    return corpus.options.model_dump()


def robustness_files(variant, *patterns):
    """``patterns`` (relative to the corpus's root, with ``{size}`` and ``{arm}``) of corpus
    ``variant`` at its size, for every robustness arm when a pattern names ``{arm}``."""
    root = ROBUSTNESS[variant].root
    return [
        f
        for p in patterns
        for f in expand(
            f"{root}/{p}",
            size=robustness_size(variant),
            arm=ROBUSTNESS_ARMS,
            allow_missing=True,
        )
    ]


def robustness_swept_arms():
    """The post-filtering arms among the robustness arms (the post-filter sweep's subjects)."""
    return postfilter_roles(ROBUSTNESS_ARMS)[0]


def robustness_anomaly_arms():
    """The arm the study ran its update-anomaly probe on, if it is a robustness arm."""
    return [a for a in ROBUSTNESS_ARMS if a == ANOMALY_ARM]


def robustness_inputs(variant):
    """Every file of corpus ``variant`` the findings table reads."""
    return robustness_files(
        variant,
        "corpus/{size}/manifest.json",
        "tables/by_class_{size}.csv",
        "tables/validation_{size}.csv",
        "trials/anomaly_{size}.csv",
        "sweeps/postfilter_{size}.csv",
        "builds/{size}/{arm}.json",
    )


def robustness_encoder(wildcards):
    """The exported model the {variant}'s encoder reads (none for a further model, which
    ships its own graph)."""
    return [] if ROBUSTNESS[wildcards.variant].model else encoder_model()


def robustness_outputs(pattern):
    """``pattern`` (under a corpus's root, with ``{arm}``) for every robustness arm, the
    {variant} and {size} wildcards kept."""
    return expand(f"{ROB}/{pattern}", arm=ROBUSTNESS_ARMS, allow_missing=True)


def robustness_arm_sources(wildcards=None):
    """Source files of every robustness arm, the runner and the probes (editing one reruns
    the further corpora's runs)."""
    from agentmem.arms import ARMS

    files = dict.fromkeys(f for a in ROBUSTNESS_ARMS for f in arm_files(ARMS[a]))
    return [
        *files,
        library_file("agentmem/runner.py"),
        library_file("agentmem/robustness.py"),
        library_file("agentmem/trials/anomaly.py"),
        library_file("agentmem/sweeps/postfilter.py"),
    ]


def findings_corpora():
    """Further corpus id -> [kind, size, results directory], in config order."""
    return {i: [c.kind, c.size, c.root] for i, c in ROBUSTNESS.items()}


def seed_by_class():
    """Seed label -> by-class CSV: the headline run (when the seeds are at the main size)
    and each seed corpus."""
    seeds = {i: c for i, c in ROBUSTNESS.items() if c.kind == "seed"}
    out = {}
    if not seeds or any(c.size == MAIN for c in seeds.values()):
        out[f"seed-{CFG.corpus.seed}"] = "results/tables/by_class.csv"
    for i, c in seeds.items():
        out[i] = f"{c.root}/tables/by_class_{c.size}.csv"
    return out
