"""Sweep configuration: schema validation, semantic checks and the grid of runs.

Usage::

    from perfsweep.config import load_config_file
    sweep = load_config_file("config/config.yaml")     # raises ConfigError with a one-line message
    for study in sweep.studies:
        for cfg in study.configurations():
            print(study.name, cfg.config_id, cfg.params)

A configuration error names the file, the field (a dotted path) and the offending value::

    config/bad.yaml: studies.nm.vary.d[1]: -0.5 is not > 0 (reduced density)
"""

from __future__ import annotations

import copy
import itertools
import math
import re
from importlib import resources
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable

import jsonschema
import yaml

from perfsweep import layout
from perfsweep.apps.registry import BUILTIN_APPS, PROCESS_COUNT, ParamSpec
from perfsweep.config_fields import DEFAULT_SPEC, app_parameters, check_args, check_template, check_value, safe_name
from perfsweep.errors import ConfigError, DuplicateKey
from perfsweep.sweep.designs import Decide, Design, design_configurations, max_size, parse_decide, parse_design
from perfsweep.values import Configuration, format_value

SCHEMA = "schemas/config.schema.yaml"  # package data: the one copy of the config schema


@dataclass
class Study:
    name: str
    vary: dict[str, list[Any]]
    fixed: dict[str, Any]
    repetitions: int
    scaling: str = "auto"
    description: str = ""
    app: dict[str, Any] = field(default_factory=dict)
    processes: str = PROCESS_COUNT  # the sweep's process-count parameter (config key processes:)
    # adaptive repetitions (perfsweep.steps.rounds): `repetitions` is the min, up to max_repetitions
    max_repetitions: int | None = None
    until: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.max_repetitions is None:
            self.max_repetitions = self.repetitions
    design: Design = field(default_factory=Design)  # which configurations of the grid (perfsweep.sweep.designs)
    added: tuple[str, ...] = ()  # config ids adaptive rounds added (<results>/plan/<study>/points.json)
    # validation points beyond the grid (config key validate:): measured a fixed number of times
    # (validation_repetitions), never part of the design, its rounds or a fit
    validation: tuple[Configuration, ...] = ()
    validation_repetitions: int = 0
    variant: str | None = None  # paired measurement (config key variants:): the name is <study>@<variant>
    decide: Decide | None = None  # measure until decided (config key decide:, perfsweep.steps.decide)
    more: tuple[dict[str, Any], ...] = ()  # its points, {varied parameter: value} (<results>/plan/<study>/decide.json)

    @property
    def varied(self) -> list[str]:
        return list(self.vary)

    def varies_processes(self) -> bool:
        """Whether the study varies the process count (then it also gets the overhead and metrics stages)."""
        return self.processes in self.vary

    def configurations(self) -> list[Configuration]:
        """The configurations the study's design measures (ids as in the full grid)."""
        out = self.grid() if self.design.kind == "full" else design_configurations(self)
        if self.more:  # the points measuring until decided added, inside the grid or one step beyond
            ids = {c.config_id for c in out}
            out = [*out, *(c for c in map(self.point, self.more) if c.config_id not in ids)]
        return out

    def grid(self) -> list[Configuration]:
        """Every configuration of the full grid."""
        return [self.point(dict(zip(self.vary, values))) for values in itertools.product(*self.vary.values())]

    def point(self, varied: dict[str, Any], validation: bool = False) -> Configuration:
        """The configuration of the study at the varied parameters' values ``varied`` (the others fixed)."""
        params = dict(self.fixed)
        params.update(varied)
        cid = "_".join(f"{n}={format_value(varied[n])}" for n in self.vary)
        return Configuration(self.name, cid, params, validation)

    def measured_configurations(self) -> list[Configuration]:
        """What the workflow measures of the study: its design's configurations, then its validation points."""
        return [*self.configurations(), *self.validation]


@dataclass
class SweepConfig:
    source: str
    raw: dict[str, Any]
    app: dict[str, Any]
    parameters: dict[str, Any]
    processes: str
    studies: list[Study]
    cv_threshold: float
    cv_policy: str
    launcher: str
    timeout: float
    retries: int
    results: str
    bundle: str = "none"
    exclusive: bool = True
    extra: dict[str, Any] = field(default_factory=dict)
    seed: int = 1  # of the run order within each repetition round (perfsweep.sweep.order)
    history: str | None = None  # the history store perfsweep run records the sweep into (perfsweep.history)
    variants: tuple[str, ...] = ()  # paired measurement: every study measured once per variant
    disturbed: float = 0.1  # variability.disturbed: the share of the cores a run needed that others may take (tables.disturbed_runs)

    def study(self, name: str) -> Study:
        for s in self.studies:
            if s.name == name:
                return s
        raise KeyError(name)

    def n_runs(self) -> int:
        return sum(len(s.configurations()) * s.repetitions + len(s.validation) * s.validation_repetitions
                   for s in self.studies)


def _schema() -> dict[str, Any]:
    """The config schema (package data, so that an installed perfsweep validates configs too), with the
    facts whose home is the app registry: the built-in apps' names and the process count's default name."""
    schema = yaml.safe_load(resources.files("perfsweep").joinpath(SCHEMA).read_text())
    schema["definitions"]["app"]["properties"]["name"]["enum"] = list(BUILTIN_APPS)
    schema["definitions"]["app"]["properties"]["args"]["description"] += "; the options each app knows: " + "; ".join(
        f"{name}: {', '.join(app.options)}" for name, app in BUILTIN_APPS.items())
    schema["properties"]["processes"]["default"] = PROCESS_COUNT
    return schema


def _path_text(path: Iterable[Any]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _fill_defaults(instance: dict[str, Any], schema: dict[str, Any]) -> None:
    """Fill top-level and one-level-nested defaults, as snakemake.utils.validate(set_default=True) does."""
    for key, sub in schema.get("properties", {}).items():
        if "default" in sub and key not in instance:
            instance[key] = _copy(sub["default"])
        if isinstance(instance.get(key), dict):
            for k2, s2 in sub.get("properties", {}).items():
                if "default" in s2 and k2 not in instance[key]:
                    instance[key][k2] = _copy(s2["default"])


def _copy(value: Any) -> Any:
    return copy.deepcopy(value)


def load_config(data: dict[str, Any] | None, source: str = "config") -> SweepConfig:
    """Validate a config mapping (schema, then meaning) and return the expanded sweep."""
    if not isinstance(data, dict) or not data:
        raise ConfigError(source, "", "empty or not a mapping of keys (see config/config.yaml for an example)")
    data = _copy(data)
    _check_keys(source, data, [])
    _check_schema(source, data)

    procs = data["processes"]
    if not procs.isidentifier():
        raise ConfigError(source, "processes", f"{procs!r} is not a parameter name (letters, digits, '_')")
    if not math.isfinite(data["timeout"]):
        raise ConfigError(source, "timeout", f"{data['timeout']!r} is not a finite number of seconds")
    if not math.isfinite(data["variability"]["cv_threshold"]):
        raise ConfigError(source, "variability.cv_threshold", f"{data['variability']['cv_threshold']!r} is not finite")
    app, parameters, specs = app_parameters(source, "", data["app"], data["parameters"], procs)

    _check_size(source, data)
    _check_paths(source, data)
    studies = [_study(source, sname, sdef, data, (app, parameters, specs))
               for sname, sdef in data["studies"].items()]
    studies = _variant_studies(source, data.get("variants") or {}, studies)
    _check_launcher(source, data["launcher"], parameters, studies, procs)
    _check_modeling(source, data["modeling"], sorted({*parameters, *(n for st in studies for n in st.vary)}))
    threads = data["cluster"]["cpus_per_task"]
    if isinstance(threads, str) and threads not in parameters:
        raise ConfigError(source, "cluster.cpus_per_task",
                          f"{threads!r} is neither a number nor a parameter (known: {', '.join(parameters)})")

    var = data["variability"]
    return SweepConfig(
        source=source,
        raw=data,
        app=app,
        parameters=parameters,
        processes=procs,
        studies=studies,
        cv_threshold=float(var["cv_threshold"]),
        cv_policy=var["policy"],
        launcher=data["launcher"],
        timeout=float(data["timeout"]),
        retries=int(data["retries"]),
        results=data["results"],
        bundle=data["bundle"],
        exclusive=bool(data["exclusive"]),
        seed=int(data["seed"]),
        history=data.get("history"),
        variants=tuple(data.get("variants") or ()),
        disturbed=float(var["disturbed"]),
        extra={k: data.get(k, {}) for k in ("modeling", "overhead", "paper", "cluster", "pack")},
    )


def _check_schema(source: str, data: dict[str, Any]) -> None:
    """The config against the JSON schema (the best-matching error as one line), then its defaults filled in."""
    schema = _schema()
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(data), key=lambda e: (len(e.absolute_path), e.message))
    if errors:
        err = jsonschema.exceptions.best_match(errors)
        where = _path_text(err.absolute_path) or "(top level)"
        msg = err.message
        if err.validator == "additionalProperties" and err.absolute_path:
            msg = err.message.replace("Additional properties are not allowed", "unknown key(s)")
        elif err.validator == "additionalProperties":
            msg = err.message.replace("Additional properties are not allowed", "unknown top-level key(s)")
        elif err.validator == "oneOf":
            msg = "give either name (a built-in app) or command (your own app), not both or neither"
        raise ConfigError(source, where, msg)
    _fill_defaults(data, schema)


def _study(source: str, sname: str, sdef: dict[str, Any], data: dict[str, Any], top: tuple) -> Study:
    """One study of the config, checked; ``top`` is the config's (app, parameters, specs)."""
    base = f"studies.{sname}"
    if not safe_name(sname):
        raise ConfigError(source, base, f"study name {sname!r} may only use letters, digits, '-' and '_'")
    app, params, specs = top
    procs = data["processes"]
    if "app" in sdef or "parameters" in sdef:
        if "app" in sdef and "parameters" not in sdef:
            raise ConfigError(source, base, "a study with its own app needs its own parameters: too")
        app, params, specs = app_parameters(source, f"{base}.", sdef.get("app", app), sdef["parameters"], procs)
    _check_grid(source, base, sdef, params, specs)
    fixed = {k: v for k, v in params.items() if k not in sdef["vary"]}
    fixed.update(sdef.get("fixed", {}))
    design = parse_design(sdef.get("design", data["design"]), source,
                          f"{base}.design" if "design" in sdef else "design", sdef["vary"])
    if "name" in app:
        _check_builtin(source, base, Study(sname, dict(sdef["vary"]), fixed, 1,
                                           design=design if design.kind == "sparse" else Design()), app)
    where = f"{base}.repetitions" if "repetitions" in sdef else "repetitions"
    k_min, k_max, until = _repetitions(source, where, sdef.get("repetitions", data["repetitions"]), data)
    bare = Study(sname, {k: list(v) for k, v in sdef["vary"].items()}, fixed, k_min, app=app)
    validation, k_validation = _validation(source, f"{base}.validate", sdef.get("validate"), bare, specs)
    return Study(
        name=sname,
        vary={k: list(v) for k, v in sdef["vary"].items()},
        fixed=fixed,
        repetitions=k_min,
        max_repetitions=k_max,
        until=until,
        scaling=sdef.get("scaling", "auto"),
        description=sdef.get("description", ""),
        app=app,
        processes=procs,
        design=design,
        validation=validation,
        validation_repetitions=k_validation,
        decide=parse_decide(sdef.get("decide", data.get("decide")), source,
                            f"{base}.decide" if "decide" in sdef else "decide", data["bundle"]),
    )


def _variant_studies(source: str, variants: dict[str, dict[str, Any]], studies: list[Study]) -> list[Study]:
    """Paired measurement (config key ``variants:``): every study once per variant, named
    ``<study>@<variant>`` (layout.variant_study), its app changed as the variant says (``args`` merged
    into a built-in app's args, ``command`` replacing your own app's command)."""
    out = []
    for vname, change in variants.items():
        if not safe_name(vname):
            raise ConfigError(source, f"variants.{vname}", f"variant name {vname!r} may only use letters, digits, '-' and '_'")
    for study in studies:
        if variants and study.design.kind == "adaptive":  # its rounds would add other points to each variant
            raise ConfigError(source, f"studies.{study.name}.design", "adaptive designs cannot be measured with "
                              "variants: (each variant would get points of its own); use a full or sparse design")
        if variants and study.decide is not None:  # as would measuring until decided
            raise ConfigError(source, "decide", f"study {study.name}: measuring until decided cannot be combined with "
                              "variants: (each variant would get runs of its own, which no longer pair); give decide: false")
        for vname, change in variants.items():
            app = _copy(study.app)
            if "command" in change and "name" in app:
                raise ConfigError(source, f"variants.{vname}.command", f"study {study.name} runs the built-in app "
                                  f"{app['name']!r}: give its variant's options as args, not a command")
            if "args" in change and "name" not in app:
                raise ConfigError(source, f"variants.{vname}.args", f"study {study.name} runs your own app (command): "
                                  "give its variant as command, not args")
            if "args" in change:
                check_args(source, f"variants.{vname}.args", {"name": app["name"], "args": change["args"]})
                app["args"] = {**app.get("args", {}), **change["args"]}
            if "command" in change:
                check_template(source, f"variants.{vname}.command", change["command"],
                               [*study.fixed, *study.vary, "launcher"])
                app["command"] = change["command"]
            name = layout.variant_study(study.name, vname)
            validation = tuple(replace(c, study=name) for c in study.validation)
            out.append(replace(study, name=name, app=app, variant=vname, validation=validation))
    return out if variants else studies


def _check_grid(source: str, base: str, sdef: dict[str, Any], params: dict[str, Any],
                specs: dict[str, ParamSpec]) -> None:
    """A study's vary: and fixed: name known parameters, vary at least two distinct values each, and
    every value is one the parameter takes."""
    if not sdef["vary"]:
        raise ConfigError(source, f"{base}.vary", "empty grid: a study must vary at least one parameter")
    for part in ("vary", "fixed"):
        for pname in sdef.get(part, {}):
            if pname not in params:
                raise ConfigError(
                    source, f"{base}.{part}.{pname}",
                    f"unknown parameter {pname!r} (known: {', '.join(params)})",
                )
    for pname, values in sdef["vary"].items():
        where = f"{base}.vary.{pname}"
        if len(values) < 2:
            raise ConfigError(source, where, f"{values!r}: a varied parameter needs at least 2 values")
        if len(set(values)) != len(values):
            raise ConfigError(source, where, f"{values!r}: values repeat")
        for i, v in enumerate(values):
            check_value(source, f"{where}[{i}]", pname, v, specs.get(pname, DEFAULT_SPEC))
        if pname in sdef.get("fixed", {}):
            raise ConfigError(source, f"{base}.fixed.{pname}", "parameter is both varied and fixed")
    for pname, v in sdef.get("fixed", {}).items():
        check_value(source, f"{base}.fixed.{pname}", pname, v, specs.get(pname, DEFAULT_SPEC))


def _check_builtin(source: str, base: str, checked: Study, app: dict[str, Any]) -> None:
    """Every point a design may measure (adaptive rounds may add any point of the grid) is one the
    built-in app can run."""
    builtin = BUILTIN_APPS[app["name"]]
    for cfg in checked.configurations():
        try:
            builtin.check(cfg.params)
        except ValueError as exc:
            raise ConfigError(source, f"{base}", f"configuration {cfg.config_id}: {exc}") from None


def _check_launcher(source: str, launcher: str, parameters: dict[str, Any], studies: list[Study],
                    procs: str) -> None:
    """The launcher template names only known placeholders, and the process count where an app is launched."""
    names = {*parameters, *(n for st in studies for n in st.fixed), *(n for st in studies for n in st.vary)}
    p = PROCESS_COUNT  # the launcher's placeholder of the process count, whatever the parameter's name
    check_template(source, "launcher", launcher, ["mpiexec", p, *sorted(names - {p})])
    launched = any("name" in st.app or "{launcher}" in st.app.get("command", "") for st in studies)
    if "{" + p + "}" not in launcher and "{" + procs + "}" not in launcher and launched:
        raise ConfigError(source, "launcher", f"{launcher!r} does not contain {{{procs}}}: every run "
                                              "would start the same number of processes")


def _validation(source: str, where: str, value: Any, study: Study,
                specs: dict[str, ParamSpec]) -> tuple[tuple[Configuration, ...], int]:
    """A study's validation points (config key validate:, a list of points or {points, repetitions})
    and their repetitions: every point gives a value for every varied parameter and none other, a
    value valid for the app, and is not a point of the grid."""
    if value is None:
        return (), 0
    points, k = (value, study.repetitions) if isinstance(value, list) else (value["points"], value.get("repetitions", study.repetitions))
    prefix = where if isinstance(value, list) else f"{where}.points"
    grid = {c.config_id for c in study.grid()}
    out: list[Configuration] = []
    for i, point in enumerate(points):
        at = f"{prefix}[{i}]"
        for name in point:
            if name not in study.vary:
                raise ConfigError(source, f"{at}.{name}", f"{name!r} is not varied in study {study.name} "
                                                          f"(varied: {', '.join(study.vary)}); a point gives the varied parameters only")
        missing = [name for name in study.vary if name not in point]
        if missing:
            raise ConfigError(source, at, f"{point!r} gives no value for {', '.join(missing)} (a point gives every "
                                          f"varied parameter: {', '.join(study.vary)})")
        for name in study.vary:
            check_value(source, f"{at}.{name}", name, point[name], specs.get(name, DEFAULT_SPEC))
        cfg = study.point({name: point[name] for name in study.vary}, validation=True)
        if cfg.config_id in grid:
            raise ConfigError(source, at, f"{cfg.config_id} is a point of the study's grid (vary:); a validation "
                                          "point lies beyond or between its values and is never fitted")
        if any(c.config_id == cfg.config_id for c in out):
            raise ConfigError(source, at, f"{cfg.config_id} is given twice")
        if "name" in study.app:
            try:
                BUILTIN_APPS[study.app["name"]].check(cfg.params)
            except ValueError as exc:
                raise ConfigError(source, at, f"{cfg.config_id}: {exc}") from None
        out.append(cfg)
    return tuple(out), int(k)


def _check_keys(source: str, value: Any, path: list[Any]) -> None:
    """Every key of every mapping is text: YAML reads 1:, 1.5: or yes: as a number or a boolean."""
    if isinstance(value, dict):
        for key, sub in value.items():
            if not isinstance(key, str):
                raise ConfigError(source, _path_text(path) or "(top level)",
                                  f"key {key!r} is not text ({type(key).__name__}); quote it, e.g. '{key}':")
            _check_keys(source, sub, [*path, key])
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            _check_keys(source, sub, [*path, i])


def _check_modeling(source: str, modeling: dict[str, Any], known: list[str]) -> None:
    """modeling.log_factors and powers_only name parameters, none of them in both."""
    for key in ("log_factors", "powers_only"):
        for i, name in enumerate(modeling.get(key, [])):
            if name not in known:
                raise ConfigError(source, f"modeling.{key}[{i}]", f"unknown parameter {name!r} (known: {', '.join(known)})")
    both = sorted(set(modeling.get("log_factors", [])) & set(modeling.get("powers_only", [])))
    if both:
        raise ConfigError(source, "modeling", f"{', '.join(both)} in both log_factors and powers_only")


def _repetitions(source: str, where: str, value: Any, data: dict[str, Any]) -> tuple[int, int, dict[str, float]]:
    """(min, max, until) of a repetitions: value: a fixed k (under policy remeasure up to 2k), or
    {min, max, until} (until by default the CV threshold)."""
    var = data["variability"]
    if not isinstance(value, dict):
        k = int(value)  # the schema's integer: 3 or 3.0
        k_max = 2 * k if var["policy"] == "remeasure" else k
        until: dict[str, float] = {}
    else:
        k, k_max = int(value.get("min", 3)), int(value["max"])
        if k_max < k:
            raise ConfigError(source, f"{where}.max", f"{k_max} is below min {k}")
        until = dict(value.get("until") or {"cv": var["cv_threshold"]})
        for key, v in until.items():
            if not math.isfinite(v):
                raise ConfigError(source, f"{where}.until.{key}", f"{v!r} is not finite")
        if "level" in until and "ci" not in until:
            raise ConfigError(source, f"{where}.until.level", "only with ci (the confidence level of the median's interval)")
        if "ci" in until:
            until.setdefault("level", 0.95)
    if data["bundle"] == "repetitions" and k_max > k:
        what = "remeasure" if not isinstance(value, dict) else "adaptive repetitions"
        raise ConfigError(source, "variability.policy" if not isinstance(value, dict) else where,
                          f"{what} with bundle: repetitions would rerun whole bundles each round; "
                          "give a fixed number with policy keep-flagged or drop, or bundle: none")
    return k, k_max, until


# A sweep larger than this is refused: planning it alone would take Snakemake minutes and gigabytes
# (measured here: the paper's full ms2 config, 6,480 runs, plans in 10 CPU seconds with 235 MB, ~25 kB a run).
MAX_RUNS = 100_000


def _check_size(source: str, data: dict[str, Any]) -> None:
    """Refuse a grid too large to plan, before any configuration is built."""
    total, biggest = 0, ("", 0)
    for sname, sdef in data["studies"].items():
        n = _design_bound(source, sname, sdef, data) if sdef.get("vary") else 0
        where = f"studies.{sname}.repetitions" if "repetitions" in sdef else "repetitions"
        n *= _repetitions(source, where, sdef.get("repetitions", data["repetitions"]), data)[1]  # at most
        total += n
        biggest = max(biggest, (sname, n), key=lambda t: t[1])
    if total > MAX_RUNS:
        raise ConfigError(source, f"studies.{biggest[0]}", f"the sweep plans {total:,} runs ({biggest[1]:,} in "
                          f"this study), more than the {MAX_RUNS:,} one workflow may plan (Snakemake would need roughly "
                          f"{total * 25 / 2**20:.1f} GiB and {total / 6480 * 10 / 60:.0f} CPU minutes to plan them); use fewer "
                          f"values or split the config")


def _design_bound(source: str, sname: str, sdef: dict[str, Any], data: dict[str, Any]) -> int:
    """Configurations a study's design may measure."""
    where = f"studies.{sname}.design" if "design" in sdef else "design"
    return max_size(parse_design(sdef.get("design", data["design"]), source, where, sdef["vary"]), sdef["vary"])


def _check_paths(source: str, data: dict[str, Any]) -> None:
    """The results directory is a directory of its own; files the app writes stay inside the working
    directory or the results directory (the runner reads them)."""
    cwd = Path.cwd().resolve()
    results = data["results"]
    if not results.strip():
        raise ConfigError(source, "results", "empty: give a directory for everything the pipeline writes, e.g. results")
    res = Path(results).expanduser().resolve()
    if res == cwd or res in cwd.parents:
        raise ConfigError(source, "results", f"{results!r} is the working directory or above it; give a "
                                             "directory of its own, e.g. results")
    if res.exists() and not res.is_dir():
        raise ConfigError(source, "results", f"{results!r} exists and is not a directory")
    above = next((a for a in res.parents if a.exists()), None)
    if not res.exists() and above is not None and not above.is_dir():
        raise ConfigError(source, "results", f"{results!r} cannot be made: {str(above)!r} is a file, not a directory")
    apps = [("app", data["app"])] + [(f"studies.{n}.app", d["app"]) for n, d in data["studies"].items()
                                     if isinstance(d, dict) and "app" in d]
    for where, app in apps:
        template = app.get("timings_json")
        if template is None:
            continue
        example = Path(re.sub(r"\{[^{}]*\}", "1", template)).expanduser()
        path = (cwd / example).resolve()
        if not (path.is_relative_to(cwd) or path.is_relative_to(res)):
            raise ConfigError(source, f"{where}.timings_json", f"{template!r} is outside the working directory "
                                                               f"and the results directory {results!r}")


def load_config_file(path: str | Path) -> SweepConfig:
    """Read a YAML config file and validate it; every problem is a one-line ConfigError."""
    source = str(path)
    if not source.strip():
        raise ConfigError(repr(source), "", "empty path: give a config file, e.g. config/config.yaml")
    try:
        raw = Path(path).read_bytes()
        text = raw.decode("utf-8")
        data = yaml.load(text, Loader=_UniqueKeyLoader)
    except FileNotFoundError:
        raise ConfigError(source, "", "file not found") from None
    except IsADirectoryError:
        raise ConfigError(source, "", "is a directory, not a config file (give e.g. config/config.yaml)") from None
    except OSError as exc:
        raise ConfigError(source, "", f"cannot be read ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise ConfigError(source, f"line {line}", f"not UTF-8 text (byte {raw[exc.start]:#x}); save the file as UTF-8") from None
    except DuplicateKey as exc:
        raise ConfigError(source, f"line {exc.line}", f"key {exc.key!r} appears twice in the same mapping "
                                                      "(the first one would be lost)") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else ""
        raise ConfigError(source, where, f"not valid YAML ({getattr(exc, 'problem', exc)})") from None
    return load_config(data, source)


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, but a key that appears twice in one mapping is an error, not a silent loss."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                hashable = key in seen
            except TypeError:
                continue
            if hashable:
                raise DuplicateKey(key, key_node.start_mark.line + 1)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)
