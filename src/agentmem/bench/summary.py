"""The bench summary: result records flattened into rows and rendered as Markdown."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentmem.bench.targets import (
    EMBEDDING_MIN_RATIO,
    HARNESS_MAX_RATIO,
    INGEST_MIN_RATIO,
    PIPELINE_MAX_S,
    REMEMBER_MAX_P50_MS,
)


def summary_rows(results: dict[str, dict | None]) -> list[dict[str, Any]]:
    """Flatten the five result records into summary rows.

    Args:
        results: ``{"harness": ..., "ingest": ..., "remember": ..., "embedding": ...,
            "pipeline": ...}``; a missing or ``None`` entry contributes no rows.

    Returns:
        Rows with ``measure``, ``value`` (text), ``target`` (text), ``met`` (``True``,
        ``False`` or ``None`` for "not measured") and ``note``.
    """
    rows: list[dict[str, Any]] = []
    harness = results.get("harness") or {}
    for name, r in (harness.get("arms") or {}).items():
        if "error" in r or "not_run" in r:
            note = r.get("error") or r["not_run"]
            rows.append(
                _row(f"harness overhead: {name}", "—", f"≤ {HARNESS_MAX_RATIO}×", None, note)
            )
            continue
        note = (
            f"median {r['arm_median_ms']:.3f} ms vs bare {r['bare_median_ms']:.3f} ms; "
            f"+{r['overhead_median_us']:.1f} µs/query; {r['queries']} queries × {r['rounds']}"
        )
        if r["met"] is False and r.get("beyond_bare"):
            note += f"; beyond the bare call: {r['beyond_bare']}"
        rows.append(
            _row(
                f"harness overhead: {name}",
                _x(r["ratio"]),
                f"≤ {HARNESS_MAX_RATIO}×",
                r["met"],
                note,
            )
        )
    ingest = results.get("ingest") or {}
    for name, r in (ingest.get("arms") or {}).items():
        if "error" in r or "not_run" in r:
            note = r.get("error") or r["not_run"]
            rows.append(_row(f"ingest: {name}", "—", f"≥ {INGEST_MIN_RATIO}×", None, note))
            continue
        if r.get("ratio") is None:
            note = r.get("raw_error", "no raw path")
        else:
            note = (
                f"{r['arm_per_s']:,.0f} vs raw {r['raw_per_s']:,.0f} memories/s "
                f"({r['basis']}); {r['memories']} memories × {r['rounds']}"
            )
            if r["met"] is False and r.get("beyond_raw"):
                note += f"; beyond the raw path: {r['beyond_raw']}"
        rows.append(
            _row(f"ingest: {name}", _x(r.get("ratio")), f"≥ {INGEST_MIN_RATIO}×", r["met"], note)
        )
    rows += _remember_rows(results.get("remember") or {})
    emb = results.get("embedding")
    if emb:
        if "error" in emb:
            rows.append(
                _row(
                    "embedding: cache path vs encode",
                    "—",
                    f"≥ {EMBEDDING_MIN_RATIO}×",
                    None,
                    emb["error"],
                )
            )
        else:
            note = (
                "median of the paired per-chunk ratios; over all chunks "
                f"{emb['cache_per_s']:,.0f} vs bare {emb['bare_per_s']:,.0f} texts/s "
                f"({_x(emb.get('ratio_total'))}); {emb['texts']} texts in chunks of "
                f"{emb.get('chunk', '?')}, alternating, {emb['rounds']} pass(es)"
            )
            rows.append(
                _row(
                    "embedding: cache path vs encode",
                    _x(emb["ratio"]),
                    f"≥ {EMBEDDING_MIN_RATIO}×",
                    emb["met"],
                    note,
                )
            )
            rows += _backend_rows(emb.get("backends"))
    pipe = results.get("pipeline")
    if pipe:
        phases = pipe.get("phases", {})
        labels = {
            "full": "pipeline: full run",
            "rerun": "pipeline: rerun (nothing changed)",
            "touch": "pipeline: figure asked for after touching its code's mtime",
            "figure": "pipeline: one figure rebuilt (--force)",
        }
        for phase, label in labels.items():
            p = phases.get(phase)
            limit = PIPELINE_MAX_S.get(phase)
            target = "—" if limit is None else f"≤ {limit:g} s"
            if p is None:
                rows.append(_row(label, "—", target, None, pipe.get("error", "not run")))
                continue
            note = f"exit {p['returncode']}; config {Path(pipe['config']).name}"
            if phase in ("rerun", "touch"):
                note += "; nothing to do" if p["nothing_to_do"] else "; jobs ran"
            if phase == "touch":
                note += " (Snakemake 9 also compares input checksums)"
            rows.append(_row(label, f"{p['wall_s']:.1f} s", target, p.get("met"), note))
        largest = pipe.get("largest_job")
        if largest and largest.get("max_rss_mb") is not None:
            rows.append(
                _row(
                    "pipeline: peak RSS of the largest job",
                    f"{largest['max_rss_mb']:,.0f} MiB",
                    "—",
                    None,
                    f"{largest['job']} (Snakemake benchmark max_rss, full run)",
                )
            )
        elif pipe.get("peak_job_rss_mb") is not None and phases:
            big = max(phases.values(), key=lambda p: p["peak_job_rss_mb"])
            rows.append(
                _row(
                    "pipeline: peak RSS of the largest job",
                    f"{pipe['peak_job_rss_mb']:,.0f} MiB",
                    "—",
                    None,
                    big["peak_job_cmd"][:120],
                )
            )
    return rows


def _remember_rows(rec: dict[str, Any]) -> list[dict[str, Any]]:
    """Summary rows of the remember record: p50 per arm against its family's target."""
    rows = []
    for name, r in (rec.get("arms") or {}).items():
        label = f"remember one memory: {name}"
        if "error" in r:
            rows.append(_row(label, "—", "—", None, r["error"]))
            continue
        limit = REMEMBER_MAX_P50_MS.get(r["family"])
        target = "—" if limit is None else f"p50 ≤ {limit:g} ms"
        note = (
            f"p95 {r['p95_ms']:.3f} ms, mean {r['mean_ms']:.3f} ms; {r['remembers']} calls "
            f"on a store of {r['store_memories']} memories (family {r['family']}"
            f"{'' if limit is not None else ': no target'})"
        )
        if r["stored"] < r["remembers"]:
            note += f"; only {r['stored']} of {r['remembers']} memories stored"
        rows.append(_row(label, f"{r['p50_ms']:.3f} ms", target, r["met"], note))
    return rows


def _num(x: float | None, fmt: str = ",.1f") -> str:
    """``x`` formatted, or ``—`` when missing."""
    return "—" if x is None else format(x, fmt)


def pipeline_job_tables(pipe: dict[str, Any] | None, top: int = 10) -> list[str]:
    """Markdown sections profiling the jobs of the pipeline's full run.

    Args:
        pipe: the pipeline record (:func:`~agentmem.bench.pipeline.pipeline_benchmark`); ``None``,
            or one without ``slowest_jobs`` / ``by_rule`` / ``timeline``, gives no lines.
        top: rows per table.

    Returns:
        Lines of two tables: ``## Slowest jobs`` (job, wall s, peak RSS MiB, CPU s) and
        ``## Wall time by rule`` (rule, jobs, sum s, max s), each introduced by a
        sentence with the job count and summed wall time; then, when the record has a
        ``timeline``, ``## Where the time went`` (:func:`timeline_section`).
    """
    if not pipe:
        return []
    lines: list[str] = []
    slowest = pipe.get("slowest_jobs") or []
    total = pipe.get("jobs_total", len(slowest))
    serial = pipe.get("jobs_wall_s_sum")
    intro = (
        f"{total} jobs in the full run; summed job wall time {_num(serial)} s "
        "(Snakemake `benchmark:` files; peak RSS in MiB over the job's processes)."
    )
    if slowest:
        lines += ["## Slowest jobs", "", intro, ""]
        lines += ["| job | wall s | peak RSS MB | CPU s |", "|---|---:|---:|---:|"]
        for j in slowest[:top]:
            lines.append(
                f"| {j['job']} | {_num(j['wall_s'])} | {_num(j['max_rss_mb'], ',.0f')} "
                f"| {_num(j['cpu_s'])} |"
            )
        lines.append("")
    by_rule = pipe.get("by_rule") or []
    if by_rule:
        lines += ["## Wall time by rule", ""]
        if not slowest:
            lines += [intro, ""]
        lines += ["| rule | jobs | sum s | max s |", "|---|---:|---:|---:|"]
        for r in by_rule[:top]:
            lines.append(
                f"| {r['rule']} | {r['jobs']} | {_num(r['wall_s_sum'])} | {_num(r['wall_s_max'])} |"
            )
        lines.append("")
    return lines + timeline_section(pipe)


def timeline_section(pipe: dict[str, Any]) -> list[str]:
    """Markdown lines pointing to the full run's timeline (``timeline.{md,svg,csv}``).

    Args:
        pipe: the pipeline record; its ``timeline`` (see
            :func:`~agentmem.bench.pipeline.pipeline_benchmark`) gives elapsed seconds, CPU
            utilisation, per-lane busy / idle seconds and the critical path; a
            ``timeline_error`` is shown instead.

    Returns:
        ``## Where the time went``, a sentence naming the files, a lane table (lane, busy s,
        idle s, utilisation) and the critical path as one line; ``[]`` without either key.
    """
    tl, err = pipe.get("timeline"), pipe.get("timeline_error")
    if not tl:
        return ["## Where the time went", "", f"No timeline: {err}", ""] if err else []
    util = tl.get("cpu_util")
    names = {k: Path(tl[k]).name for k in ("md", "svg", "csv")}
    lines = [
        "## Where the time went",
        "",
        f"Timeline of the full run, beside this file: `{names['md']}` (lanes, critical path, "
        f"slowest jobs, rules), `{names['svg']}` (one bar per job over wall-clock time), "
        f"`{names['csv']}` (one row per job). Elapsed {_num(tl['elapsed_s'])} s from the first "
        f"job's start; CPU {_num(None if util is None else 100 * util, '.0f')}% of the cores.",
        "",
        "| lane | busy s | idle s | utilisation |",
        "|---|---:|---:|---:|",
    ]
    for lane, s in tl.get("lanes", {}).items():
        util = f"{100 * s['utilisation']:.0f}%"
        lines.append(f"| {lane} | {_num(s['busy_s'])} | {_num(s['idle_s'])} | {util} |")
    cp = tl.get("critical_path") or {}
    jobs = cp.get("jobs") or []
    lines += [
        "",
        f"Critical path ({len(jobs)} jobs: {_num(cp.get('wall_s'))} s running, "
        f"{_num(cp.get('wait_s'))} s waiting for a slot or core): {' → '.join(jobs)}.",
        "",
    ]
    return lines


def _backend_rows(b: dict | None) -> list[dict[str, Any]]:
    """The torch-vs-ONNX row of the embedding record (none for a record without it)."""
    if not b:
        return []
    rate = {k: "—" if b.get(k) is None else f"{b[k]:,.0f}" for k in ("onnx_per_s", "torch_per_s")}
    note = (
        f"torch / ONNX CPU seconds (process time, all threads); wall "
        f"{rate['onnx_per_s']} vs {rate['torch_per_s']} texts/s "
        f"({_x(b.get('onnx_speedup'))}); min cosine {b['min_cosine']}; {b['texts']} texts"
    )
    return [_row("embedding: ONNX vs torch CPU", _x(b.get("cpu_ratio")), "—", None, note)]


def _row(measure: str, value: str, target: str, met: bool | None, note: str) -> dict[str, Any]:
    return {"measure": measure, "value": value, "target": target, "met": met, "note": note}


def _x(ratio: float | None) -> str:
    return "—" if ratio is None else f"{ratio:.3f}×"


def render_summary(
    rows: Sequence[dict[str, Any]], header: str = "", sections: Sequence[str] = ()
) -> str:
    """Render summary rows as a Markdown table ``| measure | value | target | met? | note |``.

    ``met`` renders as ``yes``, ``**no**`` or ``n/a`` (not measured or no target).

    Args:
        rows: :func:`summary_rows`.
        header: a paragraph above the table.
        sections: further Markdown lines placed below the table and its count line
            (e.g. :func:`pipeline_job_tables`).
    """
    lines = ["# agentmem benchmark summary", ""]
    if header:
        lines += [header, ""]
    lines += ["| measure | value | target | met? | note |", "|---|---|---|---|---|"]
    for r in rows:
        met = {True: "yes", False: "**no**", None: "n/a"}[r["met"]]
        note = str(r["note"]).replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {r['measure']} | {r['value']} | {r['target']} | {met} | {note} |")
    missed = sum(1 for r in rows if r["met"] is False)
    lines += ["", f"{len(rows)} measures; {missed} target(s) missed."]
    if sections:
        lines += ["", *sections]
    return "\n".join(lines).rstrip("\n") + "\n"
