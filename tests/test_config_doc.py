"""config/README.md describes every key of the schema and is current (it is written from the schema)."""

from conftest import REPO
from perfsweep.config import _schema
from perfsweep.config_doc import render


def test_config_readme_is_written_from_the_schema():
    current = (REPO / "config" / "README.md").read_text()
    assert current == render(), "config/README.md is stale: python -m perfsweep.config_doc > config/README.md"


def test_every_key_is_listed_with_a_meaning():
    schema = _schema()
    text = render(schema)
    keys = [f"`{k}`" for k in schema["properties"]]
    keys += [f"`{k}`" for d in ("app", "study") for k in schema["definitions"][d]["properties"]]
    for sub in ("variability", "cluster", "modeling"):
        keys += [f"`{sub}.{k}`" for k in schema["properties"].get(sub, {}).get("properties", {})]
    rows = {line.split(" | ")[0].removeprefix("| "): line for line in text.splitlines() if line.startswith("| `")}
    for key in keys:
        assert key in rows, key
        assert not rows[key].rstrip().endswith("|  |"), f"{key} has no description in the schema"
