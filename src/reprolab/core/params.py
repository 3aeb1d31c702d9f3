"""The one place that reads params.yaml.

params.yaml holds, per study, base values and a `scales:` map of overrides (`ci`, `paper`); the
smoke scale is the base itself. `study_params` merges the override of the active scale into the
base, recursively for mappings, replacing lists and scalars, deleting keys set to null, and drops
the `scales:` key, so the
values a job sees are exactly what the file says for that scale.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from reprolab.core.layout import known_families

SCALES = ("ci", "smoke", "paper")


class ParamsError(ValueError):
    """params.yaml (or a --config override) is malformed; the message names the key."""


def load_yaml(path: str | Path) -> dict[str, Any]:
    """Read a YAML mapping, naming the file when it is not one."""
    with open(path) as handle:
        data = yaml.safe_load(handle)
    if not isinstance(data, dict):
        raise ParamsError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    return data


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Return `base` updated by `override`: mappings merge key by key, anything else replaces.

    A `null` in the override removes the key, so a scale can drop an entry of the base (the paper
    scale replaces the smoke tasks by the real datasets this way).
    """
    merged = copy.deepcopy(dict(base))
    for key, value in override.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def study_params(config: Mapping[str, Any], section: str) -> dict[str, Any]:
    """The values of `section` at the active scale (`config['scale']`), without `scales:`."""
    if section not in config:
        raise ParamsError(f"params: no section '{section}'")
    values = dict(config[section])
    overrides = values.pop("scales", {}) or {}
    scale = config["scale"]
    return deep_merge(values, overrides.get(scale, {}))


GLOBAL_KEYS = ("scale", "seeds", "threads", "cpu_kernels", "studies")
"""Top-level keys that are not study sections; the top-level `scales:` map overrides them."""


def merged_top_level(config: Mapping[str, Any]) -> dict[str, Any]:
    """The global values (`seeds`, `threads`, ...) at the active scale."""
    base = {key: config[key] for key in GLOBAL_KEYS if key in config}
    overrides = (config.get("scales") or {}).get(config["scale"], {})
    return deep_merge(base, overrides)


def check_config(
    config: Mapping[str, Any], schema_path: str | Path, known_studies: Iterable[str]
) -> None:
    """Reject a bad configuration before any job starts.

    Snakemake's validate() has already checked the file as written against the schema; this adds
    what a schema cannot say: every id in `studies` must be a known study, and every scale's
    overrides of a study or preprocessing-family section, once merged into the base, must again
    satisfy the schema (so an override with an
    unknown key or an out-of-range value is caught too, naming the scale and the key).
    """
    known = sorted(known_studies)
    unknown = [s for s in config["studies"] if s not in known]
    if unknown:
        raise ParamsError(
            f"params key 'studies': unknown study id(s) {unknown}; known ids are {known}"
        )
    schema = load_yaml(schema_path)
    for scale in SCALES:
        scaled = {**config, "scale": scale}
        merged = merged_top_level(scaled)
        for section in [*config["studies"], *(f for f in known_families() if f in config)]:
            merged[section] = study_params(scaled, section)
        _check_schema(merged, _merged_schema(schema), where=f"params at scale '{scale}'")


def _merged_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The schema of a merged config: no `scales:` maps anywhere, all else as written."""
    trimmed = copy.deepcopy(dict(schema))
    trimmed["properties"].pop("scales", None)
    for section in trimmed["properties"].values():
        if isinstance(section, dict) and "properties" in section:
            section["properties"].pop("scales", None)
            section["required"] = [k for k in section.get("required", []) if k != "scales"]
    trimmed["required"] = [k for k in trimmed.get("required", []) if k in trimmed["properties"]]
    return trimmed


def _check_schema(instance: Any, schema: Mapping[str, Any], where: str) -> None:
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(instance), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        lines = []
        for error in errors:
            key = ".".join(str(p) for p in error.absolute_path) or "(top level)"
            lines.append(f"  key '{key}': {error.message}")
        raise ParamsError(f"{where}: invalid parameters\n" + "\n".join(lines))


def params_hash(values: Any) -> str:
    """sha256 of the canonical JSON of `values`: the identity of a parameter set."""
    import hashlib

    text = json.dumps(values, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()
