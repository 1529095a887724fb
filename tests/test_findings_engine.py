"""The findings engine: each operation and condition by hand, its errors, the declared file."""

from __future__ import annotations

import math
import re
from importlib import resources
from pathlib import Path

import pydantic
import pytest
import yaml

from agentmem.arms import ARMS
from agentmem.report.reference import findings as F

SRC = Path(F.__file__).resolve().parents[2]  # src/agentmem


def one(value, holds=None, flips=None, **extra) -> F.Finding:
    """The single headline finding of a file declaring ``value`` (and ``extra`` fields)."""
    decl = {
        "number": 1,
        "claim": "c",
        "statistic": "s",
        "rule": "r",
        "value": value,
        "holds": holds or {"value": "> 0"},
        **extra,
    }
    if flips:
        decl["flips"] = flips
    doc = {
        "sets": {"pair": ["a", "b"]},
        "constants": {"k": 2},
        "study": [],
        "headline": [decl],
        "ours": [],
    }
    return F.load_findings(yaml.safe_dump(doc, allow_unicode=True))["headline"][0]


def look(values: dict):
    return lambda ref: values.get(ref)


def test_operations_by_hand():
    v = look(
        {
            ("x", "a"): 3.0,
            ("x", "b"): 1.0,
            ("by_class", "a", "all", "ndcg_at_10"): 0.5,
            ("by_class", "a", "lexical", "ndcg_at_10"): 0.25,
            ("y", 2): 8.0,
        }
    )
    assert one({"minus": [["x", "a"], ["x", "b"]]}).stat(v) == 2.0
    assert one({"plus": [["x", "a"], ["x", "b"]]}).stat(v) == 4.0
    assert one({"ratio": [["x", "b"], ["x", "a"]]}).stat(v) == pytest.approx(1 / 3)
    assert (
        one({"ratio": [["x", "a"], ["x", "zero"]]}).stat(look({("x", "a"): 1, ("x", "zero"): 0}))
        is None
    )
    assert one({"abs": {"minus": [["x", "b"], ["x", "a"]]}}).stat(v) == 2.0
    assert one({"ndcg": "a"}).stat(v) == 0.5
    assert one({"ndcg": ["a", "lexical"]}).stat(v) == 0.25
    # $k is a constant (keeps its type in a key); $m a loop variable over the set "pair"
    assert one(["y", "$k"]).stat(v) == 8.0
    each = {"for": {"m": "pair"}, "each": ["x", "$m"]}
    assert one({"min": each}).stat(v) == 1.0
    assert one({"max": each}).stat(v) == 3.0
    assert one({"range": each}).stat(v) == 2.0
    assert one({"mean": each}).stat(v) == 2.0
    assert one({"sum": each}).stat(v) == 4.0
    # one of the two unknown: min/max over the known, range needs two, mean/sum need all
    half = look({("x", "a"): 3.0})
    assert one({"min": each}).stat(half) == 3.0
    assert one({"range": each}).stat(half) is None
    assert one({"mean": each}).stat(half) is None
    assert one({"sum": each}).stat(half) is None
    assert one({"sum_known": each}).stat(half) == 3.0
    assert one({"sum_known": each}).stat(look({})) == 0
    assert one({"max": each}).stat(look({})) is None
    # log-log slope: latency ×4 for memories ×2 is slope 2
    pts = {("p", 0): 1.0, ("p", 1): 4.0, ("n", 0): 10.0, ("n", 1): 20.0}
    slope = {"slope": {"y": [["p", 0], ["p", 1]], "x": [["n", 0], ["n", 1]]}}
    assert one(slope).stat(look(pts)) == pytest.approx(math.log(4) / math.log(2))
    assert one(slope).stat(look({**pts, ("n", 1): 10.0})) is None  # no spread in x


def test_conditions_all_any_and_unknowns():
    f = one(
        ["x", "a"],
        holds={"value": ">= 0.5", "other": "in [0, 1]"},
        flips={"value": "< 0", "other": "> value"},
        **{"with": {"other": ["x", "b"]}},
    )
    assert f.verdict(look({("x", "a"): 0.5, ("x", "b"): 0.2})) == "holds"
    assert f.verdict(look({("x", "a"): 0.5, ("x", "b"): 1.5})) == "flips"  # other > value
    assert f.verdict(look({("x", "a"): 0.3, ("x", "b"): 0.2})) == "weakens"
    assert f.verdict(look({("x", "a"): -1.0, ("x", "b"): 0.2})) == "flips"
    assert f.verdict(look({("x", "a"): 0.5})) == "n/a"  # a condition reads an unknown
    assert f.verdict(look({("x", "b"): 0.2})) == "n/a"
    eq = one(["x", "a"], holds={"value": "== 1"})
    assert eq.holds(look({("x", "a"): 1 - 1e-12})) and not eq.holds(look({("x", "a"): 0.99}))
    # a constant in a condition
    assert one(["x", "a"], holds={"value": ">= -$k"}).holds(look({("x", "a"): -2.0}))


@pytest.mark.parametrize(
    "value, extra, message",
    [
        ({"median": [["x"]]}, {}, "unknown operation 'median'"),
        ({"min": {"for": {"m": "nowhere"}, "each": ["x", "$m"]}}, {}, "unknown group 'nowhere'"),
        (["x", "$nobody"], {}, "unknown name $nobody"),
        (["x"], {"holds": {"missing": "> 0"}}, "unknown statistic 'missing'"),
        (["x"], {"holds": {"value": "about 3"}}, "expected 'OP NUMBER|STATISTIC'"),
        (["x"], {"holds": {"value": "> lots"}}, "'lots' is no number or statistic"),
        ({"minus": [["x"]]}, {}, "minus takes two expressions"),
        (["x"], {"claim": "the {nobody} arm"}, "unknown name {nobody}"),
    ],
)
def test_bad_declarations_name_the_finding_and_the_problem(value, extra, message):
    with pytest.raises(F.FindingsFileError, match=re.escape(message)) as err:
        one(value, **extra)
    assert "headline[0] (1)" in str(err.value)


def test_a_misspelt_field_is_refused():
    with pytest.raises(pydantic.ValidationError, match="holdz"):
        one(["x"], holdz={"value": "> 0"})


def test_every_threshold_of_a_declared_condition_stands_in_its_rule():
    doc = yaml.safe_load(
        (resources.files("agentmem.report.reference") / "data" / "findings.yaml").read_text()
    )
    consts = doc["constants"]
    for part in ("study", "headline", "ours"):
        for d in doc[part]:
            rule = d["rule"].format_map({k: str(x) for k, x in consts.items()})
            shown = {float(x) for x in re.findall(r"\d+(?:\.\d+)?", rule)}
            for cond in (*d["holds"].values(), *d.get("flips", {}).values()):
                for name, x in consts.items():
                    cond = cond.replace(f"${name}", str(x))
                for num in re.findall(r"\d+(?:\.\d+)?", cond):
                    assert float(num) in shown, (d["claim"], cond, rule)


def test_the_declared_lists():
    assert len(F.FINDINGS) == 31 and all(f.number is None for f in F.FINDINGS)
    assert [f.number for f in F.ALL_FINDINGS] == list(range(1, 14))
    assert F.DESIGN_FINDINGS[0].claim.startswith("Beyond the study: the recommended design (")


def test_no_arm_is_named_in_code_outside_the_arms_package():
    names = "|".join(re.escape(a) for a in sorted(ARMS, key=len, reverse=True))
    # a string literal naming an arm (a name in a docstring's ``code`` is prose)
    quoted = re.compile(rf"(?<!`)[\"']({names})[\"'](?!`)")
    found = []
    for path in SRC.rglob("*.py"):
        if "arms" in path.relative_to(SRC).parts[:1]:
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if quoted.search(line):
                found.append(f"{path.relative_to(SRC)}:{i}: {line.strip()}")
    assert found == []
