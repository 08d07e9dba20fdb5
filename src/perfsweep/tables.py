"""From run records to tidy tables: one row per run, per rank, per region; variability; aggregate.

Usage::

    from perfsweep import tables
    runs, ranks, regions = tables.collect(record_paths)
    var = tables.variability(runs, params=["n", "m"], cv_threshold=0.1)
    agg = tables.aggregate(runs, ranks, regions, params=["n", "m"], variability=var, policy="drop")

Conventions (as Extra-P does when it collapses the system dimension): a per-rank quantity of a run
is the maximum over its ranks. The coefficient of variation is the sample standard deviation over
the mean of the good repetitions (seed 001, Table 1).
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np
import pandas as pd

from perfsweep.apps.metric_kinds import kind_of
from perfsweep.apps.registry import PROCESS_COUNT, RANK_PHASES
from perfsweep.errors import NoSuccessfulRun
from perfsweep.layout import split_variant
from perfsweep.stats import DISTURBED_CONFIGURATION, cv_of
from perfsweep.sweep.record import check_record

RUN_COLUMNS = ["run_id", "study", "config_id", "repetition", "validation", "status", "error", "time", "wall_time",
               "returncode", "attempt", "host", "cores", "mpi_library", "slurm_job_id", "slurm_nodelist",
               "slurm_restarts", "cut_short", "cut_short_by", "started_at", "launch_command"]
# what the host did during a run (record field host_load, perfsweep.sweep.host: its cores and processes as
# watched_cores and load_processes) and its place in its round's random order (record field order,
# perfsweep.sweep.order); empty for records that do not say
HOST_COLUMNS = ["others_busy_share", "cpu_wall_ratio", "involuntary_switches", "watched_cores", "load_processes"]
HOST_FIELDS = {"watched_cores": "cores", "load_processes": "processes"}  # column -> host_load field, where they differ
ORDER_COLUMNS = ["order_seed", "order_round", "order_position"]


def collect(paths: Iterable[str], validation: Iterable[str] = ()) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Read run records into (runs, ranks, regions) tidy frames; parameters become columns. A run of
    a configuration in ``validation`` (config ids of the study's validation points) has ``validation``
    True; ``cores``: the CPUs the run had (its record's, None in records from before they said)."""
    validation = set(validation)
    runs: list[dict[str, Any]] = []
    ranks: list[dict[str, Any]] = []
    regions: list[dict[str, Any]] = []
    for path in paths:
        rec = check_record(path)  # a damaged record: one line naming the file (DamagedRecord)
        key = {k: rec[k] for k in ("run_id", "study", "config_id", "repetition")}
        params = rec["parameters"]
        slurm = rec.get("slurm") or {}
        row = dict(key)
        row.update(params)
        row.update(
            validation=rec["config_id"] in validation, status=rec["status"], error=rec.get("error"), time=rec.get("time"),
            wall_time=rec.get("wall_time"), returncode=rec.get("returncode"), attempt=rec.get("attempt"),
            host=rec.get("host"), cores=rec.get("cores"), mpi_library=(rec.get("mpi") or {}).get("version"),
            slurm_job_id=slurm.get("job_id"), slurm_nodelist=slurm.get("nodelist"),
            slurm_restarts=(rec.get("scheduler") or {}).get("restarts"),
            # earlier attempts the scheduler cut short (node lost, job requeued: bundle packs), and by what
            cut_short=len(rec.get("cut_short") or []),
            cut_short_by=",".join(str(c.get("state")) for c in rec.get("cut_short") or []) or None,
            started_at=rec.get("started_at"), launch_command=" ".join(rec.get("launch", {}).get("command", [])),
        )
        row.update(_host_and_order(rec))
        for name, value in (rec.get("metrics") or {}).items():
            row[f"metric_{name}"] = value
        runs.append(row)
        if rec["status"] != "ok":
            continue
        for r in rec.get("ranks") or []:
            rrow = dict(key)
            rrow.update(params)
            rrow["rank"] = r["rank"]
            rrow.update({k: r.get(k, np.nan) for k in RANK_PHASES})
            for op, t in (r.get("comm_ops") or {}).items():
                rrow[f"comm_{op}"] = t
            threads = r.get("threads")
            if threads:
                rrow["threads"] = len(threads)
                rrow["thread_useful_sum"] = float(sum(t["useful"] for t in threads))
                rrow["thread_useful_max"] = float(max(t["useful"] for t in threads))
            ranks.append(rrow)
            for region, v in (r.get("regions") or {}).items():
                g = dict(key)
                g.update(params)
                g.update(rank=r["rank"], region=region, time=v["time"], visits=v.get("visits"))
                # a Score-P profile's other metrics (and its visits) are modelled too: metric_<name>
                g.update({f"metric_{k}": x for k, x in v.items()
                          if k != "time" and (k != "visits" or rec.get("profile")) and isinstance(x, (int, float))})
                regions.append(g)
    runs_df = pd.DataFrame(runs)
    if not runs_df.empty:
        runs_df = runs_df.sort_values(["study", "config_id", "repetition"], kind="stable").reset_index(drop=True)
    return runs_df, pd.DataFrame(ranks), pd.DataFrame(regions)


def _host_and_order(rec: dict[str, Any]) -> dict[str, Any]:
    """A run's host load (HOST_COLUMNS) and place in the run order (ORDER_COLUMNS), None where unknown."""
    load = rec.get("host_load") if isinstance(rec.get("host_load"), dict) else {}
    order = rec.get("order") if isinstance(rec.get("order"), dict) else {}
    row = {c: load.get(HOST_FIELDS.get(c, c)) for c in HOST_COLUMNS}
    row.update({f"order_{k}": order.get(k) for k in ("seed", "round", "position")})
    return row


def disturbed_runs(runs: pd.DataFrame, disturbed: float | None) -> pd.Series:
    """Which runs the host disturbed (the one judgement of every table and of measuring until decided):
    those where other processes took more than ``disturbed`` (config key variability.disturbed) of the
    cores the run needed. Of its watched cores c (``watched_cores``: the runner's affinity) a run of p
    processes (``load_processes``) needs min(p, c) and leaves max(c - p, 0) free; the others kept
    ``others_busy_share`` x c core-equivalents busy. It is disturbed where

        others_busy_share x c - max(c - p, 0) > disturbed x min(p, c)

    strictly: on 2 cores with others' share 0.25 (0.5 core-equivalents: one core busy half the time) a
    run of p = 1 has a free core for them and is not disturbed; one of p = 2 is (0.5 > 0.1 x 2 under
    the default 0.1; under 0.25 it is at the threshold, 0.5 > 0.5 false). For p >= c this is
    ``others_busy_share`` > ``disturbed``; oversubscribed runs (p > c) count any others' load beyond it.
    Runs whose record has no ``others_busy_share`` (no host_load, or None) are not disturbed (unknown);
    those without their cores or processes are judged as if they had none free (the share alone)."""
    if disturbed is None or not len(runs):
        return pd.Series(False, index=runs.index, dtype=bool)
    col = lambda c: pd.to_numeric(runs[c], errors="coerce") if c in runs else pd.Series(np.nan, index=runs.index)  # noqa: E731
    share, cores, p = col("others_busy_share"), col("watched_cores"), col("load_processes")
    known = cores.notna() & p.notna() & (cores > 0)
    c, p = cores.where(known, 1.0), p.where(known, 1.0)  # unknown: the share alone (c = p = 1)
    others, free, needed = share * c, (c - p).clip(lower=0), np.minimum(p, c)
    return (others - free > disturbed * needed).fillna(False).astype(bool)


def disturbance(group: pd.DataFrame, disturbed: float | None) -> dict[str, Any]:
    """A configuration's runs' host load: the median share of its cores that other processes kept busy,
    the median CPU/wall ratio of its launches, how many runs the host disturbed (``n_disturbed``, of all
    its runs: :func:`disturbed_runs`, under ``disturbed``, config key variability.disturbed) and
    ``disturbed_ok_share``: the share of its successful runs disturbed (NaN where none succeeded);
    the configuration is disturbed (:func:`busy_configurations`) where that is above
    DISTURBED_CONFIGURATION: it was measured on a busy host."""
    share = pd.to_numeric(group.get("others_busy_share", pd.Series(dtype=float)), errors="coerce").dropna()
    ratio = pd.to_numeric(group.get("cpu_wall_ratio", pd.Series(dtype=float)), errors="coerce").dropna()
    hit = disturbed_runs(group, disturbed)
    ok = group["status"] == "ok" if "status" in group else pd.Series(True, index=group.index)
    return {"others_busy_share": share.median() if len(share) else np.nan,
            "cpu_wall_ratio": ratio.median() if len(ratio) else np.nan, "n_disturbed": int(hit.sum()),
            "disturbed_ok_share": float(hit[ok].mean()) if ok.any() else np.nan}


def undisturbed_where_any(runs: pd.DataFrame, disturbed: float | None) -> pd.Series:
    """The runs a configuration's statistics come from (the aggregate's median, values and the rest):
    its undisturbed runs (:func:`disturbed_runs`) where it has a successful one, else all of its runs.
    A disturbed run's time is the busy host's, not the app's, and a median of two runs of which one was
    disturbed lay halfway to it. The configuration's host load (:func:`disturbance`) still counts every
    run: whether most of them were disturbed decides whether the host was busy
    (:func:`busy_configurations`). A paired measurement's variants (studies ``<study>@<variant>``) keep
    every run: their runs pair by round (perfsweep.compare.paired), and what disturbed a round's run of
    one variant fell on the others' beside it."""
    hit = disturbed_runs(runs, disturbed)
    paired = "study" in runs and any(split_variant(str(s))[1] is not None for s in runs["study"].unique())
    if not hit.any() or paired:
        return pd.Series(True, index=runs.index, dtype=bool)
    ok = runs["status"] == "ok" if "status" in runs else pd.Series(True, index=runs.index)
    clean = set(runs.loc[ok & ~hit, "config_id"])
    return ~(hit & runs["config_id"].isin(clean))


def busy_configurations(agg: pd.DataFrame) -> tuple[list[str], int]:
    """The fitted configurations (not validation, not oversubscribed) of an aggregate whose runs were
    mostly disturbed (``disturbed_ok_share`` above DISTURBED_CONFIGURATION: :func:`disturbance`), most
    disturbed first (then by their others' busy share, then in the aggregate's order: the grid's), and how
    many configurations are fitted."""
    rows = agg[(agg["region"] == "all") & (agg["metric"] == "time")] if "region" in agg else agg
    for mark in ("validation", "oversubscribed"):
        if mark in rows:
            rows = rows[~rows[mark].fillna(False).astype(bool)]
    rows = rows.drop_duplicates("config_id")
    if "disturbed_ok_share" not in rows:  # an aggregate written before it said
        return [], len(rows)
    share = pd.to_numeric(rows["disturbed_ok_share"], errors="coerce")
    busy = rows.assign(_d=share, _o=pd.to_numeric(rows.get("others_busy_share"), errors="coerce"))
    busy = busy[busy["_d"] > DISTURBED_CONFIGURATION].sort_values(["_d", "_o"], ascending=False, kind="stable")
    return [str(c) for c in busy["config_id"]], len(rows)


def variability(runs: pd.DataFrame, params: list[str], cv_threshold: float,
                disturbed: float | None = None) -> pd.DataFrame:
    """CV of the run time per configuration over its good repetitions (seed 001, Table 1), and its
    runs' host load (:func:`disturbance`)."""
    rows = []
    for cid, group in runs.groupby("config_id", sort=False):
        ok = group[group["status"] == "ok"]["time"].astype(float)
        mean = ok.mean() if len(ok) else np.nan
        std = ok.std(ddof=1) if len(ok) > 1 else np.nan
        cv = cv_of(ok)
        row = {"config_id": cid}
        row.update({p: group[p].iloc[0] for p in params})
        row.update(n_runs=len(group), n_ok=len(ok), n_failed=int((group["status"] != "ok").sum()),
                   n_cut_short=int(group["cut_short"].fillna(0).sum()) if "cut_short" in group else 0,
                   mean=mean, std=std, cv=cv, flagged=bool(cv > cv_threshold) if np.isfinite(cv) else False,
                   cv_threshold=cv_threshold)
        row.update(disturbance(group, disturbed))
        rows.append(row)
    out = pd.DataFrame(rows)  # in the grid's order (the records come sorted as text: n=100, n=1600, n=200)
    return out.sort_values(params, kind="stable").reset_index(drop=True) if len(out) else out


def run_order(runs: pd.DataFrame, params: list[str], disturbed: float | None = None) -> pd.DataFrame:
    """The runs in the order they ran: by round and position in the round's random order (record field
    order; records without it after, by start time), with what the host did during each (HOST_COLUMNS)
    and ``disturbed``: whether the host disturbed it (:func:`disturbed_runs`, config key variability.disturbed)."""
    cols = [*ORDER_COLUMNS, "config_id", "repetition", *params, "started_at", "status", "time", *HOST_COLUMNS]
    out = runs.reindex(columns=cols).copy()
    out["disturbed"] = disturbed_runs(out, disturbed)
    out = out.sort_values(["order_round", "order_position", "started_at"], kind="stable", na_position="last")
    return out.reset_index(drop=True)


def variability_summary(var: pd.DataFrame) -> pd.DataFrame:
    """One line per study: how noisy the measurements were overall."""
    cv = var["cv"].dropna()
    return pd.DataFrame([{
        "configurations": len(var), "runs": int(var["n_runs"].sum()), "failed": int(var["n_failed"].sum()),
        "median_cv": cv.median() if len(cv) else np.nan, "max_cv": cv.max() if len(cv) else np.nan,
        "flagged": int(var["flagged"].sum()), "cv_threshold": var["cv_threshold"].iloc[0] if len(var) else np.nan,
        "disturbed_runs": int(var["n_disturbed"].sum()) if "n_disturbed" in var else 0,
        "median_others_busy_share": var["others_busy_share"].median() if "others_busy_share" in var else np.nan,
    }])


def _stats(values: pd.Series) -> dict[str, Any]:
    v = values.astype(float)
    return {"median": v.median(), "min": v.min(), "mean": v.mean(),
            "std": v.std(ddof=1) if len(v) > 1 else np.nan, "n_ok": len(v),
            "values": " ".join(repr(float(x)) for x in v)}  # every repetition: the models fit them all


def oversubscribed(runs: pd.DataFrame, processes: str = PROCESS_COUNT) -> dict[str, bool]:
    """config id -> whether its ranks outnumbered the cores its runs had (a run's record says its
    ``cores``): the process count above them in any run; False where the app has no process count or
    the records do not say their cores."""
    if processes not in runs or "cores" not in runs:
        return {cid: False for cid in runs["config_id"].unique()}
    p, cores = pd.to_numeric(runs[processes], errors="coerce"), pd.to_numeric(runs["cores"], errors="coerce")
    over = (p > cores).fillna(False)  # NaN compares False: unknown cores are not oversubscribed
    return {str(k): bool(v) for k, v in over.groupby(runs["config_id"]).any().items()}


def no_successful_run(runs: pd.DataFrame) -> str:
    """What a runs table in which no run succeeded says: how many failed, and the first one's error."""
    errors = runs["error"].dropna().astype(str) if "error" in runs else pd.Series(dtype=str)
    example = f"; e.g. {runs['run_id'].iloc[0]}: {errors.iloc[0]}" if len(errors) else ""
    return f"no successful run ({len(runs)} of {len(runs)} failed{example})"


def aggregate(runs: pd.DataFrame, ranks: pd.DataFrame, regions: pd.DataFrame, params: list[str],
              variability: pd.DataFrame, policy: str, records: str | None = None,
              processes: str = PROCESS_COUNT, disturbed: float | None = None,
              kinds: dict | None = None) -> pd.DataFrame:
    """Median (and min, mean, std, n_ok, the repetitions' values) per configuration, region and metric,
    of its undisturbed runs where it has any (:func:`undisturbed_where_any`: ``n_ok`` counts them),
    in long form, each row with its metric's ``unit`` and ``better`` (lower or higher): declared in
    ``kinds`` (perfsweep.apps.metric_kinds.declared of the study's app), else guessed from the name.

    Region ``all`` carries the whole run: metric ``time`` (the run's measured time), the per-rank
    phases (maximum over ranks) and the metrics an external app's ``patterns`` read from its output. Other regions carry metric ``time`` (maximum over ranks) and, from a Score-P
    profile, every other metric (visits, bytes, hardware counters: the sum over ranks; ``*time*``
    metrics: the maximum, ``min_*``: the minimum). With policy ``drop`` the configurations flagged in ``variability`` are left out; with ``keep-flagged`` they stay
    with ``flagged`` set. ``records``: the study's run records directory, named when no run succeeded.
    Every row says whether it is a ``validation`` point (measured, never fitted) and whether it was
    ``oversubscribed`` (its process count, parameter ``processes``, above the cores its runs had), and
    its runs' host load (:func:`disturbance`: ``others_busy_share``, ``cpu_wall_ratio``, ``n_disturbed``
    and ``disturbed_ok_share`` under ``disturbed``).
    """
    if runs.empty or not (runs["status"] == "ok").any():
        study = runs["study"].iloc[0] if "study" in runs and len(runs) else "?"
        raise NoSuccessfulRun(f"study {study}: {no_successful_run(runs)}; nothing to aggregate, see {records + '/' if records else 'its run records'} and the "
                              "failure records")
    flagged = dict(zip(variability["config_id"], variability["flagged"]))
    n_runs = dict(zip(variability["config_id"], variability["n_runs"]))
    keep = [c for c in flagged if not (policy == "drop" and flagged[c])]
    used = undisturbed_where_any(runs, disturbed)
    ok = runs[(runs["status"] == "ok") & runs["config_id"].isin(keep) & used]
    if not used.all() and "run_id" in runs:  # the ranks' phases and the regions of the runs left out go with them
        left_out = set(runs.loc[~used, "run_id"])
        ranks = ranks[~ranks["run_id"].isin(left_out)] if not ranks.empty else ranks
        regions = regions[~regions["run_id"].isin(left_out)] if not regions.empty else regions
    series: list[tuple[str, str, pd.DataFrame, str]] = [("all", "time", ok, "time")]
    if not ranks.empty:
        per_run = ranks[ranks["config_id"].isin(keep)].groupby(["config_id", "run_id"])[
            [c for c in RANK_PHASES if c in ranks]].max().reset_index()
        for phase in RANK_PHASES:
            if phase in per_run and phase != "total" and per_run[phase].notna().any():  # profiles: regions only
                series.append(("all", phase, per_run, phase))
    for col in sorted(c for c in ok.columns if c.startswith("metric_")):  # the app's own patterns
        if ok[col].notna().any():
            series.append(("all", col.removeprefix("metric_"), ok.dropna(subset=[col]), col))
    if not regions.empty:
        per_region = regions[regions["config_id"].isin(keep)].groupby(
            ["config_id", "run_id", "region"])["time"].max().reset_index()
        for region, frame in per_region.groupby("region", sort=True):
            series.append((region, "time", frame, "time"))
        for col in sorted(c for c in regions.columns if c.startswith("metric_")):
            name = col.removeprefix("metric_")
            how = "min" if name.startswith("min_") else "max" if "time" in name else "sum"
            per_metric = regions[regions["config_id"].isin(keep)].dropna(subset=[col]).groupby(
                ["config_id", "run_id", "region"])[col].agg(how).reset_index()
            for region, frame in per_metric.groupby("region", sort=True):
                series.append((region, name, frame, col))
    param_of = runs.drop_duplicates("config_id").set_index("config_id")[params]
    checks = set(runs.loc[runs["validation"].astype(bool), "config_id"]) if "validation" in runs else set()
    over = oversubscribed(runs, processes)
    load = {cid: disturbance(group, disturbed) for cid, group in runs.groupby("config_id", sort=False)}
    rows = []
    for region, metric, frame, col in series:
        for cid, group in frame.groupby("config_id", sort=False):
            row = {"config_id": cid, **param_of.loc[cid].to_dict(), "region": region, "metric": metric}
            row.update(_stats(group[col]))
            row.update(n_runs=n_runs[cid], flagged=flagged[cid], validation=cid in checks,
                       oversubscribed=over.get(cid, False), **load[cid], **kind_of(metric, kinds).fields())
            rows.append(row)
    out = pd.DataFrame(rows)
    if not out.empty:
        out = out.sort_values(["region", "metric", *params], kind="stable").reset_index(drop=True)
    return out


def medians_wide(agg: pd.DataFrame, params: list[str]) -> pd.DataFrame:
    """The run-time medians, one row per configuration (region all, metric time), with ``n_disturbed``
    beside ``n_ok`` and ``n_runs``: where some runs were disturbed, the statistics come from the others."""
    sel = agg[(agg["region"] == "all") & (agg["metric"] == "time")]
    columns = ["config_id", *params, "median", "min", "mean", "std", "n_ok", "n_runs", "n_disturbed", "flagged",
               "validation", "oversubscribed"]
    # aggregates written before the last three were have none of them
    return sel[[c for c in columns if c in sel]].reset_index(drop=True)


def to_markdown(df: pd.DataFrame, floatfmt: str = ".4g") -> str:
    """A GitHub-style Markdown table without the tabulate dependency."""
    def cell(v: Any) -> str:
        if isinstance(v, (float, np.floating)):
            return "" if np.isnan(v) else format(v, floatfmt)
        return str(v)
    head = "| " + " | ".join(map(str, df.columns)) + " |"
    sep = "|" + "|".join("---" for _ in df.columns) + "|"
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, sep, *body]) + "\n"


def to_latex(df: pd.DataFrame, floatfmt: str = ".4g", caption: str = "") -> str:
    """A booktabs LaTeX table (no jinja2 dependency)."""
    def esc(v: Any) -> str:
        if isinstance(v, (float, np.floating)):
            return "" if np.isnan(v) else format(v, floatfmt)
        text = str(v)
        for a, b in (("\\", r"\textbackslash{}"), ("_", r"\_"), ("%", r"\%"), ("&", r"\&"), ("#", r"\#")):
            text = text.replace(a, b)
        return text
    lines = [r"\begin{table}", r"\centering"]
    if caption:
        lines.append(r"\caption{" + esc(caption) + "}")
    lines += [r"\begin{tabular}{" + "l" * len(df.columns) + "}", r"\toprule",
              " & ".join(esc(c) for c in df.columns) + r" \\", r"\midrule"]
    lines += [" & ".join(esc(v) for v in row) + r" \\" for row in df.itertuples(index=False)]
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def write_table(df: pd.DataFrame, stem: str, caption: str = "") -> list[str]:
    """Write ``stem``.csv, .md and .tex; returns the paths."""
    paths = [f"{stem}.csv", f"{stem}.md", f"{stem}.tex"]
    df.to_csv(paths[0], index=False)
    with open(paths[1], "w") as fh:
        fh.write(to_markdown(df))
    with open(paths[2], "w") as fh:
        fh.write(to_latex(df, caption=caption))
    return paths
