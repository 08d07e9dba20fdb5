import json
import os

import pandas as pd
import pytest

from conftest import REPO
from perfsweep.errors import ExtrapFormatError
from perfsweep.modeling.extrap_io import (read_extrap, runs_to_tidy, write_extrap_json,
                                          write_extrap_text)

DATA = REPO / "resources" / "reference-data" / "extrap"


def canon(df):
    return df.sort_values(list(df.columns)).reset_index(drop=True)


@pytest.mark.parametrize("name, params, rows, regions", [
    ("relearn_2p_text.txt", ["p", "n"], 700, 14),
    ("synthetic_2p_text.txt", ["x", "y"], 500, 2),
    ("synthetic_3p_text.txt", ["x", "y", "z"], 1250, 2),
    ("synthetic_2p_newjson.json", ["x", "y"], 60, 2),
    ("synthetic_3p_sparse.jsonl", ["x", "y", "z"], 17, 1),
])
def test_imports_every_example(name, params, rows, regions):
    df, got = read_extrap(DATA / name)
    assert got == params and len(df) == rows and df["region"].nunique() == regions
    assert set(df.columns) == {*params, "region", "metric", "repetition", "value"}


def test_relearn_values():
    df, _ = read_extrap(DATA / "relearn_2p_text.txt")
    main = df[(df.region == "main()") & (df.p == 32) & (df.n == 5000)]
    assert sorted(main["value"]) == [405.58, 406.498]


@pytest.mark.parametrize("writer", [write_extrap_text, write_extrap_json])
def test_round_trip(tmp_path, writer):
    df, params = read_extrap(DATA / "relearn_2p_text.txt")
    path = tmp_path / ("x.json" if writer is write_extrap_json else "x.txt")
    writer(df, params, path)
    back, p2 = read_extrap(path)
    assert p2 == params
    pd.testing.assert_frame_equal(canon(back), canon(df))


def test_bad_text_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("PARAMETER x\nPOINTS 1 2 3\nREGION r\nDATA 1\nDATA 2\nDATA 3\nDATA 4\n")
    with pytest.raises(ExtrapFormatError, match=r"bad.txt: line 7: more DATA lines than POINTS \(3\)"):
        read_extrap(bad)


def test_runs_table_export(tmp_path):
    runs = pd.DataFrame({"n": [1, 1, 2, 2, 3, 3], "status": ["ok"] * 5 + ["failed"],
                         "repetition": [0, 1] * 3, "time": [1.0, 1.1, 2.0, 2.1, 3.0, None]})
    tidy = runs_to_tidy(runs, ["n"])
    assert len(tidy) == 5 and set(tidy["region"]) == {"all"}


def test_export_loads_in_extrap(tmp_path):
    from perfsweep.modeling.extrap_env import ensure_extrap, extrap_python, run_extrap

    if extrap_python() is None and not os.environ.get("CI"):
        pytest.skip("Extra-P's venv (.extrap-venv) is not installed; CI creates it")
    ensure_extrap()
    df, params = read_extrap(DATA / "relearn_2p_text.txt")
    write_extrap_text(df, params, tmp_path / "x.txt")
    write_extrap_json(df, params, tmp_path / "x.json")
    code = """
import json, sys
from extrap.fileio.file_reader.text_file_reader import TextFileReader
from extrap.fileio.file_reader.json_file_reader import JsonFileReader
out = []
for path in sys.argv[1:]:
    exp = (JsonFileReader() if path.endswith('.json') else TextFileReader()).read_experiment(path)
    out.append([len(exp.parameters), len(exp.coordinates), len(exp.callpaths), len(exp.measurements)])
print(json.dumps(out))
"""
    out = json.loads(run_extrap(code, str(tmp_path / "x.txt"), str(tmp_path / "x.json")))
    assert out[0][:3] == [2, 25, 14] and out[1][:3] == [2, 25, 14]
