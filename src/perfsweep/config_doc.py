"""config/README.md, written from the config schema, so that every key is described in one place.

    python -m perfsweep.config_doc > config/README.md      # tests/test_config_doc.py checks it is current
"""

from __future__ import annotations

import json
import sys
from typing import Any

from perfsweep.config import _schema

HEADER = """# perfsweep configuration

A config is one YAML file: the app, its parameters with their defaults, and named studies, each of
which varies some parameters over a grid. `perfsweep validate CONFIG` checks one (one line naming the
file, key and value on any mistake, exit 2); `config/config.yaml` is the embedded default and
`config/ms2-paper*.yaml` reproduce seed 001's studies.

This page is written from the schema (`python -m perfsweep.config_doc > config/README.md`); every key
of the file is listed, with its type, default and meaning.
"""


def _type(spec: dict[str, Any], schema: dict[str, Any]) -> str:
    if "$ref" in spec:
        name = spec["$ref"].rsplit("/", 1)[-1]
        return {"value": "number", "values": "list of numbers"}.get(name, f"[{name}](#{name})")
    if "enum" in spec:
        return " \\| ".join(f"`{v}`" for v in spec["enum"])
    kind = spec.get("type", "")
    if isinstance(kind, list):
        kind = " or ".join(kind)
    if kind == "object" and isinstance(spec.get("additionalProperties"), dict):
        return f"mapping of name to {_type(spec['additionalProperties'], schema)}"
    if kind == "array" and "items" in spec:
        return f"list of {_type(spec['items'], schema)}"
    return kind or "any"


def _text(value: Any) -> str:
    return " ".join(str(value).split()).replace("|", "\\|")


def _rows(props: dict[str, Any], required: list[str], schema: dict[str, Any], prefix: str = "") -> list[str]:
    rows = []
    for key, spec in props.items():
        default = f"`{json.dumps(spec['default'])}`" if "default" in spec else ("required" if key in required else "")
        bounds = [f"{op} {spec[k]}" for k, op in (("minimum", ">="), ("exclusiveMinimum", ">")) if k in spec]
        meaning = _text(spec.get("description", ""))
        rows.append(f"| `{prefix}{key}` | {_type(spec, schema)}{' ' + ', '.join(bounds) if bounds else ''} "
                    f"| {default} | {meaning} |")
        if spec.get("type") == "object" and "properties" in spec and not prefix:
            rows += _rows(spec["properties"], spec.get("required", []), schema, prefix=f"{key}.")
    return rows


def render(schema: dict[str, Any] | None = None) -> str:
    schema = schema or _schema()
    head = "| key | type | default | meaning |\n|---|---|---|---|"
    out = [HEADER, "## Top-level keys\n", head, *_rows(schema["properties"], schema.get("required", []), schema)]
    for name in ("app", "study", "repetitions", "design", "validate"):
        spec = schema["definitions"][name]
        about = _text(spec.get("description", ""))
        out += ["", f"## {name}", "", *([about, ""] if about else []), head,
                *_rows(spec["properties"], spec.get("required", []), schema)]
        if "oneOf" in spec:
            out += ["", "Exactly one of " + " or ".join(f"`{r['required'][0]}`" for r in spec["oneOf"]) + " is given."]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
