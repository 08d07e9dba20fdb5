"""Import the published per-rank timings of the MPI-parallel RMSD analysis (seed 000's authors).

Format (resources/reference-data/README.md): ``Fig2_data1.txt`` has one
line per (N, repeat, rank): ``N repeat rank t_comp t_IO t_all_frame t_end_loop t_opening``;
``Fig2_data2.txt`` has six lines per (N, repeat), each ``N repeat [value per rank, ...]``: t_N, the
initialisation, the block set-up, t_comm (Gather of the results), the Gather of the timings, t_RMSD.

    from perfsweep.metrics.mdanalysis_import import read_mdanalysis
    ranks = read_mdanalysis("resources/reference-data/mdanalysis-rmsd")   # one row per (N, repeat, rank)
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pandas as pd

DATA2_LINES = ["t_N", "t_init", "t_blocks", "t_comm", "t_comm_timings", "t_RMSD"]


def read_mdanalysis(data_dir: str | os.PathLike[str]) -> pd.DataFrame:
    data_dir = Path(data_dir)
    d1 = pd.read_csv(data_dir / "Fig2_data1.txt", sep=r"\s+", header=None,
                     names=["N", "repeat", "rank", "t_comp", "t_IO", "t_all_frame", "t_end_loop", "t_opening"])
    rows = []
    counters: dict[tuple[int, int], int] = {}
    with open(data_dir / "Fig2_data2.txt") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            m = re.match(r"\s*(\d+)\s+(\d+)\s+\[(.*)\]\s*$", line)
            if not m:
                raise ValueError(f"{data_dir / 'Fig2_data2.txt'}: line {lineno}: not 'N repeat [values]'")
            n, rep = int(m.group(1)), int(m.group(2))
            k = counters.get((n, rep), 0)
            counters[(n, rep)] = k + 1
            values = [float(v) for v in m.group(3).split(",")]
            for rank, v in enumerate(values):
                rows.append({"N": n, "repeat": rep, "rank": rank, "quantity": DATA2_LINES[k], "value": v})
    d2 = pd.DataFrame(rows).pivot_table(index=["N", "repeat", "rank"], columns="quantity", values="value").reset_index()
    d2.columns.name = None
    out = d1.merge(d2, on=["N", "repeat", "rank"], how="outer").sort_values(["N", "repeat", "rank"])
    return out.reset_index(drop=True)
