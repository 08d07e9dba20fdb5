"""The table of ``perfsweep compare`` as text (the terminal), md, csv or json: :func:`render`."""

from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd

from perfsweep.compare.judge import CompareResult
from perfsweep.tables import to_markdown

SCHEMA_VERSION = 2  # of --format json: 2 (no common shift; mde, baselines, df, p_scaling, setting differences)
COLUMNS = ["verdict", "study", "region", "metric", "ratio", "interval", "mde", "share", "impact", "scaling",
           "orders_a", "orders_b", "target", "notes"]


def display_table(result: CompareResult) -> pd.DataFrame:
    """The table of text, md and the HTML page: ``COLUMNS``, with the columns of statistics that are no
    field of a row (``Row.extra``) before the notes."""
    extra = list(dict.fromkeys(k for r in result.rows for k in r.extra))
    rows = []
    for r in result.rows:
        rows.append({
            "verdict": r.verdict + ("" if r.gated else " (not gating)"),
            "study": r.study, "region": r.region, "metric": r.metric,
            "ratio": f"{r.ratio:.3f}" if math.isfinite(r.ratio) else "-",
            "interval": f"[{r.low:.3f}, {r.high:.3f}]" if math.isfinite(r.low) else "-",
            "mde": f"{r.mde:.1%}" if math.isfinite(r.mde) else "-",
            "share": f"{r.share:.1%}" if math.isfinite(r.share) else "-",
            "impact": f"{r.impact:+.1%}" if math.isfinite(r.impact) else "-",
            "scaling": r.scaling, "orders_a": r.orders_a, "orders_b": r.orders_b,
            "target": ", ".join(f"{k}={v:g}" for k, v in r.target.items()),
            **{k: _cell(r.extra.get(k)) for k in extra},
            "notes": "; ".join(n for n in r.notes if not n.startswith(("not gating", "scaling class worse", "judged"))),
        })
    return pd.DataFrame(rows, columns=COLUMNS[:-1] + extra + COLUMNS[-1:])


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if math.isfinite(value) else "-"
    return "-" if value is None else str(value)


def summary_lines(result: CompareResult) -> list[str]:
    c = result.counts()
    gated = len(result.rows) - c["not gated"]
    k = len(result.baselines)
    lines = [f"# compare A = {result.a}  B = {result.b}"]
    lines += [f"# setting differs: {d}" for d in result.differences]
    lines += [f"# {len(result.rows)} rows ({gated} gating: share >= {result.min_share:.0%} of the total at the target); "
              f"threshold {result.threshold:.1%}, Holm-corrected at alpha {result.alpha:g} over every gating test "
              f"(ratios and scaling classes), {result.level:.0%} intervals of B/A"]
    if result.paired:
        lines.append("# paired measurement: A and B are variants of one sweep, run back to back in every round: the "
                     "host's drift falls on both alike, and each interval is of the paired ratios")
    elif k > 1:
        lines.append(f"# {k} baselines ({', '.join(result.baselines)}): B is judged against their spread (a t "
                     "prediction interval: the between-sweep variance included); A is the latest")
    else:
        lines.append("# one baseline: whole-sweep drift is unknown (the intervals hold the repetitions' noise within "
                     "each sweep only; give earlier baselines too, perfsweep compare BASE1 BASE2 ... NEW, to measure it)")
    lines.append("# " + ", ".join(f"{k}: {v}" for k, v in c.items()))
    unresolved = result.unresolved()
    if unresolved:
        lines.append(f"# {len(unresolved)} of {gated} gating rows cannot resolve the {result.threshold:.1%} threshold "
                     f"(minimum detectable effect at alpha {result.alpha:g}, 80 % power): " + "; ".join(
                         f"{r.study}/{r.region}/{r.metric} {_mde(r)}" for r in unresolved[:8])
                     + (" ..." if len(unresolved) > 8 else ""))
    for side, what, name in result.one_sided:
        lines.append(f"# only in {side} ({result.a if side == 'A' else result.b}): {what} {name}")
    if result.param_map:
        lines.append("# parameters mapped: " + ", ".join(f"{k} (A) = {v} (B)" for k, v in result.param_map.items()))
    code = result.exit_code()
    failing = [f"{r.study}/{r.region}/{r.metric}" for r in result.rows if r.gates()]
    if code and not failing:
        failing = [f"{r.study}/{r.region}/{r.metric} inconclusive (--fail-on-inconclusive)"
                   for r in result.rows if r.gated and r.verdict == "inconclusive"]
    lines.append("# result: " + ("REGRESSION (exit 1): " + ", ".join(failing) if code else "no gated regression (exit 0)"))
    return lines


def _mde(r) -> str:
    if not math.isfinite(r.mde):
        return "no standard error (no resamples)"
    if r.baselines > 1 and math.isfinite(r.drift) and r.drift ** 2 * (1 + 1 / r.baselines) > r.se ** 2 / 2:
        return f"{r.mde:.1%} (the spread between the baseline sweeps dominates: more baselines, not repetitions)"
    return f"{r.mde:.1%} (about {r.needed:.1f}x the repetitions would resolve it)"


def render(result: CompareResult, fmt: str = "text") -> str:
    """The table as text (terminal), md, csv or json."""
    if fmt == "json":
        return json.dumps({"schema_version": SCHEMA_VERSION, "a": result.a, "b": result.b,
                           "baselines": result.baselines, "paired": result.paired, "threshold": result.threshold, "alpha": result.alpha,
                           "power": 0.8, "level": result.level, "min_share": result.min_share,
                           "param_map": result.param_map, "correction": "holm over every gating test",
                           "fail_on_inconclusive": result.fail_on_inconclusive,
                           "differences": result.differences, "exit_code": result.exit_code(),
                           "counts": result.counts(),
                           "unresolved": [f"{r.study}/{r.region}/{r.metric}" for r in result.unresolved()],
                           "one_sided": [{"side": s, "what": w, "name": n} for s, w, n in result.one_sided],
                           "rows": [_strict(r.record()) for r in result.rows]}, indent=1) + "\n"
    if fmt == "csv":
        return result.table().to_csv(index=False)
    table = display_table(result)
    head = "\n".join(summary_lines(result)) + "\n"
    if fmt == "md":
        return head + "\n" + (to_markdown(table) if len(table) else "(no rows)\n")
    return head + (table.to_string(index=False) if len(table) else "(no rows)") + "\n"


def _strict(d: dict) -> dict:
    """JSON without NaN (null instead)."""
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}
