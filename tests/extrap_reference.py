"""What Extra-P 4.2.5 itself reads from the vendored copy of its test data (tests/data/extrap/).

Run in perfsweep's venv; Extra-P runs in its own (perfsweep.modeling.extrap_env):

    .venv/bin/python tests/extrap_reference.py      # rewrites tests/data/extrap/reference.json

For every text, JSON and JSON Lines file and every CUBE experiment directory of the copy, the
reference holds Extra-P's parameters, points, and per call path and metric the mean and number of
values at each point, or the error Extra-P gives. tests/test_extrap_formats.py compares perfsweep's
importer with it, and (where Extra-P's venv exists) compares it with a fresh Extra-P run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data" / "extrap"
REFERENCE = DATA / "reference.json"

# the input files of the copy: Extra-P's text (.txt), JSON (.json, .JSON) and JSON Lines (.jsonl) files
# and the CUBE experiment directories (folders whose sub-folders hold *.cubex profiles)
SUFFIXES = {".txt": "text", ".json": "json", ".jsonl": "jsonl"}


def inputs(root: Path = DATA) -> dict[str, str]:
    """Relative path -> kind (text, json, jsonl, cube) of every input in the copy, sorted."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and path.suffix.lower() in SUFFIXES and "cubeset" not in rel and path != REFERENCE:
            out[rel] = SUFFIXES[path.suffix.lower()]
        elif path.is_dir() and any(path.glob("*/*.cubex")):
            out[rel] = "cube"
    return out


EXTRAP_CODE = r"""
import json, math, sys, warnings
warnings.simplefilter("ignore")
from extrap.fileio.file_reader.text_file_reader import TextFileReader
from extrap.fileio.file_reader.json_file_reader import JsonFileReader
from extrap.fileio.file_reader.jsonlines_file_reader import read_jsonlines_file
from extrap.fileio.file_reader.cube_file_reader2 import CubeFileReader2

def read(path, kind):
    if kind == "text":
        return TextFileReader().read_experiment(path)
    if kind == "json":
        return JsonFileReader().read_experiment(path)
    if kind == "jsonl":
        return read_jsonlines_file(path, keep_values=True)
    return CubeFileReader2().read_experiment(path)   # defaults: weak scaling, exclusive values

root, files = sys.argv[1], json.loads(sys.argv[2])
out = {}
for rel, kind in files.items():
    try:
        exp = read(root + "/" + rel, kind)
    except Exception as exc:
        out[rel] = {"kind": kind, "error": f"{type(exc).__name__}: {exc}"[:300]}
        continue
    meas = []
    for (callpath, metric), ms in exp.measurements.items():
        for m in ms:
            meas.append([callpath.name, metric.name, [float(v) for v in m.coordinate], float(m.mean),
                         int(m.repetitions) if m.repetitions is not None else None])
    out[rel] = {"kind": kind, "parameters": [p.name for p in exp.parameters],
                "points": [[float(v) for v in c] for c in exp.coordinates], "measurements": meas}
print(json.dumps(out))
"""


def extrap_reference(root: Path = DATA) -> dict:
    """Run Extra-P 4.2.5 (its own venv) on every input of the copy."""
    from perfsweep.modeling.extrap_env import run_extrap

    return json.loads(run_extrap(EXTRAP_CODE, str(root), json.dumps(inputs(root))))


if __name__ == "__main__":
    ref = extrap_reference()
    lines = [f"{json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in sorted(ref.items())]
    REFERENCE.write_text('{"extrap": "4.2.5", "files": {\n' + ",\n".join(lines) + "\n}}\n")  # a line per input
    ok = sum("error" not in r for r in ref.values())
    print(f"{REFERENCE}: {len(ref)} inputs, Extra-P reads {ok}", file=sys.stderr)
