# Helpers, config validation and wildcard constraints (no rules here).
import re
import sys
from pathlib import Path

from snakemake.utils import validate

from agentmem.config import conversation_arms, load_config, paired_tests, scaling_arms
from agentmem.jobs import CORPUS_FILES, CORPUS_TABLES
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

# 3) DESIGN §5: no two timing jobs overlap, which needs the resource cap bench_slot=1.
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
CRASH_FAMILIES = list(CFG.trials.crash.families)
#: arms the scaling sweep runs at every scaling size (the others at the main size only)
SCALING_ARMS = scaling_arms(CFG)
SCALING_ENTRIES = [(a, s) for s in CFG.scaling_sizes for a in SCALING_ARMS]
#: arms the post-filter sweep compares: the configured post-filtering arms it sweeps,
#: then the in-search HNSW arms drawn as reference lines (from the arms' declarations)
POSTFILTER_ARMS = [a for role in postfilter_roles(ARM_NAMES) for a in role]
#: arms the conversation sweep drives (seed_systems.conversation.arms that are configured)
CONVERSATION_ARMS = conversation_arms(CFG)


wildcard_constraints:
    size="|".join(SIZES),
    arm="|".join(re.escape(a) for a in ARM_NAMES),
    family="|".join(re.escape(f) for f in CRASH_FAMILIES),


FIGURE_NAMES = (
    "ndcg_heatmap",
    "crash",
    "lost_update",
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


def encoder_model(wildcards=None):
    """The exported model the encoder jobs read: [ONNX_ENCODER] for onnx, none for torch."""
    return [ONNX_ENCODER] if CFG.embedding.backend == "onnx" else []


def corpus_files(*names, corpus="results/corpus/{size}"):
    """Named inputs: the files ``names`` (keys of CORPUS_FILES) of one corpus directory."""
    return {name: f"{corpus}/{CORPUS_FILES[name]}" for name in names}


def size_params(wildcards):
    """Size settings (facts, queries_per_class) for the {size} wildcard, as a dict."""
    return CFG.sizes[wildcards.size].model_dump()


def arm_params(wildcards):
    """Constructor parameters for the {arm} wildcard, from config `arms:`."""
    return dict(CFG.arm_params.get(wildcards.arm, {}))


def arm_files(cls):
    """Source files of arm class ``cls`` wherever it is installed (a plug-in's is outside src/).

    Its module; when that module is part of a package other than agentmem/arms itself (a
    family package such as agentmem/arms/sqlite/, or a plug-in's), every module of it.
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


def postfilter_stores():
    """Store directories of the post-filter arms at the main size (POSTFILTER_ARMS order)."""
    return expand("results/stores/{size}/{arm}", size=MAIN, arm=POSTFILTER_ARMS)


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


LOCOMO_PATH = Path(CFG.external.locomo.path)
HAVE_LOCOMO = LOCOMO_PATH.is_file()
if not HAVE_LOCOMO:
    print(
        f"LoCoMo file {LOCOMO_PATH} not found: skipping the LoCoMo targets "
        "(set external.locomo.path in config/config.yaml or in your --configfile).",
        file=sys.stderr,
    )
#: the LoCoMo corpus directory (prepare_locomo writes it)
LOCOMO_CORPUS = "results/external/locomo/corpus"
LOCOMO_TARGETS = ["results/external/locomo/scores.csv", "results/figures/locomo.svg"]


def locomo_source(wildcards):
    """The LoCoMo file as an input when present; else nothing (the script says where to get it)."""
    return [str(LOCOMO_PATH)] if HAVE_LOCOMO else []


def locomo_scores_if_present():
    """LoCoMo scores for the report when the LoCoMo file is present, else nothing."""
    return ["results/external/locomo/scores.csv"] if HAVE_LOCOMO else []


def report_figures():
    """Figures embedded in the HTML report (LoCoMo's only when its file is present)."""
    return FIGURES + (["results/figures/locomo.svg"] if HAVE_LOCOMO else [])


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
        "results/trials/anomaly.csv",
        f"results/trials/restatements/{MAIN}.json",
        "results/tables/validation.csv",
        "results/schema/er.mmd",
        f"results/tables/dense_probe_{MAIN}.csv",
        "results/sweeps/postfilter.csv",
        "results/sweeps/budget.csv",
        "results/sweeps/scaling.csv",
        "results/capture.json",
        "results/tables/vs_reference.md",
        "results/tables/paired_bootstrap.csv",
        "results/report/index.html",
        *FIGURES,
        *(LOCOMO_TARGETS if HAVE_LOCOMO else []),
    ]
