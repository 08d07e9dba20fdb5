"""Facts with one home: the built-in apps and the process count's default name live in the app registry,
the schema in the package, a study's outputs in the study object."""

from importlib import resources

import yaml

from perfsweep import layout
from perfsweep.apps import registry
from perfsweep.config import SCHEMA, _schema, load_config


def test_schema_is_package_data_and_takes_the_registry_facts():
    raw = yaml.safe_load(resources.files("perfsweep").joinpath(SCHEMA).read_text())
    assert "enum" not in raw["definitions"]["app"]["properties"]["name"]  # written once: BUILTIN_APPS
    assert "default" not in raw["properties"]["processes"]  # written once: PROCESS_COUNT
    schema = _schema()
    assert schema["definitions"]["app"]["properties"]["name"]["enum"] == list(registry.BUILTIN_APPS)
    assert schema["properties"]["processes"]["default"] == registry.PROCESS_COUNT == "p"


def test_an_app_added_to_the_registry_is_a_valid_config_name(monkeypatch):
    toy = registry.BuiltinApp(module="toy", params={"size": registry.ParamSpec(int, 1, False, "size")})
    monkeypatch.setitem(registry.BUILTIN_APPS, "toy", toy)
    sweep = load_config({"app": {"name": "toy"}, "parameters": {"size": 2},
                         "studies": {"s": {"vary": {"size": [1, 2], "p": [1, 2]}}}}, "toy.yaml")
    assert sweep.processes == "p" and sweep.studies[0].varies_processes()


def test_study_outputs_follow_whether_it_varies_the_process_count():
    sweep = load_config({"app": {"name": "ljmd"}, "parameters": {"n": 200, "m": 1, "d": 0.5, "c": 2.0},
                         "processes": "ranks",
                         "studies": {"nm": {"vary": {"n": [200, 400], "m": [1, 2]}},
                                     "nr": {"vary": {"n": [200, 400], "ranks": [1, 2]}}},
                         "launcher": "{mpiexec} -n {ranks}"}, "c.yaml")
    nm, nr = sweep.studies
    assert not nm.varies_processes() and nr.varies_processes()
    nm_out, nr_out = (layout.final_outputs("out", s.name, s.varies_processes()) for s in (nm, nr))
    assert "out/models/nm/models.csv" in nm_out and not any("overhead" in p for p in nm_out)
    assert set(nr_out) - set(p.replace("/nm/", "/nr/") for p in nm_out) == {
        "out/overhead/nr/overhead.png", "out/metrics/nr/pop.png"}
