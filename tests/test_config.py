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
    from agentmem.config import conversation_arms

    cfg = load_config(REPO / "config/config.yaml")
    assert conversation_arms(cfg) == ["file-vec", "sqlite-fts", "three-tier"]
    few = cfg.model_copy(update={"arms": ["three-tier", "pg-gin", "file-vec"]})
    assert conversation_arms(few) == ["file-vec", "three-tier"]  # the sweep's order


def test_scaling_arms_are_the_configured_ones_in_the_order_of_arms():
    from agentmem.config import scaling_arms

    cfg = load_config({"arms": ["file-jsonl", "pg-gin", "sqlite-fts"]})
    assert scaling_arms(cfg) == ["file-jsonl", "pg-gin", "sqlite-fts"]  # null: every arm
    narrowed = cfg.model_copy(update={"scaling_arms": ["sqlite-fts", "pg-hnsw", "file-jsonl"]})
    assert scaling_arms(narrowed) == ["file-jsonl", "sqlite-fts"]  # pg-hnsw is not in arms
    shipped = load_config(REPO / "config" / "config.yaml")
    assert "chroma" in shipped.arms and "chroma" not in scaling_arms(shipped)
    assert scaling_arms(shipped) == [a for a in shipped.arms if a in shipped.scaling_arms]
