"""Operating points: the declared knobs, the grid, the frontier, the budgets, the config."""

from __future__ import annotations

import inspect
import json
import random

import polars as pl
import pytest
from support.paths import REPO

from agentmem.arms import ARMS
from agentmem.arms.knobs import Knob
from agentmem.config import ConfigError, load_config
from agentmem.corpus.queries import QUERY_CLASSES
from agentmem.sweeps.pareto import (
    DEFAULT_POINT,
    best_points,
    budget_table,
    frontier_table,
    grid_points,
    knob_defaults,
    knobbed_arms,
    pareto_mask,
    points_table,
)
from agentmem.workflow.plan import Plan


def _dominated(i: int, q: list, c: list) -> bool:
    """Point i is dominated: another is at least as good on both and better on one."""
    return any(
        j != i
        and q[j] is not None
        and c[j] is not None
        and q[j] >= q[i]
        and c[j] <= c[i]
        and (q[j] > q[i] or c[j] < c[i])
        for j in range(len(q))
    )


def test_pareto_mask_by_hand():
    quality = [0.5, 0.7, 0.6, 0.7, None, 0.9]
    cost = [1.0, 2.0, 3.0, 2.0, 0.5, 10.0]
    # cost 1: .5 kept; cost 2: .7 kept (the first of the two equal points); cost 3: .6 is
    # below .7 (dominated); cost 10: .9 kept; the point without quality is never kept
    assert pareto_mask(quality, cost) == [True, True, False, False, False, True]
    assert pareto_mask([], []) == []


def test_pareto_mask_matches_the_definition_on_random_points():
    rng = random.Random(7)
    for _ in range(200):
        n = rng.randint(1, 25)
        q = [rng.choice([0.1, 0.2, 0.5, 0.8, 1.0, rng.random()]) for _ in range(n)]
        c = [rng.choice([1.0, 2.0, 4.0, rng.random() * 10]) for _ in range(n)]
        keep = pareto_mask(q, c)
        for i in range(n):
            if keep[i]:
                assert not _dominated(i, q, c)
            else:  # dropped: dominated, or equal to a kept point on both axes
                assert _dominated(i, q, c) or any(
                    keep[j] and q[j] == q[i] and c[j] == c[i] for j in range(n)
                )


def test_every_knob_is_a_constructor_parameter_and_its_grid_is_accepted():
    arms = knobbed_arms(ARMS)
    assert len(arms) >= 8
    for name in arms:
        cls = ARMS[name]
        params = inspect.signature(cls).parameters
        for knob in cls.knobs:
            assert isinstance(knob, Knob) and knob.param in params, (name, knob.param)
            assert knob.stage in ("query", "build")
            for value in knob.grid:
                cls(**{knob.param: value}).close()  # the constructor validates every value


def test_grid_points_one_knob_at_a_time():
    points = grid_points("pg-hnsw", {"ef_search": 80})
    assert [p.point for p in points] == [
        "default",
        "ef_search=10",
        "ef_search=20",
        "ef_search=120",
        "ef_search=160",
        "ef_search=240",
        "ef_search=320",
        "m=32",
    ]  # 80 is the configured value: the default point, not run twice
    assert points[0].params == {"ef_search": 80} and points[0].stage == "query"
    assert points[-1].params == {"ef_search": 80, "m": 32} and points[-1].stage == "build"
    assert knob_defaults("pg-hnsw", {"ef_search": 80}) == {
        "ef_search": 80,
        "m": 16,
        "ef_construction": 64,
    }
    # a configured grid replaces the declared one for its knob only
    mine = grid_points("pg-hnsw", None, {"ef_search": [200, 40]})
    assert [p.point for p in mine] == ["default", "ef_search=200", "m=32"]
    # a knob with an empty default grid runs only at configured values
    assert [p.point for p in grid_points("lancedb-hybrid")] == [DEFAULT_POINT]
    with pytest.raises(ValueError, match=r"\['nope'\] are not knobs of pg-hnsw"):
        grid_points("pg-hnsw", None, {"nope": [1]})


def _record(arm: str, point: str, p50: float, bytes_pm: float, ndcg: dict) -> dict:
    rows = [
        {"query_class": c, "ndcg_at_10": v, "recall_at_10": v, "p50_ms": p50, "p95_ms": p50}
        for c, v in ndcg.items()
    ]
    return {
        "arm": arm,
        "point": point,
        "knob": "" if point == DEFAULT_POINT else point.split("=")[0],
        "stage": "query",
        "params": {} if point == DEFAULT_POINT else {point.split("=")[0]: 1},
        "build_ms": 10.0,
        "bytes_per_memory": bytes_pm,
        "throughput_qps": 1000.0 / p50,
        "by_class": rows,
    }


@pytest.fixture
def points() -> pl.DataFrame:
    return points_table(
        [
            _record("a", "default", 1.0, 100.0, {"lexical": 0.5, "semantic": 0.9, "all": 0.6}),
            _record("a", "ef=2", 3.0, 100.0, {"lexical": 0.6, "semantic": 0.9, "all": 0.7}),
            _record("b", "default", 0.5, 300.0, {"lexical": 0.9, "semantic": 0.2, "all": 0.4}),
            _record("b", "k=2", 8.0, 300.0, {"lexical": 0.95, "semantic": 0.3, "all": 0.5}),
        ]
    )


def test_points_table_is_wide(points: pl.DataFrame):
    assert points.height == 4
    assert points["ndcg_at_10"].to_list() == [0.6, 0.7, 0.4, 0.5]
    assert points["ndcg_at_10_lexical"].to_list() == [0.5, 0.6, 0.9, 0.95]
    assert points["ndcg_at_10_temporal"].is_null().all()  # a class the records lack
    assert points["qps"].to_list() == [1000.0, pytest.approx(333.333, abs=1e-3), 2000.0, 125.0]
    assert json.loads(points["params"][1]) == {"ef": 1}
    assert {f"recall_at_10_{c}" for c in QUERY_CLASSES} <= set(points.columns)


def test_frontier_across_and_within_arms(points: pl.DataFrame):
    f = frontier_table(points)
    every = f.filter(among="all arms", scope="all", cost="p50_ms")
    # by p50: b/default (.4 at 0.5 ms), a/default (.6 at 1), a/ef=2 (.7 at 3); b/k=2 (.5 at
    # 8 ms) is dominated
    assert list(zip(every["arm"], every["point"], strict=True)) == [
        ("b", "default"),
        ("a", "default"),
        ("a", "ef=2"),
    ]
    lex = f.filter(among="all arms", scope="lexical", cost="p50_ms")
    assert list(zip(lex["arm"], lex["point"], strict=True)) == [("b", "default"), ("b", "k=2")]
    # by bytes: a's store (100 B) holds its best point; b (300 B) is dominated
    by_bytes = f.filter(among="all arms", scope="all", cost="bytes_per_memory")
    assert list(zip(by_bytes["arm"], by_bytes["point"], strict=True)) == [("a", "ef=2")]
    within_b = f.filter(among="b", scope="all", cost="p50_ms")
    assert within_b["point"].to_list() == ["default", "k=2"]


def test_budgets_and_best_points(points: pl.DataFrame):
    b = budget_table(points, [0.5, 1.0, 5.0])
    cell = {(r["budget_ms"], r["scope"]): (r["arm"], r["point"]) for r in b.iter_rows(named=True)}
    assert cell[(0.5, "all")] == ("b", "default")
    assert cell[(1.0, "all")] == ("a", "default")
    assert cell[(5.0, "all")] == ("a", "ef=2")
    assert cell[(5.0, "lexical")] == ("b", "default")  # b/k=2 (.95) needs 8 ms
    best = best_points(points)
    assert best["best_point"].to_list() == ["ef=2", "k=2"]
    assert best["gain"].to_list() == pytest.approx([0.1, 0.1])
    none = budget_table(points, [0.1])
    assert none["arm"].is_null().all()


def test_default_plan_has_enough_points():
    plan = Plan(load_config(REPO / "config/config.yaml"), REPO)
    pts = plan.pareto_points
    assert len(pts) >= 40 and len(plan.pareto_arms) >= 8
    hnsw = [p for p in pts if p.arm == "pg-hnsw" and p.knob == "ef_search"]
    values = sorted(p.params["ef_search"] for p in hnsw) + [40]
    assert min(values) <= 40 and max(values) >= 200
    assert any(p.stage == "build" for p in pts)
    assert "results/pareto/points.csv" in plan.all_targets()
    assert "results/figures/pareto.svg" in plan.report_figures()
    first = next(p for p in pts if p.stage == "query")
    inputs = plan.pareto_point_inputs(type("W", (), {"arm": first.arm, "point": first.point}))
    assert inputs["store"] == f"results/stores/{plan.main}/{first.arm}"
    build = next(p for p in pts if p.stage == "build")
    wild = type("W", (), {"arm": build.arm, "point": build.point})
    assert plan.pareto_point_inputs(wild) == {}
    # a job's params are its own point, not its arm's grid
    assert plan.pareto_point_params(wild) == {
        "knob": build.knob,
        "stage": "build",
        "params": build.params,
    }
    with pytest.raises(ValueError, match="no operating point 'nope' of 'pg-hnsw'"):
        plan.pareto_point(type("W", (), {"arm": "pg-hnsw", "point": "nope"}))


def test_no_points_when_pareto_arms_is_empty():
    cfg = load_config({**_base(), "pareto": {"arms": []}})
    plan = Plan(cfg, REPO)
    assert plan.pareto_points == [] and plan.pareto_targets() == []


def _base() -> dict:
    import yaml

    return yaml.safe_load((REPO / "config/config.yaml").read_text())


@pytest.mark.parametrize(
    ("pareto", "message"),
    [
        ({"grids": {"pg-hnsw": {"ef_search": [0]}}}, "pareto.grids.pg-hnsw.ef_search: 0 is"),
        # pgvector refuses ef_construction < 2 m: stopped before any build
        ({"grids": {"pg-hnsw": {"m": [48]}}}, r"ef_construction \(64\) must be at least 2 \* m"),
        ({"grids": {"pg-hnsw": {"nope": [1]}}}, "'nope' is not a knob of pg-hnsw"),
        ({"grids": {"pg-hnsw": {"ef_search": []}}}, "the grid is empty"),
        ({"arms": ["pg-btree"]}, "pg-btree declares no knobs"),
        ({"arms": ["nosuch"]}, "unknown arm 'nosuch'"),
        ({"arms": ["pg-hnsw", "pg-hnsw"]}, "duplicate names"),
        ({"size": "xl"}, "pareto.size"),
        ({"budgets_ms": [0]}, "budgets must be > 0"),
        ({"grid": {}}, "pareto.grid: unknown key"),
    ],
)
def test_bad_pareto_config_is_refused(pareto: dict, message: str):
    with pytest.raises(ConfigError, match=message):
        load_config({**_base(), "pareto": pareto})


def test_cli_lists_the_knobs(capsys):
    from agentmem.cli import main

    assert main(["arms", "--knobs"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("pg-hnsw ") and " ef_search " in x)
    assert "query" in line and " 40 " in line and "10, 20, 80, 120, 160, 240, 320" in line
    assert any("(config only)" in x for x in out.splitlines())
