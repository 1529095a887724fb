# The wiring between the rules and agentmem.workflow: configuration checks before any job,
# the names the rules use (bound to the Plan of this configuration), wildcard constraints.
# No rules here; the logic is in src/agentmem/workflow/ (tested in tests/test_workflow_plan.py).
import re
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from agentmem.config import EXTERNAL_SETTINGS, LOCOMO_UNITS, load_config
from agentmem.config.robustness import STUDY_CORPUS_ID
from agentmem.external.score import RUN_K
from agentmem.jobs import CORPUS_TABLES
from agentmem.workflow.external import PreflightError
from agentmem.workflow.plan import Plan
from agentmem.workflow.robustness import ROB
from agentmem.workflow.selection import paired_tests

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

# 3) docs/MEASUREMENT.md §1: no two timing jobs overlap, which needs the resource cap
#    bench_slot=1. profiles/default sets it, but a --resources flag on the command line
#    replaces that whole list (Snakemake does not merge it), silently lifting the cap:
#    refuse to start. Only the scheduling process enforces resources; a job running on a
#    node (or in a subprocess) is not given the global list and is not checked.
_bench_slot = workflow.global_resources.get("bench_slot")
_bench_slot = getattr(_bench_slot, "value", _bench_slot)
if workflow.is_main_process and _bench_slot != 1:
    sys.exit(
        f"agentmem: the resource bench_slot must be 1 (got {_bench_slot}), or timing jobs "
        "would run side by side. A --resources flag replaces the list in "
        "profiles/default/config.yaml, so repeat it: "
        "--resources bench_slot=1 background_slot=<N>"
    )

# 4) what this configuration builds; the parts it leaves out are said once, and a
#    malformed agentmem-memory dataset stops the workflow here, naming file, line and
#    field (checked by the scheduling process only: a cluster job re-reads the Snakefile).
PLAN = Plan(CFG, workflow.basedir)
for _notice in PLAN.notices:
    print(_notice, file=sys.stderr)
if workflow.is_main_process:
    try:
        PLAN.external.check_datasets()
    except PreflightError as exc:
        sys.exit(str(exc))

SIZES = PLAN.sizes
MAIN = PLAN.main
MAIN_CORPUS = PLAN.main_corpus
CORPUS_SIZES = PLAN.corpus_sizes
ARM_NAMES = PLAN.arm_names
FLEET_ARMS = PLAN.fleet_arms
BUDGET_ARMS = PLAN.budget_arms
FLEET_SIZE = PLAN.fleet_size
CRASH_FAMILIES = PLAN.crash_families
SCALING_ENTRIES = PLAN.scaling_entries
POSTFILTER_ARMS = PLAN.postfilter_arms
ABLATION_ARMS = PLAN.ablation_arms
CHOICE_ARMS = PLAN.choice_arms
CHOICE_CONFIGURATIONS = PLAN.choice_configurations
CONVERSATION_ARMS = PLAN.conversation_arms
ROBUSTNESS_ARMS = PLAN.robustness.arms
ROBUSTNESS = PLAN.robustness.corpora
STUDY_ROB = f"results/robustness/{STUDY_CORPUS_ID}"
EXTERNAL = PLAN.external.runs
ONNX_ENCODER = PLAN.onnx_encoder
ONNX_INT8_ENCODER = PLAN.onnx_int8_encoder


wildcard_constraints:
    size="|".join(SIZES),
    arm="|".join(re.escape(a) for a in ARM_NAMES),
    family="|".join(re.escape(f) for f in CRASH_FAMILIES),
    dataset="|".join(re.escape(i) for i in EXTERNAL),
    setting="|".join(EXTERNAL_SETTINGS),
    locomo="|".join(re.escape(n) for n in PLAN.external.locomo_names),
    unit="|".join(LOCOMO_UNITS),
    variant="|".join(re.escape(i) for i in ROBUSTNESS) or "(?!)",
    point="[^/]+",


# sizes, settings and source files (agentmem.workflow.plan.Plan)
above_main = PLAN.above_main
size_params = PLAN.size_params
arm_params = PLAN.arm_params
encoder_model = PLAN.encoder_model
size_encoder = PLAN.size_encoder
library_file = PLAN.library_file
library_package = PLAN.library_package
captions = PLAN.captions
corpus_files = PLAN.corpus_files
arm_sources = PLAN.arm_sources
conversation_sources = PLAN.conversation_sources
fleet_sources = PLAN.fleet_sources
postfilter_stores = PLAN.postfilter_stores
ablation_stores = PLAN.ablation_stores
ablation_runs = PLAN.ablation_runs
choice_stores = PLAN.choice_stores
study_cells = PLAN.study_cells
main_metrics = PLAN.main_metrics
main_builds = PLAN.main_builds
crash_tables = PLAN.crash_tables
anomaly_tables = PLAN.anomaly_tables
report_figures = PLAN.report_figures
all_targets = PLAN.all_targets
pareto_point_files = PLAN.pareto_point_files
pareto_point_inputs = PLAN.pareto_point_inputs
pareto_point_params = PLAN.pareto_point_params
pareto_tables = PLAN.pareto_tables
PARETO_SIZE = PLAN.pareto_size
# external datasets (agentmem.workflow.external.ExternalPlan)
locomo_source = PLAN.external.locomo_source
locomo_path = PLAN.external.locomo_path
locomo_limit = PLAN.external.locomo_limit
external_source = PLAN.external.source
external_prepare_params = PLAN.external.prepare_params
external_warmup = PLAN.external.warmup
external_repeats = PLAN.external.repeats
external_batch = PLAN.external.batch
external_priority = PLAN.external.priority
external_ids_regex = PLAN.external.ids_regex
external_job_settings = PLAN.external.job_settings
external_runs_of = PLAN.external.runs_of
external_run_keys = PLAN.external.run_keys
external_tuning_scopes = PLAN.external.tuning_scopes
external_ablation_arms = PLAN.external.ablation_arms
external_ablation_stores = PLAN.external.ablation_stores
external_ablation_runs = PLAN.external.ablation_runs
external_figure_options = PLAN.external.figure_options
external_scores = PLAN.external.scores
external_units = PLAN.external.units
published_unit = PLAN.external.published_unit
# further corpora (agentmem.workflow.robustness.RobustnessPlan)
robustness_options = PLAN.robustness.options
robustness_size_params = PLAN.robustness.size_params
study_corpus_source = PLAN.robustness.study_source
robustness_swept_arms = PLAN.robustness.swept_arms
robustness_choices = PLAN.robustness.choices
robustness_anomaly_arms = PLAN.robustness.anomaly_arms
robustness_inputs = PLAN.robustness.inputs
robustness_encoder = PLAN.robustness.encoder
robustness_encoder_after = PLAN.robustness.encoder_after
robustness_outputs = PLAN.robustness.outputs
robustness_arm_sources = PLAN.robustness.arm_sources
findings_corpora = PLAN.robustness.findings_corpora
seed_by_class = PLAN.robustness.seed_by_class


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


def background_threads(wildcards=None):
    """Cores a background job (nice 19, background_slot) takes from --cores: none in a
    local run, where it only uses the CPU the timing job and the others leave idle and
    background_slot caps how many run at once; one on a cluster (its --cpus-per-task).
    """
    return 0 if workflow.local_exec and workflow.is_main_process else 1


def embed_threads(wildcards):
    """Cores the {size} encoder job takes: encoder_threads, or background_threads for a
    size above the main one (a background job)."""
    return (
        background_threads()
        if above_main(wildcards.size)
        else encoder_threads(wildcards)
    )
