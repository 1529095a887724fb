"""Where a workflow run's time went: one row per job, lanes, the critical path.

From the run's Snakemake log (job starts with their inputs, outputs and resources; finish
and error lines; 1 s resolution), the jobs' ``benchmark:`` files (``s``, ``cpu_time``,
``max_rss``) and their logs (the job's whole CPU time as it exited,
:func:`agentmem.procs.report_job_cpu`, which replaces the benchmark's sampled
``cpu_time``; the CPU of the embedded PostgreSQL servers it stopped, which no benchmark
file sees: :func:`agentmem.pg.postmaster.report_server_cpu`): a job ends at its logged
finish and starts its benchmark's ``s`` earlier (never before its logged start).
Failed and unfinished jobs, and benchmarks longer than the logged span by over 1.5 s (left
by an earlier run), keep the log's times. Times are seconds since the run's first job
started. How to read the result: ``docs/BENCHMARKS.md``.
"""

from __future__ import annotations

import calendar
import contextlib
import csv
import io
import os
import re
from operator import itemgetter
from pathlib import Path
from typing import Any

from agentmem.bench.errors import BenchError
from agentmem.bench.jobs import tsv_float
from agentmem.io import write_text

#: Declared resource -> lane, in order of precedence; a job declaring none is ``other``.
LANES = {"bench_slot": "timing", "background_slot": "background", "crash_slot": "crash"}
LANE_ORDER = ("timing", "background", "crash", "other")
#: Columns of ``timeline.md``'s table of the slowest jobs.
SLOW_COLUMNS = "job | lane | status | start s | wall s | CPU s | server CPU s | peak RSS MiB"
#: Columns of ``timeline.csv``.
COLUMNS = "jobid rule wildcards lane status start_s end_s wall_s cpu_s cpu_from_log".split()
COLUMNS += ["server_cpu_s", "threads", "resources", "max_rss_mb", "on_critical_path"]
_MONTHS = {m: i for i, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split(), 1)}
_TS = re.compile(r"\[\w{3} (\w{3}) +(\d+) (\d+):(\d+):(\d+) (\d{4})\]$")
_START = re.compile(r"(?:local)?(?:rule|checkpoint) (\S+):$")
_FINISH = re.compile(r"Finished job(?:id)?:? (\d+)")
_FIELD = re.compile(r" {4}(\w+): (.*)$")


def latest_log(workdir: str | Path = ".") -> Path:
    """The newest ``<workdir>/.snakemake/log/*.snakemake.log`` (names are timestamps).

    Raises:
        BenchError: when there is none.
    """
    logs = sorted(Path(workdir, ".snakemake", "log").glob("*.snakemake.log"))
    if not logs:
        raise BenchError(f"no Snakemake log in {Path(workdir, '.snakemake', 'log')}")
    return logs[-1]


def rule_groups(workdir: str | Path = ".") -> dict[str, str]:
    """Rule name -> stem of the workflow file defining it (``Snakefile``, ``workflow/rules/*.smk``).

    Returns ``{}`` where there is no workflow; figures then group rules by their first word.
    """
    files = [Path(workdir, "Snakefile"), *sorted(Path(workdir, "workflow", "rules").glob("*.smk"))]
    pat = re.compile(r"^(?:rule|checkpoint) (\w+)|^use rule .* as (\w+)", re.M)
    return {m[1] or m[2]: f.stem for f in files if f.is_file() for m in pat.finditer(f.read_text())}


def read_log(path: str | Path) -> dict[str, Any]:
    """Parse a Snakemake log: ``cores``, ``workdir`` (``None`` if absent) and ``jobs``.

    Each job: ``rule``, ``t`` / ``end_t`` (s, UTC-like clock; an unfinished job ends at the
    log's last time), ``order`` (line of its end), ``status`` (``ok``, ``failed``,
    ``incomplete``) and its indented fields as text (``jobid``, ``input``, ``output``, ...).

    Raises:
        BenchError: when the file cannot be read.
    """
    try:
        lines = Path(path).read_text(errors="replace").splitlines()
    except OSError as exc:
        raise BenchError(f"cannot read Snakemake log {path}: {exc}") from exc
    head = "\n".join(lines[:60])
    cores = re.search(r"^Provided cores: (\d+)", head, re.M)
    wd = re.search(r"^\s*Working directory: (.+)$", head, re.M)
    jobs, ends, t, block, i = [], {}, None, None, 0
    while i < len(lines):
        line, i = lines[i], i + 1
        if block is not None and (m := _FIELD.match(line)):
            block[m[1]] = m[2]
            if "error" in block and m[1] == "jobid":
                ends[m[2]] = (t, i, "failed")
            continue
        block = None
        if line.startswith("Logfile ") and i < len(lines) and lines[i].startswith("===="):
            i += 1  # a failed job's own log, printed between two rules of '='
            while i < len(lines) and not lines[i].startswith("===="):
                i += 1
            i += 1
        elif m := _TS.match(line):
            mon, d, hh, mm, ss, y = m.groups()
            t = calendar.timegm((int(y), _MONTHS.get(mon, 1), int(d), int(hh), int(mm), int(ss)))
        elif t is not None and (m := _START.match(line)):
            jobs.append(block := {"rule": m[1], "t": t})
        elif t is not None and (m := _FINISH.match(line)):
            ends.setdefault(m[1], (t, i, "ok"))
        elif t is not None and line.startswith("Error in rule "):
            block = {"error": True}
    for j in jobs:
        j["end_t"], j["order"], j["status"] = ends.get(j.get("jobid"), (t, i, "incomplete"))
    return {
        "cores": int(cores[1]) if cores else None,
        "workdir": wd[1].strip() if wd else None,
        "jobs": [j for j in jobs if "jobid" in j],
    }


def _bench(path: str | None, bench_dir: Path | None, workdir: str | None) -> dict[str, Any]:
    """``s`` and ``cpu_time`` (summed over repeats), ``max_rss`` of a benchmark file, or {}."""
    if not path:
        return {}
    p = Path(path)  # bench_dir + the path's longest tail that exists; else the run's workdir
    tails = [bench_dir.joinpath(*p.parts[k:]) for k in range(len(p.parts))] if bench_dir else []
    for cand in tails or [Path(workdir or ".", p)]:
        try:
            rows = [
                r.split("\t") for r in cand.read_text(errors="replace").splitlines() if r.strip()
            ]
            break
        except OSError:
            continue
    else:
        return {}
    out: dict[str, Any] = {}
    for col, agg in (("s", sum), ("cpu_time", sum), ("max_rss", max)):
        c = rows[0].index(col) if rows and col in rows[0] else -1
        cells = [r[c] if 0 <= c < len(r) else "-" for r in rows[1:]]
        vals = [v for x in cells if (v := tsv_float(x)) is not None]
        out[col] = agg(vals) if vals else None
    return out


def _logged_cpu(logs: list[str], workdir: str | None) -> tuple[float | None, float | None]:
    """``(job CPU s, embedded servers' CPU s)`` a job's logs report, ``None`` where absent."""
    from agentmem.pg.postmaster import server_cpu_in_log
    from agentmem.procs import job_cpu_in_log

    texts = []
    for log in logs:
        with contextlib.suppress(OSError):
            texts.append(Path(workdir or ".", log).read_text(errors="replace"))
    text = "\n".join(texts)
    return job_cpu_in_log(text), server_cpu_in_log(text)


def _paths(text: str, wd: str | None) -> list[str]:
    out = [os.path.normpath(p.strip()) for p in text.split(", ") if p.strip()]
    pre = (wd or "\0").rstrip("/") + "/"
    return [p[len(pre) :] if p.startswith(pre) else p for p in out]


def build_timeline(log: str | Path, benchmarks: str | Path | None = None) -> dict[str, Any]:
    """Jobs, lanes, critical path and totals of one run, in s since its first job started.

    ``benchmarks`` is the run's ``results/benchmarks`` (``None``: the log's paths, relative to
    its working directory). Returns ``log``, ``cores``, ``jobs`` (:data:`COLUMNS` plus
    ``label``; ``[]`` when no job ran), ``lanes`` (:func:`lane_stats`), ``critical_path``
    (:func:`critical_path`) and ``totals``: ``elapsed_s``, ``jobs``, ``failed``,
    ``incomplete``, ``wall_s``, ``cpu_s`` (over the ``cpu_jobs`` with a figure; ``None`` if
    none), ``cpu_logged_jobs`` (those whose figure is their log's), ``server_cpu_s`` (the
    embedded servers' CPU the jobs' logs report) and ``cpu_util`` (both CPU figures /
    (elapsed x cores)).

    Raises:
        BenchError: when the log cannot be read.
    """
    raw = read_log(log)
    wd, bdir = raw["workdir"], None if benchmarks is None else Path(benchmarks)
    t0 = min((j["t"] for j in raw["jobs"]), default=0)
    jobs = []
    for r in raw["jobs"]:
        res = dict(kv.split("=", 1) for kv in r.get("resources", "").split(", ") if "=" in kv)
        slots = {k: res[k] for k in LANES if res.get(k, "0").strip() not in ("0", "")}
        start, end = float(r["t"] - t0), float(r["end_t"] - t0)
        b = _bench(r.get("benchmark"), bdir, wd) if r["status"] == "ok" else {}
        if b.get("s") is None or b["s"] > end - start + 1.5:  # no file, or not of this run
            b = {"s": end - start}
        wcs = r.get("wildcards", "")
        own, server = (
            _logged_cpu(_paths(r.get("log", ""), wd), wd) if r["status"] == "ok" else (None, None)
        )
        jobs.append(
            {
                "jobid": int(r["jobid"]),
                "rule": r["rule"],
                "wildcards": wcs,
                "label": "/".join(
                    [r["rule"], *(kv.split("=", 1)[1] for kv in wcs.split(", ") if "=" in kv)]
                ),
                "lane": next((LANES[k] for k in LANES if k in slots), "other"),
                "status": r["status"],
                "start_s": max(start, end - b["s"]),
                "end_s": end,
                "wall_s": round(b["s"], 3),
                "cpu_s": own if own is not None else b.get("cpu_time"),
                "cpu_from_log": own is not None,
                "server_cpu_s": server,
                "threads": int(r.get("threads", 1)),
                "resources": " ".join(f"{k}={v}" for k, v in slots.items()),
                "max_rss_mb": b.get("max_rss"),
                "on_critical_path": False,
                "order": r["order"],
                "inputs": _paths(r.get("input", ""), wd),
                "outputs": _paths(r.get("output", ""), wd),
            }
        )
    elapsed = max((j["end_s"] for j in jobs), default=0.0)
    cores, known = raw["cores"], [j["cpu_s"] for j in jobs if j["cpu_s"] is not None]
    cpu = round(sum(known), 3) if known else None
    server = round(sum(j["server_cpu_s"] or 0.0 for j in jobs), 3)
    used = (cpu or 0.0) + server
    return {
        "log": str(log),
        "cores": cores,
        "jobs": jobs,
        "critical_path": critical_path(jobs),
        "lanes": lane_stats(jobs),
        "totals": {
            "elapsed_s": elapsed,
            "jobs": len(jobs),
            "failed": sum(j["status"] == "failed" for j in jobs),
            "incomplete": sum(j["status"] == "incomplete" for j in jobs),
            "wall_s": round(sum(j["wall_s"] for j in jobs), 3),
            "cpu_s": cpu,
            "cpu_jobs": len(known),
            "cpu_logged_jobs": sum(j["cpu_from_log"] for j in jobs),
            "server_cpu_s": server,
            "cpu_util": used / (elapsed * cores) if used and cores and elapsed > 0 else None,
        },
    }


def critical_path(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chain ending at the last ``ok`` job to finish; sets ``on_critical_path`` on it.

    A step's predecessor produced one of its inputs (the path or a parent directory) and
    finished last (log order breaks ties). Returns the steps first to last: ``jobid``,
    ``label``, ``lane``, ``start_s``, ``wall_s``, ``end_s``, ``wait_s`` (start minus the
    predecessor's end, s); ``[]`` for no jobs.
    """
    done = [j for j in jobs if j["status"] == "ok"] or jobs
    if not done:
        return []
    producer = {o: j for j in jobs for o in j["outputs"]}
    chain = [max(done, key=lambda j: (j["end_s"], j["order"]))]
    while True:
        preds = []
        for p in chain[-1]["inputs"]:
            while p not in producer and "/" in p:
                p = p.rsplit("/", 1)[0]
            if p in producer and producer[p] not in chain:
                preds.append(producer[p])
        if not preds:
            break
        chain.append(max(preds, key=lambda j: (j["end_s"], j["order"])))
    steps, prev_end = [], 0.0
    for j in reversed(chain):
        j["on_critical_path"] = True
        keys = ("jobid", "label", "lane", "start_s", "wall_s", "end_s")
        steps.append({**{k: j[k] for k in keys}, "wait_s": max(0.0, j["start_s"] - prev_end)})
        prev_end = j["end_s"]
    return steps


def lane_stats(jobs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per lane with jobs, in :data:`LANE_ORDER`: how busy it was (seconds).

    ``{lane: {jobs, job_s (summed wall), first_s, last_s, busy_s (some job ran), idle_s (none
    did, between first and last), utilisation (busy / that span; 1.0 for a zero span)}}``.
    """
    out = {}
    for lane in LANE_ORDER:
        iv = sorted((j["start_s"], j["end_s"]) for j in jobs if j["lane"] == lane)
        if not iv:
            continue
        busy, (s0, e0), last = 0.0, iv[0], max(e for _, e in iv)
        for s, e in iv[1:]:
            busy, s0 = (busy + e0 - s0, s) if s > e0 else (busy, s0)
            e0 = max(e0, e)
        busy += e0 - s0
        span = last - iv[0][0]
        job_s = sum(j["wall_s"] for j in jobs if j["lane"] == lane)
        out[lane] = {"jobs": len(iv), "job_s": round(job_s, 3), "first_s": iv[0][0]}
        out[lane] |= {"last_s": last, "busy_s": round(busy, 3), "idle_s": round(span - busy, 3)}
        out[lane]["utilisation"] = busy / span if span > 0 else 1.0
    return out


def _table(cols: str, rows: list[list[Any]] | list[tuple], text: int = 1) -> str:
    """A Markdown table; the first ``text`` columns left-aligned; floats as ``1,234.5``."""
    fmt = {float: lambda x: f"{x:,.1f}", type(None): lambda x: "—"}
    rule = "|".join("---" if i < text else "---:" for i in range(cols.count("|") + 1))
    body = ["| " + " | ".join(fmt.get(type(x), str)(x) for x in r) + " |" for r in rows]
    return "\n".join([f"| {cols} |", f"|{rule}|", *body])


def render_markdown(tl: dict[str, Any], top: int = 15) -> str:
    """``timeline.md``: elapsed, lanes, critical path, the ``top`` slowest jobs, rule totals."""
    t, jobs, cp = tl["totals"], tl["jobs"], tl["critical_path"]
    cpu = "—" if t["cpu_s"] is None else f"{t['cpu_s']:,.1f}"
    util = "—" if t["cpu_util"] is None else f"{100 * t['cpu_util']:.0f}%"
    lane = itemgetter("jobs", "job_s", "busy_s", "idle_s", "first_s", "last_s")
    lanes = [(k, *lane(s), f"{100 * s['utilisation']:.0f}%") for k, s in tl["lanes"].items()]
    path = [
        (i, *itemgetter("label", "lane", "start_s", "wait_s", "wall_s")(s))
        for i, s in enumerate(cp, 1)
    ]
    slow = sorted(jobs, key=lambda j: (-j["wall_s"], j["label"]))[:top]
    job = itemgetter(
        "label", "lane", "status", "start_s", "wall_s", "cpu_s", "server_cpu_s", "max_rss_mb"
    )
    rules: dict[str, list] = {}
    for j in jobs:
        r = rules.setdefault(j["rule"], [j["rule"], 0, 0.0, 0.0, 0.0])
        r[1:4] = [r[1] + 1, r[2] + j["wall_s"], r[3] + (j["cpu_s"] or 0.0)]
        r[4] += j["server_cpu_s"] or 0.0
    by_rule = sorted(rules.values(), key=lambda r: (-r[2], r[0]))
    logged, sampled = t["cpu_logged_jobs"], t["cpu_jobs"] - t["cpu_logged_jobs"]
    source = (
        "each in its log as it exited"
        if not sampled
        else (
            f"{logged} in their logs as they exited, {sampled} in their benchmark files, which "
            "sample it and miss a job's last stretch"
        )
    )
    return f"""# Where the time went

`{Path(tl["log"]).name}`: {t["jobs"]} jobs ({t["failed"]} failed, {t["incomplete"]} \
unfinished), **{t["elapsed_s"]:,.1f} s** from the first job's start to the last one's end on \
{tl["cores"] or "?"} cores. Summed job wall time {t["wall_s"]:,.1f} s; CPU {cpu} s over the \
{t["cpu_jobs"]} jobs that report it ({source}), plus {t["server_cpu_s"]:,.1f} s of the \
embedded PostgreSQL servers they ran (their logs; no benchmark file sees a daemonised \
server): {util} of the cores. Times are seconds since the first job started.

## Lanes

A job's lane is the slot it declares: timing `bench_slot`, background `background_slot`, \
crash `crash_slot`, other none. Idle: no job of the lane ran, between its first start and \
last end.

{_table("lane | jobs | job s | busy s | idle s | first s | last s | utilisation", lanes)}

## Critical path

{len(cp)} jobs, ending at the last to finish; each ran after the input-producing job that \
finished last: {sum(s["wall_s"] for s in cp):,.1f} s running, \
{sum(s["wait_s"] for s in cp):,.1f} s waiting (ready, no free slot or core).

{_table("# | job | lane | start s | wait s | wall s", path, text=3)}

## Slowest jobs ({len(slow)} of {len(jobs)})

{_table(SLOW_COLUMNS, [job(j) for j in slow], 3)}

## By rule

{_table("rule | jobs | wall s | CPU s | server CPU s", by_rule)}
"""


def plot_timeline(
    tl: dict[str, Any], svg: str | Path, groups: dict[str, str] | None = None
) -> None:
    """Draw ``svg`` (+ ``.png``): a row per lane, sub-rows where its jobs overlap.

    Bars span each job, coloured by ``groups[rule]`` (:func:`rule_groups`; else the rule's
    first word); the critical path outlined, failed or unfinished jobs hatched red, each
    lane's span shaded (idle time: shade without bars); bars over 4% of the run labelled.
    """
    from matplotlib.patches import Patch

    from agentmem.report.colors import PALETTE
    from agentmem.report.figures._common import plt, save

    jobs, t = tl["jobs"], tl["totals"]
    elapsed = max(t["elapsed_s"], 1.0)
    group = {j["rule"]: (groups or {}).get(j["rule"], j["rule"].split("_")[0]) for j in jobs}
    color = {g: PALETTE[i % len(PALETTE)] for i, g in enumerate(sorted(set(group.values())))}
    fig, ax = plt.subplots(figsize=(11, 4))
    y, ticks, bars = 0.0, [], []
    for lane, s in tl["lanes"].items():
        ends: list[float] = []
        for j in sorted((j for j in jobs if j["lane"] == lane), key=lambda j: j["start_s"]):
            k = next((k for k, e in enumerate(ends) if e <= j["start_s"]), len(ends))
            ends[k : k + 1] = [j["end_s"]]
            bars.append((y + k, j))
        mid, span = y + (len(ends) - 1) / 2, s["last_s"] - s["first_s"]
        ax.barh(mid, span, left=s["first_s"], height=len(ends), color="#ececec", zorder=0)
        ticks.append((mid, f"{lane}\nbusy {s['busy_s']:,.0f} s\nidle {s['idle_s']:,.0f} s"))
        y += len(ends) + 0.6
    fig.set_size_inches(11, 1.2 + 0.24 * y)
    js, rows = [j for _, j in bars], [r for r, _ in bars]
    width = [max(j["end_s"] - j["start_s"], elapsed / 2000) for j in js]
    crit = [j["on_critical_path"] for j in js]
    edge = {"edgecolor": ["black" if c else "white" for c in crit]}
    edge["linewidth"] = [1.2 if c else 0.3 for c in crit]
    colors = [color[group[j["rule"]]] for j in js]
    kw = {"height": 0.8, "left": [j["start_s"] for j in js], "zorder": 2}
    patches = ax.barh(rows, width, color=colors, **edge, **kw)
    bad = {"fill": False, "hatch": "xxx", "edgecolor": "#d62728", "linewidth": 0, "zorder": 3}
    for p, j, r, w in zip(patches, js, rows, width, strict=True):
        if j["status"] != "ok":
            ax.barh(r, w, left=j["start_s"], height=0.8, **bad)
        if w >= 0.04 * elapsed:
            n = max(3, int(w / elapsed * 150))
            txt = j["label"] if len(j["label"]) <= n else j["label"].partition("/")[2] or j["label"]
            txt = txt if len(txt) <= n else txt[: n - 1] + "…"
            label = ax.text(j["start_s"] + w / 2, r, txt, ha="center", va="center", fontsize=6)
            label.set_clip_path(p)
    ax.set_yticks([a for a, _ in ticks], [b for _, b in ticks], fontsize=7)
    ax.set_ylim(y - 0.5, -0.7)
    ax.set_xlim(0, elapsed * 1.01)
    ax.set_xlabel("seconds since the first job started")
    ax.set_title(f"Where the time went: {t['jobs']} jobs in {t['elapsed_s']:,.0f} s", fontsize=9)
    handles = [Patch(color=c, label=g) for g, c in color.items()]
    handles.append(Patch(facecolor="white", edgecolor="black", label="critical path"))
    handles.append(Patch(label="failed / unfinished", **{**bad, "linewidth": 0.5}))
    ax.legend(handles=handles, fontsize=6, frameon=False, loc="upper left", bbox_to_anchor=(1, 1))
    save(fig, svg)


def write_timeline(
    tl: dict[str, Any], out_dir: str | Path, groups: dict[str, str] | None = None
) -> dict[str, Path]:
    """Write ``timeline.csv`` (:data:`COLUMNS`), ``.md`` and ``.svg`` / ``.png`` to ``out_dir``.

    Returns ``{"csv", "md", "svg"}`` paths. Raises :class:`BenchError` when no job ran.
    """
    if not tl["jobs"]:
        raise BenchError(f"{tl['log']}: the log shows no job, so there is no timeline to draw")
    out, buf = Path(out_dir), io.StringIO()
    w = csv.DictWriter(buf, COLUMNS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for j in sorted(tl["jobs"], key=lambda j: (j["start_s"], j["jobid"])):
        w.writerow({**j, "start_s": round(j["start_s"], 3), "end_s": round(j["end_s"], 3)})
    paths = {k: out / f"timeline.{k}" for k in ("csv", "md", "svg")}
    write_text(paths["csv"], buf.getvalue())
    write_text(paths["md"], render_markdown(tl))
    plot_timeline(tl, paths["svg"], groups)
    return paths


def run_timeline(
    log: Any, out_dir: str | Path = "results/bench", groups: dict[str, str] | None = None
) -> str | None:
    """The workflow's ``onsuccess`` hook: the timeline of the run that just ended.

    ``log`` is Snakemake's (a path, or a list: the first is read). Returns one line saying
    where the files are, or ``None`` when no job ran (nothing written).
    """
    log = next(iter(log), None) if isinstance(log, list | tuple) else log
    tl = build_timeline(log) if log else {"jobs": []}
    if not tl["jobs"]:
        return None
    paths, t, cp = write_timeline(tl, out_dir, groups), tl["totals"], tl["critical_path"]
    return (
        f"Timeline: {paths['md'].resolve()} (and .csv, .svg): {t['jobs']} jobs in "
        f"{t['elapsed_s']:,.0f} s; its critical path ({len(cp)} jobs) waited "
        f"{sum(s['wait_s'] for s in cp):,.0f} s for a slot"
    )
