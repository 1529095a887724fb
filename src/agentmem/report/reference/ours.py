"""The reader of our results: our number for each lookup key, from a results tree.

:class:`OurResults` answers the same keys (``ref``) as the published records; each key
reads one file of the run (listed on the class), and a missing file gives ``None``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import polars as pl

from agentmem.choices import AS_SHIPPED
from agentmem.report.reference.records import Ref
from agentmem.sweeps.choices import overlay_choices

#: the configuration name the rows of ``OurResults(overlay=...)`` are laid over under
OVERLAY = "overlay"


class OurResults:
    """Our numbers, read lazily from a results tree; every missing input gives ``None``.

    Keys (``ref``) and the file each reads (``{m}`` = main size):

    - ``("manifest", key)``, ``("manifest_ratio", a, b)``, ``("predicate_share",)``,
      ``("option", key)``: ``corpus/{m}/manifest.json``;
    - ``("world", type)``: ``corpus/{m}/entities.parquet``;
    - ``("min_relevant", class)``: ``corpus/{m}/queries.parquet`` + ``qrels.parquet``;
    - ``("restatements", stat)``: ``trials/restatements/{m}.json``;
    - ``("queries", class)``: manifest ``queries_by_class``;
    - ``("size", size, "memories"|"queries")``: ``corpus/{size}/manifest.json``, else
      ``sweeps/scaling.csv``;
    - ``("validation", class, column)``: ``tables/validation.csv`` (else
      ``tables/validation_{m}.csv``);
    - ``("probe", stat)``: ``tables/dense_probe_{m}.csv``;
    - ``("by_class", arm, class, column)``: ``tables/by_class.csv`` (else
      ``tables/by_class_{m}.csv``), under a configuration of the study's choices with
      ``tables/choices.csv`` (else ``tables/choices_{m}.csv``) laid over it
      (:func:`agentmem.sweeps.choices.overlay_choices`); ``("best_other", arm, class,
      column)``: the largest value of any other arm there;
    - ``("build", arm, key)``, ``("param", arm, name)``: ``builds/{m}/{arm}.json``;
    - ``("budget", arm, k, column)``: ``sweeps/budget.csv``;
    - ``("postfilter", arm, overfetch, column)``: ``sweeps/postfilter.csv`` (else
      ``sweeps/postfilter_{m}.csv``);
    - ``("fill", arm, column)``: ``tables/fill_rate.csv``;
    - ``("scaling", arm, size, column)``: ``sweeps/scaling.csv`` (``storage_mb``,
      ``ingest_s``, ``index_s`` derived);
    - ``("crash", family, stat)``: ``trials/crash.csv``;
    - ``("lost", store, mode, column)``: ``trials/lost_update.csv`` (``lost_share`` derived);
    - ``("anomaly", arm, column)``, ``("anomaly_k",)``: ``trials/anomaly.csv`` (else
      ``trials/anomaly_{m}.csv``);
    - ``("ci", arm, class, metric)``: ``tables/bootstrap_ci.csv`` -> ``(low, high)``.

    Args:
        results_dir: the ``results`` directory.
        main_size: size of the headline tables; None picks ``m`` when present, else the
            only corpus size found, else ``m``.
        choices: the configuration of the study's implementation choices whose quality
            numbers ``by_class`` reads (:data:`agentmem.choices.CONFIGURATIONS`); every
            other key reads the arms as shipped.
        overlay: by-class rows (``by_class.csv``'s columns) whose quality columns replace
            those of the same arm and class in ``by_class``, e.g. each arm at its best
            operating point (:func:`agentmem.sweeps.pareto.findings_at_best`); the
            latency columns stay the headline's.
    """

    def __init__(
        self,
        results_dir: str | Path,
        main_size: str | None = None,
        choices: str = AS_SHIPPED,
        overlay: pl.DataFrame | None = None,
    ) -> None:
        self.root = Path(results_dir)
        self.choices = choices
        self.overlay = overlay
        self.main = main_size or self._guess_main()
        self._cache: dict[str, Any] = {}
        self.missing: set[str] = set()

    def _guess_main(self) -> str:
        d = self.root / "corpus"
        sizes = sorted(p.name for p in d.iterdir() if p.is_dir()) if d.is_dir() else []
        if "m" in sizes or len(sizes) != 1:
            return "m"
        return sizes[0]

    def _load(self, rel: str) -> Any:
        """Parsed file at ``results/<rel>`` (JSON, CSV or Parquet), or None if absent."""
        if rel in self._cache:
            return self._cache[rel]
        p = self.root / rel
        val: Any = None
        if p.is_file():
            if p.suffix == ".json":
                val = json.loads(p.read_text())
            elif p.suffix == ".csv":
                val = pl.read_csv(p, infer_schema_length=None)
            elif p.suffix == ".parquet":
                val = pl.read_parquet(p)
        else:
            self.missing.add(rel)
        self._cache[rel] = val
        return val

    @staticmethod
    def _num(v: Any) -> float | None:
        if v is None:
            return None
        if isinstance(v, bool):
            return float(v)
        try:
            f = float(v)
        except (TypeError, ValueError):
            return None
        return None if math.isnan(f) else f

    @staticmethod
    def _cell(df: pl.DataFrame | None, col: str, **eq: Any) -> Any:
        """The value of ``col`` in the first row of ``df`` where every ``eq`` matches."""
        if df is None or col not in df.columns:
            return None
        for k, v in eq.items():
            if k not in df.columns:
                return None
            # compare as text: a column that is all null in a CSV is read as String
            df = df.filter(
                pl.col(k).is_null() if v is None else pl.col(k).cast(pl.String) == str(v)
            )
        return df[col][0] if df.height else None

    def get(self, ref: Ref) -> float | None:
        """Our value for ``ref`` (None when not measured or its input file is missing)."""
        fn = getattr(self, f"_get_{ref[0]}", None)
        if fn is None:
            raise KeyError(f"unknown reference key {ref!r}")
        return self._num(fn(*ref[1:]))

    def ci(self, arm: str, cls: str, metric: str) -> tuple[float, float] | None:
        """Our 95 % bootstrap interval for a metric, if ``bootstrap_ci.csv`` exists."""
        t = self._load("tables/bootstrap_ci.csv")
        lo = self._cell(t, "ci_low", arm=arm, query_class=cls, metric=metric)
        hi = self._cell(t, "ci_high", arm=arm, query_class=cls, metric=metric)
        return None if lo is None or hi is None else (float(lo), float(hi))

    # --- corpus ---
    def _manifest(self) -> dict[str, Any] | None:
        return self._load(f"corpus/{self.main}/manifest.json")

    def _get_manifest(self, key: str) -> Any:
        m = self._manifest()
        return None if m is None else m.get(key)

    def _get_manifest_ratio(self, a: str, b: str) -> Any:
        x, y = self._get_manifest(a), self._get_manifest(b)
        return None if x is None or not y else x / y

    def _get_predicate_share(self) -> Any:
        r = self._get_manifest_ratio("similarity_expressible", "queries")
        return None if r is None else 1 - r

    def _get_option(self, key: str) -> Any:
        m = self._manifest()
        if m is None:
            return None
        opts = m.get("options", {}).get("corpus", {})
        return opts.get("restatements", {}).get(key, opts.get(key))

    def _get_world(self, etype: str) -> Any:
        e = self._load(f"corpus/{self.main}/entities.parquet")
        if e is None or "type" not in e.columns:
            return None
        return e.filter(pl.col("type") == etype).height

    def _get_min_relevant(self, cls: str) -> Any:
        q = self._load(f"corpus/{self.main}/queries.parquet")
        r = self._load(f"corpus/{self.main}/qrels.parquet")
        if q is None or r is None:
            return None
        ids = q.filter(pl.col("class") == cls).select("query_id")
        n = r.join(ids, on="query_id").group_by("query_id").len()
        return n["len"].min() if n.height else None

    def _get_restatements(self, stat: str) -> Any:
        r = self._load(f"trials/restatements/{self.main}.json")
        return None if r is None else r.get(stat)

    def _get_queries(self, cls: str) -> Any:
        m = self._manifest()
        return None if m is None else m.get("queries_by_class", {}).get(cls)

    def _get_size(self, size: str, what: str) -> Any:
        m = self._load(f"corpus/{size}/manifest.json")
        if m is not None:
            return m.get(what)
        t = self._load("sweeps/scaling.csv")
        return self._cell(t, what, size=size)

    # --- §2 ---
    def _sized(self, rel: str) -> Any:
        """``results/<rel>``, else its main-size twin ``<stem>_{m}<suffix>``.

        The twin is the layout of a further corpus's tree (:mod:`agentmem.robustness`).
        """
        p = Path(rel)
        twin = str(p.with_name(f"{p.stem}_{self.main}{p.suffix}"))
        if (self.root / rel).is_file() or not (self.root / twin).is_file():
            return self._load(rel)
        return self._load(twin)

    def _get_validation(self, cls: str, col: str) -> Any:
        return self._cell(self._sized("tables/validation.csv"), col, query_class=cls)

    def _get_probe(self, stat: str) -> Any:
        t = self._load(f"tables/dense_probe_{self.main}.csv")
        if t is None or t.height == 0:
            return None
        top = t["top_is_distractor"].cast(pl.Boolean)
        return {
            "probes": t.height,
            "top_distractor": int(top.sum()),
            "top_distractor_share": float(top.mean()),
            "median_rank": t["first_relevant_rank"].median(),
            "memories": t["memories"][0],
        }[stat]

    # --- §3 ---
    def _by_class(self) -> pl.DataFrame | None:
        """The by-class table under :attr:`choices` (None: a file it needs is missing)."""
        t = self._sized("tables/by_class.csv")
        if t is not None and self.overlay is not None:
            if "by_class overlaid" not in self._cache:
                rows = self.overlay.with_columns(choices=pl.lit(OVERLAY))
                self._cache["by_class overlaid"] = overlay_choices(t, rows, OVERLAY)
            return self._cache["by_class overlaid"]
        if self.choices == AS_SHIPPED or t is None:
            return t
        key = f"by_class under {self.choices}"
        if key not in self._cache:
            sweep = self._sized("tables/choices.csv")
            self._cache[key] = None if sweep is None else overlay_choices(t, sweep, self.choices)
        return self._cache[key]

    def _get_by_class(self, arm: str, cls: str, col: str) -> Any:
        return self._cell(self._by_class(), col, arm=arm, query_class=cls)

    def _get_best_other(self, arm: str, cls: str, col: str) -> Any:
        """The largest ``col`` in class ``cls`` of any arm but ``arm`` (None: no other arm)."""
        t = self._by_class()
        if t is None or col not in t.columns:
            return None
        t = t.filter((pl.col("arm") != arm) & (pl.col("query_class") == cls))
        vals = [self._num(x) for x in t[col].to_list()]
        vals = [x for x in vals if x is not None]
        return max(vals) if vals else None

    def _get_build(self, arm: str, key: str) -> Any:
        b = self._load(f"builds/{self.main}/{arm}.json")
        return None if b is None else b.get(key)

    def _get_param(self, arm: str, name: str) -> Any:
        b = self._load(f"builds/{self.main}/{arm}.json")
        return None if b is None else b.get("params", {}).get(name)

    def _get_budget(self, arm: str, k: int, col: str) -> Any:
        return self._cell(self._load("sweeps/budget.csv"), col, arm=arm, k=k)

    # --- §4 ---
    def _get_postfilter(self, arm: str, x: int, col: str) -> Any:
        t = self._sized("sweeps/postfilter.csv")
        return self._cell(t, col, arm=arm, overfetch=x)

    def _get_fill(self, arm: str, col: str) -> Any:
        return self._cell(self._load("tables/fill_rate.csv"), col, arm=arm)

    def _get_scaling(self, arm: str, size: str, col: str) -> Any:
        t = self._load("sweeps/scaling.csv")
        derived = {
            "storage_mb": ("storage_bytes", 1e6),
            "ingest_s": ("ingest_ms", 1e3),
            "index_s": ("index_ms", 1e3),
        }
        if col in derived:
            src, div = derived[col]
            v = self._cell(t, src, arm=arm, size=size)
            return None if v is None else v / div
        return self._cell(t, col, arm=arm, size=size)

    def _get_crash(self, fam: str, stat: str) -> Any:
        t = self._load("trials/crash.csv")
        if t is None:
            return None
        t = t.filter(pl.col("family") == fam)
        if t.height == 0:
            return None
        bad = ~t["readable"].cast(pl.Boolean)
        if stat in ("unreadable", "unreadable_text"):
            return int(bad.sum())
        if stat == "trials":
            return t.height
        if stat == "integrity_failures":
            return int((~t["integrity_ok"].cast(pl.Boolean)).sum())
        if stat == "lost_per_failure":
            lost = t.filter(pl.col("missing_committed") > 0)["missing_committed"]
            return float(lost.mean()) if lost.len() else 0
        raise KeyError(stat)

    def _get_lost(self, store: str, mode: str, col: str) -> Any:
        t = self._load("trials/lost_update.csv")
        if col == "lost_share":
            lost = self._cell(t, "lost", store=store, mode=mode)
            exp = self._cell(t, "expected", store=store, mode=mode)
            return None if lost is None or not exp else lost / exp
        return self._cell(t, col, store=store, mode=mode)

    def _get_anomaly(self, arm: str, col: str) -> Any:
        return self._cell(self._sized("trials/anomaly.csv"), col, arm=arm)

    def _get_anomaly_k(self) -> Any:
        # the probe's k is the run's k; the anomaly CSV does not record it, the capture does
        cap = self._load("capture.json")
        if cap is None:
            return None
        return cap.get("config", {}).get("trials", {}).get("anomaly", {}).get("k")
