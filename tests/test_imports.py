"""What a workflow job imports: the modules a light job needs do not pull in heavy ones.

Every job is a fresh Python process, so a module imported but not used costs its import
time once per job. Each case imports the modules a script imports, in a subprocess, and
lists which of the heavy modules ended up in ``sys.modules``.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

#: heavy modules: the arm registry (every arm and its database driver), the config models
#: (pydantic), plotting state, the encoder's torch and transformers, SciPy, the PostgreSQL
#: driver
HEAVY = (
    "agentmem.arms",
    "psycopg",
    "agentmem.config",
    "pydantic",
    "matplotlib",
    "matplotlib.pyplot",
    "torch",
    "transformers",
    "scipy",
    "numpy",
    "polars",
    "psutil",
)


def _loaded(code: str) -> set[str]:
    """The modules of :data:`HEAVY` that ``code`` imports (run in a fresh interpreter)."""
    report = f"import json, sys\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    probe = f"{code}\n{report}"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.splitlines()[-1]))


@pytest.mark.parametrize(
    ("code", "absent"),
    [
        # every script's first line; render_schema needs nothing more
        ("from agentmem.jobs import start_job", HEAVY),
        (
            "from agentmem.jobs import start_job\n"
            "from agentmem.io import write_text\n"
            "from agentmem.schema import mermaid_er",
            HEAVY,
        ),
        # score_run, combine_*, tabulate_by_class, publish_validation
        (
            "from agentmem.report.tables import score_run_file, concat_csv, write_by_class",
            {"agentmem.arms", "agentmem.config", "pydantic", "matplotlib", "torch", "numpy"},
        ),
        # the corpus readers (run_arm, the sweeps, the probes) and the query classes
        (
            "from agentmem.corpus.io import load_corpus, load_queries\n"
            "from agentmem.corpus.queries import QUERY_CLASSES",
            {"agentmem.arms", "agentmem.config", "pydantic", "matplotlib", "torch"},
        ),
        # run_arm
        (
            "from agentmem.runner import run_arm",
            {"agentmem.config", "pydantic", "matplotlib", "torch", "scipy"},
        ),
        # check_robustness_corpus: the config models are for the DAG, not the job
        ("from agentmem.robustness import check_corpus", {"agentmem.config", "pydantic"}),
        # generate_corpus
        (
            "from agentmem.config import CorpusConfig, SizeConfig\n"
            "from agentmem.corpus import write_corpus\n"
            "from agentmem.corpus.io import FILES",
            {"agentmem.arms", "numpy", "matplotlib", "torch", "scipy"},
        ),
        # the plot jobs: a Figure on the Agg canvas, no pyplot
        (
            "from agentmem.report.figures import crash, er_diagram, external, fleet, validation",
            {"matplotlib.pyplot", "agentmem.config", "pydantic", "torch", "scipy"},
        ),
        # the crash trial's writer child, started once per trial (a hundred per run)
        ("import agentmem.trials.crash.writer", HEAVY),
        # a lost-update writer process, eight per store and mode
        ("import agentmem.trials.lost_update.writers", HEAVY),
        # an encoder's tokenizer (every encoder job, `agentmem recall` on a vector arm)
        (
            "from agentmem.encoder.base import BatchTokenizer, model_spec\n"
            "BatchTokenizer(model_spec())(['a memory'], 256)",
            {"transformers", "torch", "agentmem.arms", "pydantic"},
        ),
    ],
    ids=[
        "start_job",
        "render_schema",
        "report.tables",
        "corpus.io",
        "runner",
        "robustness",
        "generate_corpus",
        "figures",
        "crash writer",
        "lost-update writer",
        "tokenizer",
    ],
)
def test_a_job_imports_no_heavy_module_it_does_not_use(code, absent):
    assert _loaded(code) & set(absent) == set()


def test_the_lazy_names_of_the_corpus_package_still_import():
    import agentmem.corpus as corpus
    from agentmem.corpus import io, load_corpus, write_corpus

    assert load_corpus is io.load_corpus and write_corpus is io.write_corpus
    with pytest.raises(AttributeError, match="attribute nope"):
        _ = corpus.nope


def test_the_lazy_names_of_the_crash_package_still_import():
    import agentmem.trials.crash as crash
    from agentmem.trials.crash import STORE_FILES, run_crash_trials, runner, store

    assert run_crash_trials is runner.run_crash_trials and STORE_FILES is store.STORE_FILES
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = crash.nope


def test_the_lazy_names_of_the_lost_update_package_still_import():
    import agentmem.trials.lost_update as lu
    from agentmem.trials.lost_update import MODES, run_lost_update_matrix, runner

    assert run_lost_update_matrix is runner.run_lost_update_matrix and MODES is runner.MODES
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = lu.nope


def test_the_workflow_parse_imports_no_job_code():
    """What workflow/rules/common.smk imports to build the DAG: the config, the arm
    registry and constants, not the runner, the encoder or the report's comparison."""
    code = (
        "from agentmem.arms import PLUGIN_PROBLEMS\n"
        "from agentmem.config import load_config\n"
        "from agentmem.external.score import RUN_K\n"
        "from agentmem.jobs import CORPUS_TABLES\n"
        "from agentmem.workflow.external import PreflightError\n"
        "from agentmem.workflow.plan import Plan\n"
        "from agentmem.workflow.robustness import ROB\n"
        "from agentmem.workflow.selection import paired_tests\n"
        "Plan(load_config('config/config.yaml'), '.').all_targets()\n"
        "import json, sys\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(json.loads(out.stdout.splitlines()[-1]))
    unused = {
        "agentmem.runner",
        "agentmem.embeddings",
        "agentmem.encoder",
        "agentmem.corpus.io",
        "agentmem.external.prepare",
        "agentmem.report.reference.comparison",
        "tqdm",
        "pyarrow",
        "scipy",
        "matplotlib",
        "torch",
    }
    assert loaded & unused == set()


def test_the_lazy_names_of_the_reference_and_external_packages_still_import():
    import agentmem.external as external
    import agentmem.report.reference as reference
    from agentmem.external.score import score_dataset
    from agentmem.report.reference.render import write_vs_reference

    for package in (external, reference):
        for name in package.__all__:
            assert getattr(package, name) is not None, name
    assert reference.write_vs_reference is write_vs_reference
    assert external.score_dataset is score_dataset
    with pytest.raises(AttributeError, match="attribute nope"):
        _ = reference.nope
