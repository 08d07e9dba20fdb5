"""A stand-in for an app instrumented with Score-P: writes a CUBE profile into $SCOREP_EXPERIMENT_DIRECTORY.

    SCOREP_EXPERIMENT_DIRECTORY=out python scorep_standin.py --n 8 --template profile.cubex

The profile is the template (a real Score-P profile of Extra-P's matrix-multiply test data, call tree
main -> init_mat, zero_mat, mat_mul) with its time metric replaced by known functions of n:
exclusive time main 0.05 s, init_mat 2e-3 n, zero_mat 1e-3 n log2(n), mat_mul 1e-5 n^2 (per location,
stored inclusive as CUBE does), and visits (exclusive counts) main 1, init_mat n, zero_mat 2 n, mat_mul n^2.
Every other metric is the template's.
"""

import argparse
import io
import math
import os
import tarfile
from pathlib import Path

import numpy as np
from pycubexr import CubexParser

EXCLUSIVE = {"main": lambda n: 0.05, "main->init_mat": lambda n: 2e-3 * n,
             "main->zero_mat": lambda n: 1e-3 * n * math.log2(n), "main->mat_mul": lambda n: 1e-5 * n * n}
VISITS = {"main": lambda n: 1, "main->init_mat": lambda n: n, "main->zero_mat": lambda n: 2 * n,
          "main->mat_mul": lambda n: n * n}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=float, required=True)
    ap.add_argument("--template", required=True)
    args = ap.parse_args()
    out_dir = Path(os.environ["SCOREP_EXPERIMENT_DIRECTORY"])
    with CubexParser(args.template) as cube:
        metric = cube.get_metric_by_name("time")
        nloc = len(cube.get_locations())
        names, inclusive = {}, {}

        def walk(node, prefix):
            names[node.id] = f"{prefix}->{node.region.name}" if prefix else node.region.name
            total = EXCLUSIVE[names[node.id]](args.n)
            for child in node.get_children():
                total += walk(child, names[node.id])
            inclusive[node.id] = total
            return total

        for root in cube.get_root_cnodes():
            walk(root, "")
        cids = list(cube.get_metric_values(metric=metric).cnode_indices)  # the data file's row order
        visits = cube.get_metric_by_name("visits")
        vids = list(cube.get_metric_values(metric=visits).cnode_indices)
    data = np.repeat([inclusive[c] for c in cids], nloc).astype("<f8")
    counts = np.repeat([round(VISITS[names[c]](args.n)) for c in vids], nloc).astype("<u8")
    out_dir.mkdir(parents=True, exist_ok=True)
    with tarfile.open(args.template) as src, tarfile.open(out_dir / "profile.cubex", "w") as dst:
        for member in src.getmembers():
            content = src.extractfile(member).read()
            if member.name == f"{metric.id}.data":
                content = b"CUBEX.DATA" + data.tobytes()
            elif member.name == f"{visits.id}.data":
                content = b"CUBEX.DATA" + counts.tobytes()
            info = tarfile.TarInfo(member.name)
            info.size = len(content)
            dst.addfile(info, io.BytesIO(content))
    print(f"n = {args.n:g}: profile written to {out_dir}")


if __name__ == "__main__":
    main()
