"""The config model, its generated schema, and validation errors that name the key."""

import pytest
import yaml
from support.paths import REPO

from agentmem.config import ConfigError, json_schema, load_config


def test_shipped_configs_validate():
    default = load_config(REPO / "config/config.yaml")
    assert default.main_size == "m"
    assert default.sizes["m"].facts == 2500
    smoke = load_config(REPO / "config/smoke.yaml")
    assert smoke.main_size == "xs"


def test_schema_file_matches_model():
    text = (REPO / "workflow/schemas/config.schema.yaml").read_text()
    assert yaml.safe_load(text) == json_schema(), "run `make schema` to regenerate"


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"bogus": 1}, "bogus: unknown key"),
        ({"run": {"k": 0}}, "run.k"),
        ({"run": {"kk": 3}}, "run.kk: unknown key"),
        ({"main_size": "xl"}, "main_size"),
        ({"arms": ["file-jsonl", "no-such-arm"]}, "unknown arm 'no-such-arm'"),
        ({"arm_params": {"file-vec": {"nonsense": 1}}}, "arm_params.file-vec"),
        ({"corpus": {"distractor_ratio": "lots"}}, "corpus.distractor_ratio"),
        ({"corpus": {"temporal_cutoff_day": 400}}, "temporal_cutoff_day"),
        ({"sizes": {"xs": {"facts": 40, "queries_per_class": 2}}}, "main_size 'm'"),
        (
            {"report": {"paired_tests": [["sqlite-fts", "no-such-arm"]]}},
            "report.paired_tests: unknown arm 'no-such-arm'",
        ),
        ({"report": {"paired_tests": [["pg-gin", "pg-gin"]]}}, "pairs an arm with itself"),
        ({"report": {"paired_tests": [["pg-gin"]]}}, "report.paired_tests.0"),
        (
            {"seed_systems": {"conversation": {"arms": ["sqlite-fts", "nope"]}}},
            "seed_systems.conversation.arms: unknown arm 'nope'",
        ),
        (
            {"seed_systems": {"conversation": {"arms": ["pg-gin", "pg-gin"]}}},
            "seed_systems.conversation.arms: duplicate",
        ),
        ({"scaling_arms": ["sqlite-fts", "nope"]}, "scaling_arms: unknown arm 'nope'"),
        (
            {"external": {"locomo": {"arms": ["sqlite-fts", "nope"]}}},
            "external.locomo.arms: unknown arm 'nope'",
        ),
        (
            {"external": {"locomo": {"arms": ["pg-gin", "pg-gin"]}}},
            "external.locomo: arms: duplicate names",
        ),
        (
            {"external": {"mine": {"path": "d"}}},
            "external.mine: expected `format: locomo` or `format: agentmem-memory`",
        ),
        (
            {"external": {"mine": {"format": "agentmem-memory", "path": "d", "units": []}}},
            "external.mine.units: unknown key",
        ),
        (
            {"external": {"mine": {"format": "agentmem-memory"}}},
            "external.mine.path: Field required",
        ),
        (
            {"external": {"a/b": {"format": "agentmem-memory", "path": "d"}}},
            "external: dataset name 'a/b' is not path-safe",
        ),
        (
            {
                "external": {
                    "locomo": {},
                    "locomo-turns": {"format": "agentmem-memory", "path": "d"},
                }
            },
            "external: dataset id 'locomo-turns' of external.locomo-turns is also the id of "
            "external.locomo (unit turns)",
        ),
        (
            {"external": {"locomo": {"settings": ["scoped", "scoped"]}}},
            "external.locomo: settings: duplicate names",
        ),
        ({"external": {"locomo": {"units": ["turns", "dialog"]}}}, "external.locomo.units.1"),
        ({"external": {"locomo": {"units": []}}}, "external.locomo.units: List should have"),
        (
            {"external": {"locomo": {"limit_conversations": 0}}},
            "external.locomo.limit_conversations",
        ),
        ({"robustness": {"arms": ["sqlite-fts", "nope"]}}, "robustness.arms: unknown arm 'nope'"),
        ({"robustness": {"arms": ["pg-gin", "pg-gin"]}}, "robustness.arms: duplicate names"),
        ({"robustness": {"seeds": [5, 5]}}, "robustness.seeds: duplicate seeds in [5, 5]"),
        (
            {"robustness": {"seeds": [20260809]}},
            "robustness.seeds: 20260809 is corpus.seed, the headline corpus",
        ),
        ({"robustness": {"seed_size": "xl"}}, "robustness.seed_size"),
        (
            {"robustness": {"queries_per_class": 0}},
            "robustness.queries_per_class: Input should be greater than or equal to 1",
        ),
        (
            {"robustness": {"seeds": [20260810]}},
            "robustness.seeds: 20260810 is 20260809 + 1, the random stream the corpus of "
            "seed 20260809 draws its questions from",
        ),
        ({"robustness": {"seeds": [7, 8]}}, "robustness.seeds: 8 is 7 + 1"),
        (
            {
                "sizes": {"m": {"facts": 100, "queries_per_class": 2}},
                "scaling_sizes": ["m"],
                "robustness": {"variant_size": "s"},
            },
            "robustness.variant_size 's' is not among sizes ['m']",
        ),
        (
            {"robustness": {"variants": [{"name": "v", "options": {"distractor_ratio": 5}}]}},
            "robustness.variants (v): options.distractor_ratio: Input should be less than or "
            "equal to 2",
        ),
        (
            {"robustness": {"variants": [{"name": "v", "options": {"distractors": 0.1}}]}},
            "robustness.variants (v): options.distractors: unknown key",
        ),
        (
            {"robustness": {"variants": [{"name": "v", "options": {"days": 100}}]}},
            "robustness.variants (v): need temporal_cutoff_day < correction_day < days",
        ),
        (
            {"robustness": {"variants": [{"name": "v", "options": {"seed": 3}}]}},
            "robustness.variants (v): options.seed: a variant changes a design option",
        ),
        (
            {"robustness": {"variants": [{"name": "v", "options": {"distractor_ratio": 0.172}}]}},
            "robustness.variants (v): options {'distractor_ratio': 0.172} change nothing",
        ),
        (
            {"robustness": {"variants": [{"name": "seed-7", "options": {"days": 300}}]}},
            "robustness.variants (seed-7): the name is not path-safe or is reserved",
        ),
        (
            {"robustness": {"variants": [{"name": "a/b", "options": {"days": 300}}]}},
            "robustness.variants (a/b): the name is not path-safe",
        ),
        (
            {"robustness": {"variants": [{"name": "study-corpus", "options": {"days": 300}}]}},
            "robustness.variants (study-corpus): the name is not path-safe or is reserved",
        ),
        (
            {"robustness": {"study_corpus": 7}},
            "robustness.study_corpus",
        ),
        (
            {
                "robustness": {
                    "variants": [
                        {"name": "v", "options": {"days": 300}},
                        {"name": "v", "options": {"days": 330}},
                    ]
                }
            },
            "robustness.variants: duplicate names in ['v', 'v']",
        ),
        (
            {"robustness": {"variants": {"v": {"distractor_ratio": 0.1}}}},
            "robustness.variants: Input should be a valid list",
        ),
        ({"robustness": {"variants": [{"name": "v"}]}}, "robustness.variants.0.options: Field"),
        ({"robustness": {"seeds": [-3]}}, "robustness.seeds.0: Input should be greater than"),
        ({"robustness": {"seeds": ["12345"]}}, "robustness.seeds.0: Input should be a valid int"),
        ({"robustness": {"models": ["nope"]}}, "robustness.models.0: Input should be"),
        (
            {"robustness": {"models": ["paraphrase-MiniLM-L3-v2"] * 2}},
            "robustness.models: duplicate names",
        ),
    ],
)
def test_bad_values_are_named(data, needle):
    with pytest.raises(ConfigError) as exc:
        load_config(data)
    assert needle in str(exc.value)


def test_missing_and_malformed_files(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("run: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)


def test_conversation_arms_are_the_configured_ones_in_order():
    from agentmem.workflow.selection import conversation_arms

    cfg = load_config(REPO / "config/config.yaml")
    assert conversation_arms(cfg) == ["file-vec", "sqlite-fts", "three-tier"]
    few = cfg.model_copy(update={"arms": ["three-tier", "pg-gin", "file-vec"]})
    assert conversation_arms(few) == ["file-vec", "three-tier"]  # the sweep's order


def test_scaling_arms_are_the_configured_ones_in_the_order_of_arms():
    from agentmem.workflow.selection import scaling_arms

    cfg = load_config({"arms": ["file-jsonl", "pg-gin", "sqlite-fts"]})
    assert scaling_arms(cfg) == ["file-jsonl", "pg-gin", "sqlite-fts"]  # null: every arm
    narrowed = cfg.model_copy(update={"scaling_arms": ["sqlite-fts", "pg-hnsw", "file-jsonl"]})
    assert scaling_arms(narrowed) == ["file-jsonl", "sqlite-fts"]  # pg-hnsw is not in arms
    shipped = load_config(REPO / "config" / "config.yaml")
    assert "chroma" in shipped.arms and "chroma" not in scaling_arms(shipped)
    assert scaling_arms(shipped) == [a for a in shipped.arms if a in shipped.scaling_arms]


def test_external_datasets_and_their_ids():
    from agentmem.config import LocomoConfig
    from agentmem.workflow.selection import external_runs

    default = load_config(REPO / "config/config.yaml")
    assert list(external_runs(default)) == [
        "locomo-turns",
        "locomo-observations",
        "locomo-summaries",
    ]
    obs = external_runs(default)["locomo-observations"]
    assert (obs.name, obs.unit, obs.path, obs.settings) == (
        "locomo",
        "observations",
        "data/external/locomo10.json",
        ("scoped",),
    )
    assert obs.source == "results/external/locomo/source/observations"
    # `external.locomo` without a format is the LoCoMo file, with its default path
    cfg = load_config({"external": {"locomo": {"limit_conversations": 2}}})
    assert cfg.external["locomo"] == LocomoConfig(limit_conversations=2)
    assert load_config({}).external["locomo"].path == "data/external/locomo10.json"
    assert obs.arms == tuple(default.arms)  # no `arms` in the entry: every arm
    smoke_cfg = load_config(REPO / "config/smoke.yaml")
    smoke = external_runs(smoke_cfg)
    assert list(smoke) == ["locomo-turns", "tiny"]
    tiny = smoke["tiny"]
    assert (tiny.format, tiny.unit, tiny.source, tiny.settings, tiny.arms) == (
        "agentmem-memory",
        None,
        "tests/data/tiny-memory",
        ("scoped",),
        tuple(smoke_cfg.arms),
    )
    # an entry's arms: those of them that are configured, in the order of `arms`
    narrowed = load_config(
        {
            "arms": ["file-jsonl", "pg-gin", "sqlite-fts"],
            "external": {
                "locomo": {"units": ["turns"], "arms": ["sqlite-fts", "pg-hnsw", "file-jsonl"]}
            },
        }
    )
    assert external_runs(narrowed)["locomo-turns"].arms == ("file-jsonl", "sqlite-fts")
    # `arms` narrowed past the entry's (a second --configfile): the dataset runs no arm
    apart = narrowed.model_copy(update={"arms": ["pg-gin"]})
    assert external_runs(apart)["locomo-turns"].arms == ()
    off = load_config({"external": {"locomo": {"units": ["turns"], "arms": []}}})
    assert external_runs(off)["locomo-turns"].arms == ()  # []: switched off


def test_schema_checks_each_external_entry_by_its_format():
    """The schema Snakemake validates with (filling defaults) accepts both formats side by
    side and rejects a key of the other format."""
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    schema = str(REPO / "workflow/schemas/config.schema.yaml")
    data = {
        "external": {
            "locomo": {"path": "x.json"},
            "mine": {"format": "agentmem-memory", "path": "d"},
        }
    }
    validate(data, schema)
    assert data["external"]["mine"] == {
        "format": "agentmem-memory",
        "path": "d",
        "warmup": 0,
        "repeats": 1,
        "arms": None,
    }
    assert data["external"]["locomo"]["format"] == "locomo"
    bad = {"external": {"mine": {"format": "agentmem-memory", "path": "d", "units": ["turns"]}}}
    with pytest.raises(WorkflowError, match="'units' was unexpected"):
        validate(bad, schema)


def test_robustness_corpora_seeds_baseline_variants():
    from agentmem.robustness import robustness_arms, robustness_corpora

    cfg = load_config(
        {
            "arms": ["sqlite-fts", "file-vec", "chroma"],
            "robustness": {
                "arms": None,
                "models": ["paraphrase-MiniLM-L3-v2"],
                "seeds": [3, 5],
                "variant_size": "s",
                "variants": [
                    {
                        "name": "thin",
                        "options": {"distractor_ratio": 0.0, "restatements": {"light_max": 2}},
                    }
                ],
            },
        }
    )
    corpora = robustness_corpora(cfg)
    model = "model-paraphrase-MiniLM-L3-v2"
    assert list(corpora) == ["seed-3", "seed-5", "default-s", "thin", model, "study-corpus"]
    assert [c.kind for c in corpora.values()] == [
        "seed",
        "seed",
        "baseline",
        "variant",
        "model",
        "study-corpus",
    ]
    assert [c.size for c in corpora.values()] == ["m", "m", "s", "s", "m", "m"]
    assert corpora["study-corpus"].source == "data/external/study-corpus.json"
    assert corpora[model].model == "paraphrase-MiniLM-L3-v2"
    assert corpora[model].options == cfg.corpus
    assert corpora["seed-5"].options.seed == 5
    assert corpora["seed-5"].options.distractor_ratio == cfg.corpus.distractor_ratio
    thin = corpora["thin"].options
    assert (thin.distractor_ratio, thin.restatements.light_max) == (0.0, 2)
    assert thin.restatements.every_nth_heavy == cfg.corpus.restatements.every_nth_heavy
    assert thin.seed == cfg.corpus.seed
    assert corpora["thin"].root == "results/robustness/thin"
    # null arms: the study's arms among the configured ones, in the order of arms
    assert robustness_arms(cfg) == ["sqlite-fts", "file-vec"]
    # variants at the main size: the headline run is their baseline
    at_main = load_config({"robustness": {"seeds": [], "models": [], "study_corpus": None}})
    assert [c.kind for c in robustness_corpora(at_main).values()] == ["variant"] * 6


def test_embedding_backend_accepts_onnx_int8_and_refuses_an_unknown_one():
    assert load_config({}).embedding.backend == "onnx"  # the default stays the fp32 graph
    cfg = load_config({"embedding": {"backend": "onnx-int8"}})
    assert cfg.embedding.backend == "onnx-int8"
    with pytest.raises(
        ConfigError,
        match=r"embedding\.backend: Input should be 'onnx', 'onnx-int8' or 'torch' \(got 'int4'\)",
    ):
        load_config({"embedding": {"backend": "int4"}})
