"""One function per pipeline stage, file paths in and file paths out: what scripts/*.py call.

Each function can also be used outside Snakemake, e.g. to re-aggregate records by hand::

    from perfsweep import stages
    stages.collect(glob.glob("results/runs/nm/*/*.json"), "runs.csv", "ranks.csv", "regions.csv")
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from perfsweep import tables

PathLike = str | os.PathLike[str]


def _read(path: PathLike) -> pd.DataFrame:
    try:
        return pd.read_csv(path)
    except pd.errors.EmptyDataError:
        return pd.DataFrame()


def _stem(path: PathLike) -> str:
    return str(Path(path).with_suffix(""))


def collect(records: Iterable[PathLike], runs: PathLike, ranks: PathLike, regions: PathLike) -> None:
    runs_df, ranks_df, regions_df = tables.collect(records)
    runs_df.to_csv(runs, index=False)
    ranks_df.to_csv(ranks, index=False)
    regions_df.to_csv(regions, index=False)


def variability(runs: PathLike, table: PathLike, summary: PathLike, varied: list[str],
                cv_threshold: float, study: str | None = None) -> None:
    var = tables.variability(_read(runs), varied, cv_threshold)
    tables.write_table(var, _stem(table), caption="Coefficient of variation per configuration")
    summ = tables.variability_summary(var)
    summ.to_csv(summary, index=False)
    print(progress_line(study or Path(table).parent.name, var), flush=True)


def progress_line(study: str, var: pd.DataFrame) -> str:
    """One line per finished study for people following a long sweep."""
    runs, failed = int(var["n_runs"].sum()), int(var["n_failed"].sum())
    line = f"perfsweep: study {study} measured: {runs - failed}/{runs} runs ok, {failed} failed"
    cv = var.dropna(subset=["cv"])
    if len(cv):
        worst = cv.loc[cv["cv"].idxmax()]
        line += (f"; worst CV {100 * worst['cv']:.1f} % ({worst['config_id']}),"
                 f" {int(var['flagged'].sum())} of {len(var)} configurations above"
                 f" {100 * var['cv_threshold'].iloc[0]:g} %")
    return line


def aggregate(runs: PathLike, ranks: PathLike, regions: PathLike, variability: PathLike,
              aggregate: PathLike, medians: PathLike, varied: list[str], policy: str) -> None:
    agg = tables.aggregate(_read(runs), _read(ranks), _read(regions), varied, _read(variability), policy)
    agg.to_csv(aggregate, index=False)
    tables.write_table(tables.medians_wide(agg, varied), _stem(medians),
                       caption="Median run time per configuration")


def plot_sweep(runs: PathLike, medians: PathLike, figure: PathLike, varied: list[str], study: str) -> None:
    from perfsweep.plots.sweep import time_vs_parameters

    time_vs_parameters(_read(runs), _read(medians), varied, study, figure)


def overhead(medians: PathLike, fits: PathLike, curves: PathLike, figure: PathLike, varied: list[str],
             processes: str, study: str) -> None:
    """Höfinger overhead model per combination of the study's other varied parameters (seed 003)."""
    from perfsweep.overhead import fit_per_group
    from perfsweep.plots.overhead import draw_overhead
    from perfsweep.plots.style import new_figure, save_figure

    med = _read(medians)
    others = [v for v in varied if v != processes]
    fit_df, curve_df, results = fit_per_group(med, processes, "median", others)
    tables.write_table(fit_df, _stem(fits), caption=f"Overhead model per group, study {study}")
    curve_df.to_csv(curves, index=False)
    n = max(1, len(results))
    ncols = min(3, n)
    fig, axes = new_figure(ncols=ncols, nrows=(n + ncols - 1) // ncols, width=5.2, height=4.2)
    plotted = []
    for ax, (label, res) in zip(axes.flat, results.items()):
        plotted.append(draw_overhead(ax, f"{study} ({label})", res, triples=1))
    for ax in list(axes.flat)[len(results):]:
        ax.axis("off")
        if not results:
            ax.text(0.5, 0.5, "no group with p = 1 and >= 3 points with p > 1", ha="center", va="center")
    save_figure(fig, figure, pd.concat(plotted, ignore_index=True) if plotted else pd.DataFrame())


def paper_hofinger(table: PathLike, out_dir: PathLike) -> None:
    from perfsweep.reproduce.hofinger import reproduce_hofinger

    reproduce_hofinger(table, out_dir)


def models(aggregate: PathLike, table: PathLike, models_json: PathLike, predictions: PathLike,
           varied: list[str], fixed: dict, processes: str, study: str) -> None:
    """PMNF models per (region, metric) of a study: table (CSV, Markdown, LaTeX), JSON, predictions."""
    import json

    from perfsweep.modeling.pipeline import fit_study_models

    tab, mods, preds = fit_study_models(_read(aggregate), study, varied, fixed, processes)
    tables.write_table(tab.drop(columns=["latex"]), _stem(table), caption=f"Performance models of study {study}")
    with open(models_json, "w") as fh:
        json.dump(mods, fh, indent=1)
    preds.to_csv(predictions, index=False)
    main = tab[(tab["region"] == "all") & (tab["metric"] == "time")]
    if len(main):
        r = main.iloc[0]
        text = r["model"] or f"no model ({r['reason']})"
        print(f"perfsweep: study {study} model: T({', '.join(varied)}) = {text}"
              + (f"  (adj. R^2 {r['adj_r2']:.3f})" if r["model"] else ""), flush=True)


def metrics(ranks: PathLike, regions: PathLike, observables: PathLike, scaling: PathLike, pop_csv: PathLike,
            pop_spread: PathLike, pop_figure: PathLike, speedup_figure: PathLike, ranks_figure: PathLike,
            varied: list[str], processes: str, scaling_mode: str, study: str) -> None:
    """Seed-000 observables, speed-up/efficiency and POP metrics (seed 004) of a study that varies p."""
    from perfsweep.metrics.observables import from_pipeline_ranks, run_totals
    from perfsweep.metrics.pop import NOT_COMPUTED, detect_scaling, pop_metrics, pop_table
    from perfsweep.metrics.scaling import scaling_table
    from perfsweep.metrics.stragglers import flag_stragglers
    from perfsweep.plots.metrics import pop_heatmap, rank_bars, speedup_efficiency

    rk = _read(ranks)
    if rk.empty:  # an external app without per-rank timings: nothing to break down, say so
        from perfsweep.plots.style import new_figure, save_figure

        for path in (observables, scaling, pop_csv, pop_spread):
            pd.DataFrame({"note": ["no per-rank timings: the app reports none (timings_json)"]}).to_csv(path, index=False)
        for path in (pop_figure, speedup_figure, ranks_figure):
            fig, axes = new_figure()
            axes[0, 0].text(0.5, 0.5, f"{study}: no per-rank timings", ha="center")
            axes[0, 0].axis("off")
            save_figure(fig, path, pd.DataFrame())
        return
    # stragglers on busy time (t_N - t_comm): the root of a Gather waits for the slow rank and would
    # otherwise be flagged as well
    rk = flag_stragglers(from_pipeline_ranks(rk, _read(regions)), ["run_id"], t_col="t_busy")
    others = [v for v in varied if v != processes]
    run_cols = ["run_id", "config_id", *varied]
    runs = run_totals(rk, run_cols).merge(
        rk.groupby("run_id")["straggler"].sum().rename("stragglers").reset_index(), on="run_id")
    runs.to_csv(observables, index=False)
    table = scaling_table(runs, processes, "t_total", stat="median", group_cols=others)
    tables.write_table(table, _stem(scaling), caption=f"Speed-up and efficiency, study {study}")
    speedup_efficiency(table, processes, speedup_figure, study, hue=others[0] if others else None)
    mode = detect_scaling(rk[varied].drop_duplicates(), processes) if scaling_mode == "auto" else scaling_mode
    # strong: compare runs of equal other parameters; weak: the problem grows with p, so the smallest-p
    # runs of the whole study are the reference
    groups = rk.groupby(others) if others and mode == "strong" else [((), rk)]
    per_run = pd.concat([pop_metrics(g, ["run_id", "config_id", *varied], processes, scaling=mode)
                         for _, g in groups], ignore_index=True)
    pt, spread = pop_table(per_run, varied, processes)
    caption = f"POP metrics of study {study} ({mode} scaling), median over repetitions. {NOT_COMPUTED}"
    tables.write_table(pt.reset_index(names="metric"), _stem(pop_csv), caption=caption)
    tables.write_table(spread.reset_index(names="metric"), _stem(pop_spread),
                       caption=f"Spread (max - min over repetitions) of the POP metrics, study {study}")
    pop_heatmap(pt, pop_figure, f"POP metrics, study {study} ({mode} scaling)")
    biggest = rk[rk[processes] == rk[processes].max()]
    one = biggest[biggest["run_id"] == biggest["run_id"].iloc[0]]
    rank_bars(one, ["init", "compute", "io", "comm", "other"], ranks_figure,
              f"{study}: per-rank times of {one['run_id'].iloc[0]}", "straggler")


def paper_mdanalysis(data_dir: PathLike, out_dir: PathLike) -> None:
    from perfsweep.reproduce.mdanalysis import reproduce_mdanalysis

    reproduce_mdanalysis(data_dir, out_dir)


def study_figures(medians: PathLike, variability: PathLike, predictions: PathLike, models_json: PathLike,
                  grid: PathLike, variability_figure: PathLike, model: PathLike, model_vs_measurement: PathLike,
                  varied: list[str], study: str) -> None:
    """Seed 001's figures for one study: measured grid, variability, the model's shape, model vs data."""
    import json

    from perfsweep.modeling.model import Model
    from perfsweep.plots import grid as grid_plot
    from perfsweep.plots import models as model_plots
    from perfsweep.plots.variability import variability_figure as var_plot
    from perfsweep.plots.style import new_figure, save_figure

    med, var = _read(medians), _read(variability)
    grid_plot.measured_grid(med, var, varied, study, grid)
    var_plot(var, study, variability_figure)
    entry = next((e for e in json.loads(Path(models_json).read_text())
                  if e["region"] == "all" and e["metric"] == "time"), None)
    pred = _read(predictions)
    pred = pred[(pred["region"] == "all") & (pred["metric"] == "time")] if len(pred) else pred
    if entry is None:  # no model (e.g. too few values): say so in the figures instead of failing the sweep
        for path in (model, model_vs_measurement):
            fig, axes = new_figure()
            axes[0, 0].text(0.5, 0.5, f"{study}: no run-time model (see models.csv)", ha="center")
            axes[0, 0].axis("off")
            save_figure(fig, path, pd.DataFrame())
        return
    m = Model.from_dict(entry["model"])
    title = f"{study}: T({', '.join(varied)})"
    if len(varied) == 2:
        model_plots.contour(m.predict, varied, med, str(m), m.adj_r2, model, title)
    elif len(varied) >= 3:
        model_plots.slices(m.predict, varied[:3], med, str(m), m.adj_r2, model, title)
    else:
        x = np.linspace(med[varied[0]].min(), med[varied[0]].max(), 100)
        fig, axes = new_figure()
        axes[0, 0].plot(x, m.predict(x[:, None]), label=str(m))
        axes[0, 0].scatter(med[varied[0]], med["median"], c="k", s=14, label="measured medians")
        axes[0, 0].set(xlabel=varied[0], ylabel="time [s]", title=f"{title} (adj. R² {m.adj_r2:.3f})")
        axes[0, 0].legend(fontsize=7)
        save_figure(fig, model, pd.DataFrame({varied[0]: x, "model_time": m.predict(x[:, None])}))
    model_plots.model_vs_measurement(pred, model_vs_measurement, title)


def models_summary(models: list[PathLike], summary: PathLike) -> None:
    """Run-time models of all studies in the shape of seed 001's Tables 2 (two varied parameters) and 3
    (three): model, fixed parameters, formula, adjusted R^2. Writes summary and summary_<k>p tables."""
    frames = [_read(p) for p in models]
    allm = pd.concat([f for f in frames if len(f)], ignore_index=True) if frames else pd.DataFrame()
    main = allm[(allm["region"] == "all") & (allm["metric"] == "time")].copy()
    main["parameters"] = main["varied"].str.count(",") + 1
    main = main.reindex(columns=[*main.columns, *(c for c in ("lead_share", "runner_up") if c not in main)])
    table = main.rename(columns={"model_name": "Model", "fixed": "Fixed parameters", "model": "Formula",
                                 "adj_r2": "adj. R^2", "lead_share": "lead share", "runner_up": "runner-up"})[
        ["Model", "Fixed parameters", "Formula", "adj. R^2", "lead share", "runner-up", "study", "parameters", "reason"]]
    tables.write_table(table, _stem(summary), caption="Run-time models of all studies")
    for k, part in table.groupby("parameters"):
        tables.write_table(part.drop(columns=["parameters"]), f"{_stem(summary)}_{k}p",
                           caption=f"{k}-parameter models of the execution time")
