"""The workflow's plan (agentmem.workflow): arms, targets, inputs and preflight checks."""

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from snakemake.exceptions import WorkflowError

from agentmem.config import load_config
from agentmem.workflow.external import PreflightError
from agentmem.workflow.plan import FIGURE_NAMES, PARETO_FIGURES, Plan
from agentmem.workflow.sources import arm_files

REPO = Path(__file__).resolve().parents[1]
LOCOMO = REPO.parent / "shared" / "data" / "locomo" / "locomo10.json"


def plan(overrides=None, base="config/config.yaml", **kw):
    """The Plan of ``base`` with top-level keys replaced by ``overrides``."""
    import yaml

    data = yaml.safe_load((REPO / base).read_text())
    data.update(overrides or {})
    return Plan(load_config(data), REPO)


def merged_plan(*files):
    """The Plan of ``config/config.yaml`` with each of ``files`` merged over it as
    ``--configfile`` merges it (mappings key by key, Snakemake's ``update_config``)."""
    import yaml
    from snakemake.utils import update_config

    data = yaml.safe_load((REPO / "config/config.yaml").read_text())
    for f in files:
        update_config(data, yaml.safe_load((REPO / f).read_text()))
    return Plan(load_config(data), REPO)


@pytest.fixture(autouse=True)
def _at_repo(monkeypatch):
    monkeypatch.chdir(REPO)  # dataset paths in the configs are relative to the repository


def test_default_config_plan():
    p = plan({"external": {"locomo": {"path": "no/such/locomo10.json"}}})
    assert p.main == "m" and p.corpus_sizes == ["m", "xs", "s", "l"]
    assert p.main_corpus == "results/corpus/m"
    assert p.fleet_size == "xs"
    assert p.fleet_arms[:3] == ["file-jsonl", "file-vec", "sqlite-fts"]
    assert "chroma" in p.arm_names and "chroma" not in p.scaling_arms
    assert len(p.scaling_entries) == 4 * 14 and p.scaling_entries[0] == ("file-jsonl", "xs")
    assert p.ablation_arms == ["sqlite-gated"]
    assert p.conversation_arms == ["file-vec", "sqlite-fts", "three-tier"]
    # the budget sweep: the arms this project builds, in the order of arms (no product)
    assert p.budget_arms == p.scaling_arms and "chroma" not in p.budget_arms
    assert "model-paraphrase-MiniLM-L3-v2" not in p.robustness.corpora
    # the encoder: fp32 up to the main size, the int8 graph above it (l)
    assert [p.size_backend(s) for s in ("xs", "s", "m", "l")] == ["onnx"] * 3 + ["onnx-int8"]
    assert p.size_encoder(SimpleNamespace(size="m")) == [p.onnx_encoder]
    assert p.size_encoder(SimpleNamespace(size="l")) == [p.onnx_encoder, p.onnx_int8_encoder]
    assert p.encoder_model() == [p.onnx_encoder]  # the further corpora and datasets: backend
    assert p.above_main("l") and not p.above_main("m") and not p.above_main("xs")
    assert p.notices == [
        "the study's corpus file data/external/study-corpus.json not found: skipping the "
        "further corpus study-corpus (make it with the study's own generator, README.md 'The "
        "study's own corpus'; or set robustness.study_corpus: null)",
        "LoCoMo file no/such/locomo10.json not found: skipping the LoCoMo targets (set "
        "external.locomo.path in config/config.yaml or in your --configfile).",
    ]
    assert p.external.ids == [] and p.external.targets() == []
    # LoCoMo runs the scoped setting (the LoCoMo authors'): a job per unit and arm
    turns = SimpleNamespace(dataset="locomo-turns")
    assert not p.external.runs_both("locomo-turns")
    assert (
        p.external.ids_regex(both=False) == r"locomo\-turns|locomo\-observations|locomo\-summaries"
    )
    assert p.external.ids_regex(both=True) == "(?!)"  # matches no dataset id
    one = SimpleNamespace(dataset="locomo-turns", setting="scoped", arm="sqlite-fts")
    assert p.external.job_settings(one) == ["scoped"]
    assert p.external.ablation_stores(turns) == [
        "results/stores/external/locomo-turns/scoped/sqlite-gated"
    ]
    targets = p.all_targets()
    # the operating points: three tables and their figures, after the report's figures
    assert len(targets) == 24 + len(FIGURE_NAMES) + 3 + len(PARETO_FIGURES) == 47
    assert targets[0] == "results/tables/by_class.csv"
    assert "results/tables/hnsw_recall_m.json" in targets
    assert "results/sweeps/ablation.csv" in targets
    assert p.ablation_runs() == ["results/runs/m/sqlite-gated.parquet"]
    assert targets[40] == "results/figures/findings.svg"
    assert targets[-1] == "results/figures/pareto_storage.svg"
    assert p.main_builds()[0] == "results/builds/m/file-jsonl.json"
    assert len(p.main_metrics()) == len(p.arm_names) == 20
    assert p.crash_tables()[0] == "results/trials/crash/file-append.csv"
    assert p.encoder_model() == ["results/cache/encoder/all-MiniLM-L6-v2.onnx"]


def test_ablation_target_only_with_an_ablated_arm():
    p = plan({"arms": ["sqlite-fts", "pg-hnsw"], "scaling_arms": None})
    assert p.ablation_arms == [] and "results/sweeps/ablation.csv" not in p.all_targets()
    assert p.postfilter_arms == ["pg-hnsw"]  # no post-filtering arm: the reference line only
    assert p.postfilter_stores() == ["results/stores/m/pg-hnsw"]


def test_fleet_arms_not_configured_are_named():
    p = plan({"arms": ["sqlite-fts"], "scaling_arms": None})
    assert p.fleet_arms == ["sqlite-fts"]
    assert p.notices[0].startswith("trials.fleet.arms ['file-jsonl', 'file-vec', 'sqlite-graph'")
    assert p.notices[0].endswith("are not in arms: the fleet leaves them out")


def test_robustness_without_arms_is_skipped_with_a_notice():
    p = plan({"arms": ["three-tier"], "scaling_arms": None})
    assert p.robustness.arms == [] and p.robustness.corpora == {}
    assert any(n.startswith("robustness.arms names none of the configured arms") for n in p.notices)


def test_study_corpus_runs_when_its_file_exists(tmp_path):
    # absent (the default path): one notice, no corpus, nothing to import
    p = plan()
    assert "study-corpus" not in p.robustness.corpora and p.robustness.study_source() == []
    assert (
        sum("study's corpus file data/external/study-corpus.json not found" in n for n in p.notices)
        == 1
    )
    # present: a further corpus of its own kind, at the main size, read from the file
    source = tmp_path / "corpus.json.xz"
    source.write_bytes(b"")
    p = plan({"robustness": {"study_corpus": str(source)}})
    corpus = p.robustness.corpora["study-corpus"]
    assert (corpus.kind, corpus.size, corpus.root) == (
        "study-corpus",
        "m",
        "results/robustness/study-corpus",
    )
    assert p.robustness.study_source() == [str(source)]
    assert "results/robustness/study-corpus/tables/validation_m.csv" in p.robustness.inputs(
        "study-corpus"
    )
    assert p.robustness.findings_corpora()["study-corpus"][0] == "study-corpus"
    assert not any("study's corpus" in n for n in p.notices)
    # off: no notice either
    p = plan({"robustness": {"study_corpus": None}})
    assert not any("study's corpus" in n for n in p.notices)


def test_full_config_adds_what_the_default_leaves_out():
    """config/full.yaml on top of the default: the second model, N = 16, the products'
    budgets, fp32 at every size, LoCoMo unscoped too; every other setting stays the
    default's."""
    import yaml

    full = yaml.safe_load((REPO / "config/full.yaml").read_text())
    p, default = merged_plan("config/full.yaml"), plan()
    assert p.cfg.robustness.models == ["paraphrase-MiniLM-L3-v2"]
    assert p.robustness.corpora["model-paraphrase-MiniLM-L3-v2"].kind == "model"
    assert p.cfg.trials.fleet.processes == [*default.cfg.trials.fleet.processes, 16]
    assert p.budget_arms == p.arm_names and len(p.arm_names) > len(default.budget_arms)
    assert p.size_backend("l") == p.size_backend("m") == "onnx"
    # LoCoMo's unscoped setting too: one job per unit and arm builds one store for both
    turns = SimpleNamespace(dataset="locomo-turns")
    assert p.external.runs_both("locomo-turns")
    assert (
        p.external.ids_regex(both=True) == r"locomo\-turns|locomo\-observations|locomo\-summaries"
    )
    assert p.external.ids_regex(both=False) == "(?!)"
    assert p.external.job_settings(turns) == ["scoped", "unscoped"]
    one = SimpleNamespace(dataset="locomo-turns", setting="unscoped", arm="sqlite-fts")
    assert p.external.job_settings(one) == ["unscoped"]
    assert p.external.ablation_stores(turns) == [
        "results/stores/external/locomo-turns/sqlite-gated"
    ]
    # the configured rows come from the scoped run the store was built with
    assert p.external.ablation_runs(turns) == [
        "results/external/locomo-turns/runs/scoped/sqlite-gated.parquet"
    ]
    moved = {
        ("robustness", "models"),
        ("trials", "fleet", "processes"),
        ("sweeps", "budget_products"),
        ("embedding", "backend_above_main"),
        ("external", "locomo", "settings"),
    }

    def leaves(d, path=()):
        if isinstance(d, dict) and d:
            for key, value in d.items():
                yield from leaves(value, (*path, key))
        else:
            yield path, d

    assert {path for path, _ in leaves(full)} == moved
    full_leaves = dict(leaves(p.cfg.model_dump()))
    default_leaves = dict(leaves(default.cfg.model_dump()))
    assert full_leaves.keys() == default_leaves.keys()
    assert {k for k, v in full_leaves.items() if v != default_leaves[k]} == moved


def test_robustness_inputs_and_options():
    p = merged_plan("config/full.yaml")
    assert list(p.robustness.corpora)[:3] == ["seed-20260811", "seed-20260813", "default-s"]
    assert p.robustness.seed_by_class() == {
        "seed-20260809": "results/tables/by_class.csv",
        "seed-20260811": "results/robustness/seed-20260811/tables/by_class_m.csv",
        "seed-20260813": "results/robustness/seed-20260813/tables/by_class_m.csv",
    }
    inputs = p.robustness.inputs("distractors-none")
    assert inputs[0] == "results/robustness/distractors-none/corpus/s/manifest.json"
    assert "results/robustness/distractors-none/builds/s/pg-hybrid.json" in inputs
    wc = SimpleNamespace(variant="distractors-none", size="s")
    assert p.robustness.options(wc)["distractor_ratio"] == 0.0
    with pytest.raises(WorkflowError, match=r"configured at size s \(robustness.variant_size\)"):
        p.robustness.options(SimpleNamespace(variant="distractors-none", size="m"))
    assert p.robustness.swept_arms() == ["file-vec-meta"]
    assert p.robustness.anomaly_arms() == ["pg-hybrid"]  # the study probed pg-hybrid
    model = SimpleNamespace(variant="model-paraphrase-MiniLM-L3-v2")
    assert p.robustness.encoder(model) == []
    # a design variant's encoder reads the headline s vectors from the cache; a seed's and
    # a further model's share no texts and wait for nothing
    assert p.robustness.encoder_after(wc) == ["results/embeddings/s.parquet"]
    assert p.robustness.encoder_after(SimpleNamespace(variant="default-s")) == [
        "results/embeddings/s.parquet"
    ]
    assert p.robustness.encoder_after(model) == []
    assert p.robustness.encoder_after(SimpleNamespace(variant="seed-20260811")) == []


def test_further_corpora_are_asked_the_main_sizes_questions_per_class():
    p = plan()
    variant = SimpleNamespace(variant="distractors-none", size="s")
    assert p.robustness.size_params(variant) == {"facts": 600, "queries_per_class": 40}
    seed = SimpleNamespace(variant="seed-20260811", size="m")
    assert p.robustness.size_params(seed) == {"facts": 2500, "queries_per_class": 40}
    assert p.size_params(SimpleNamespace(size="s")) == {"facts": 600, "queries_per_class": 12}
    p = plan({"robustness": {"variant_size": "s", "queries_per_class": 7}})
    assert p.robustness.size_params(variant) == {"facts": 600, "queries_per_class": 7}


def test_smoke_external_datasets():
    if not LOCOMO.is_file():
        pytest.skip(f"{LOCOMO} absent (a user's clone has no ../shared)")
    p = plan(base="config/smoke.yaml")
    assert p.external.ids == ["locomo-turns", "tiny"]
    assert p.notices == []
    assert p.all_targets()[-4:] == [
        "results/external/tiny/scores.csv",
        "results/external/tiny/vs_published.md",
        "results/figures/external-tiny.svg",
        "results/external/tiny/ablation.csv",  # tiny runs sqlite-gated, scoped
    ]
    turns = SimpleNamespace(dataset="locomo-turns")
    assert p.external.ablation_arms(turns) == ["sqlite-gated"]
    # scoped only: each setting's job builds its own store
    assert not p.external.runs_both("locomo-turns")
    assert p.external.ids_regex(both=False) == r"locomo\-turns|tiny"
    assert p.external.ablation_stores(turns) == [
        "results/stores/external/locomo-turns/scoped/sqlite-gated"
    ]
    assert p.external.tuning_scopes(turns) == ["conv-26"]
    assert p.external.run_keys(turns)[:2] == [["scoped", "file-jsonl"], ["scoped", "file-vec"]]
    assert p.external.runs_of(turns)[0] == (
        "results/external/locomo-turns/runs/scoped/file-jsonl.parquet"
    )
    assert p.external.figure_options(turns) == {"dataset": "locomo-turns", "unit": "turns"}
    assert p.external.published_unit(SimpleNamespace(dataset="tiny")) is None
    assert p.external.source(turns)[0] == "results/external/locomo/source/turns/dataset.json"
    assert p.external.warmup(turns) == 0 and p.external.repeats(turns) == 1
    # one untimed call per query: a batch pass; the costlier arm's run starts first
    assert p.external.batch(turns)
    tiny = SimpleNamespace(dataset="tiny")
    assert p.external.priority(SimpleNamespace(dataset="tiny", arm="lancedb-hybrid")) == 3.0
    assert p.external.priority(SimpleNamespace(dataset="tiny", arm="sqlite-fts")) == 0.0
    timed = plan({"external": {"tiny": {"format": "agentmem-memory", "path":
        "tests/data/tiny-memory", "repeats": 3}}}, base="config/smoke.yaml")  # fmt: skip
    assert not timed.external.batch(tiny)
    assert p.external.locomo_limit(SimpleNamespace(locomo="locomo")) == 2


def test_dataset_naming_no_configured_arm():
    p = plan(
        {
            "external": {
                "mine": {"format": "agentmem-memory", "path": "tests/data/tiny-memory", "arms": []}
            }
        }
    )
    assert (
        p.external.ids == [] and p.notices[-1] == "external.mine.arms is []: skipping its targets"
    )
    with pytest.raises(WorkflowError, match="external.mine.arms names none of the configured"):
        p.external.runs_of(SimpleNamespace(dataset="mine"))


def test_malformed_dataset_is_refused_before_any_job(tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(REPO / "tests/data/tiny-memory", bad)
    lines = (bad / "corpus.jsonl").read_text().splitlines()
    lines[1] = lines[1].replace('"day": 0', '"day": -1')
    (bad / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    p = plan({"external": {"mine": {"format": "agentmem-memory", "path": str(bad)}}})
    with pytest.raises(PreflightError) as err:
        p.external.check_datasets()
    assert str(err.value).startswith(f"agentmem: external.mine: {bad}/corpus.jsonl:2: day: ")
    missing = plan({"external": {"mine": {"format": "agentmem-memory", "path": "nope"}}})
    missing.external.check_datasets()  # an absent dataset is skipped, not refused
    assert missing.notices[-1].startswith("dataset directory nope not found")


def test_sources_list_every_module_of_an_arm_family():
    from agentmem.arms import ARMS

    sqlite = arm_files(ARMS["sqlite-fts"])
    own = [f for f in sqlite if f.startswith(str(REPO / "src/agentmem/arms/sqlite/"))]
    shared = [f for f in sqlite if f.startswith(str(REPO / "src/agentmem/sql/sqlite/"))]
    assert own == sorted(own) and str(REPO / "src/agentmem/arms/sqlite/fts.py") in own
    # the shared SQL layer the family imports, so that editing it reruns the family's jobs
    assert [Path(f).name for f in shared] == ["connection.py", "schema.py", "statements.py"]
    assert sqlite == (*own, *shared)
    files = arm_files(ARMS["file-jsonl"])
    assert not any("/agentmem/sql/" in f for f in files)
    p = plan()
    runs = p.arm_sources(SimpleNamespace(arm="sqlite-fts"))
    assert runs == [*sqlite, str(REPO / "src/agentmem/runner.py")]
    conv = p.conversation_sources()
    assert conv[0].startswith(str(REPO / "src/agentmem/sweeps/conversation/"))
    assert len(conv) == len(set(conv))
