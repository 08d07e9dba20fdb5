"""The checks of one part of a config: an app (its parameters, options, command and patterns) and the
single fields (a number of a parameter's kind, a str.format template, a regular expression, a name).
Each raises ConfigError naming the file, the field and the value."""

from __future__ import annotations

import math
import re
import string
from typing import Any

from perfsweep.apps.metric_kinds import pattern_regex
from perfsweep.apps.registry import BUILTIN_APPS, PROCESSES, RUN_METRICS, ParamSpec
from perfsweep.apps.scorep import template_error
from perfsweep.errors import ConfigError
from perfsweep.values import format_value

DEFAULT_SPEC = ParamSpec(float, -math.inf, False, "parameter value")  # a user's parameter: any finite number


def check_value(source: str, where: str, name: str, value: Any, spec: ParamSpec) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(source, where, f"{value!r} is not a finite number ({spec.meaning})")
    if spec.kind is int and not float(value).is_integer():
        raise ConfigError(source, where, f"{value!r} is not a whole number ({spec.meaning})")
    if value < spec.minimum or (spec.exclusive and value == spec.minimum):
        op = ">" if spec.exclusive else ">="
        raise ConfigError(source, where, f"{value!r} is not {op} {format_value(spec.minimum)} ({spec.meaning})")


def app_parameters(source: str, prefix: str, app: dict[str, Any], parameters: dict[str, Any],
                   procs: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, ParamSpec]]:
    """Check an app's parameters (names, values); returns (app, parameters with p, value specs)."""
    parameters = dict(parameters)
    specs: dict[str, ParamSpec] = {}
    for key in ("time_pattern", "patterns", "timings_json") if "name" in app else ("args",):
        if key in app:
            raise ConfigError(source, f"{prefix}app.{key}", f"{app[key]!r}: only for your own app (command)"
                              if key != "args" else f"{app[key]!r}: only for a built-in app; put options into command")
    if "name" in app:
        specs = dict(BUILTIN_APPS[app["name"]].params)
        for name in parameters:
            if name != procs and name not in specs:
                raise ConfigError(
                    source, f"{prefix}parameters.{name}",
                    f"unknown parameter {name!r} for app {app['name']} (known: {', '.join([*specs, procs])})",
                )
        for name in specs:
            if name not in parameters:
                raise ConfigError(source, f"{prefix}parameters", f"missing parameter {name!r} of app {app['name']}")
        check_args(source, f"{prefix}app.args", app)
    parameters.setdefault(procs, 1)
    specs[procs] = PROCESSES
    for name, value in parameters.items():
        check_value(source, f"{prefix}parameters.{name}", name, value, specs.get(name, DEFAULT_SPEC))
    if "profile" in app:
        problem = ("only for your own app (command:)" if "name" in app
                   else template_error(app["profile"], list(parameters)))
        if problem:
            raise ConfigError(source, f"{prefix}app.profile", problem)
    if "command" in app:
        check_template(source, f"{prefix}app.command", app["command"], [*parameters, "launcher"])
        used = {f for _, f, _, _ in string.Formatter().parse(app["command"]) if f is not None}  # {n}, {n:>5}
        for name in parameters:
            if name != procs and name not in used:
                raise ConfigError(source, f"{prefix}app.command", f"parameter {name!r} does not appear as {{{name}}}")
        if "timings_json" in app:
            check_template(source, f"{prefix}app.timings_json", app["timings_json"], list(parameters))
        for key, pattern in [("time_pattern", app.get("time_pattern")), *(
                (f"patterns.{k}" + ("" if isinstance(v, str) else ".pattern"), pattern_regex(v))
                for k, v in (app.get("patterns") or {}).items())]:
            if pattern is not None:
                check_regex(source, f"{prefix}app.{key}", pattern)
        for name in app.get("patterns") or {}:
            if name in RUN_METRICS or not safe_name(name):
                raise ConfigError(source, f"{prefix}app.patterns.{name}",
                                  f"{name!r} cannot name a metric (reserved: {', '.join(RUN_METRICS)}; "
                                  "use letters, digits, '-' and '_')")
    return app, parameters, specs


def check_args(source: str, where: str, app: dict[str, Any]) -> None:
    """A built-in app's fixed options (app: args:) are ones it knows, with values of their kind."""
    builtin = BUILTIN_APPS[app["name"]]
    for name, value in (app.get("args") or {}).items():
        spec = builtin.options.get(name)
        if name in builtin.params:
            raise ConfigError(source, f"{where}.{name}", f"{name!r} is a parameter of app {app['name']}: give it "
                                                         "under parameters: or vary it in a study, not in args")
        if spec is None:
            raise ConfigError(source, f"{where}.{name}", f"unknown option {name!r} of app {app['name']} (known: "
                                                         f"{', '.join(builtin.options)})")
        if spec.kind is bool:
            if not isinstance(value, bool):
                raise ConfigError(source, f"{where}.{name}", f"{value!r} is not true or false ({spec.meaning})")
        elif spec.kind is str:
            if not isinstance(value, str) or not value.strip() or (spec.choices and value not in spec.choices):
                raise ConfigError(source, f"{where}.{name}", f"{value!r} is not " + (
                    f"one of {', '.join(spec.choices)}" if spec.choices else "a text") + f" ({spec.meaning})")
            try:
                spec.check(value)
            except ValueError as exc:
                raise ConfigError(source, f"{where}.{name}", str(exc)) from None
        else:
            check_value(source, f"{where}.{name}", name, value, spec)


def check_template(source: str, where: str, template: str, known: list[str]) -> None:
    """Every {placeholder} of a str.format template must be a known name (no attribute or index)."""
    try:
        fields = [f for _, f, spec, conv in string.Formatter().parse(template) if f is not None]
    except ValueError as exc:
        raise ConfigError(source, where, f"{template!r} is not a valid template ({exc}); write a literal"
                                         " brace as {{ or }}") from None
    for name in fields:
        if name not in known:
            raise ConfigError(source, where, f"unknown placeholder {{{name}}} in {template!r} (known: "
                                             f"{', '.join('{' + k + '}' for k in known)}; a literal brace is {{{{ or }}}})")


def check_regex(source: str, where: str, pattern: str) -> None:
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise ConfigError(source, where, f"{pattern!r} is not a valid regular expression ({exc})") from None
    if compiled.groups < 1:
        raise ConfigError(source, where, f"{pattern!r} has no group: put the number in parentheses, "
                                         r"e.g. 'time: ([0-9.eE+-]+)'")
    if compiled.groups > 1:
        raise ConfigError(source, where, f"{pattern!r} has {compiled.groups} groups: keep the parentheses around "
                                         "the number and make the others non-capturing, (?:...)")


def safe_name(name: str) -> bool:
    return bool(name) and all(ch.isalnum() or ch in "-_" for ch in name)
