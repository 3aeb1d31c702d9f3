"""The one place that reads params.yaml and checks it.

params.yaml holds, per study, base values and a `scales:` map of overrides (`ci`, `paper`); the
smoke scale is the base itself. `study_params` merges the override of the active scale into the
base, recursively for mappings, replacing lists and scalars, deleting keys set to null, and drops
the `scales:` key, so the values a job sees are exactly what the file says for that scale.

The JSON schemas of the file ship with the package (`schema_dir()`): `params.schema.yaml` for the
global keys, `families/<name>.schema.yaml` per preprocessing family, `studies/<id>.schema.yaml` per
study and `defs.schema.yaml` for what they share. `check_config` validates a configuration against
them, as written and at every scale, and names the file, the key and what was expected.

`load_yaml` reads a params file as plain data: it refuses YAML anchors, aliases and tags and
yte's `__use_yte__` (docs/architecture.md, What a params file may do).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import math
from collections.abc import Callable, Collection, Iterable, Mapping
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from reprolab.core import layout

SCALES = ("ci", "smoke", "paper")


class ParamsError(ValueError):
    """params.yaml (or a --config override) is malformed; the message names the key."""


class _PlainLoader(yaml.SafeLoader):
    """YAML's safe loader that also refuses anchors, aliases and explicit tags, the moment the
    parser meets one: a params file is plain data. An alias shares a node, so nested aliases
    (a "billion laughs" file) load in microseconds and then expand exponentially in whatever
    walks the values (the schema check, Snakemake's config merge); a tag asks for a type that
    is not a mapping, list, string, number, boolean or null."""

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        event = self.peek_event()
        refused = self.refusal(event)
        if refused:
            raise yaml.composer.ComposerError(None, None, refused, event.start_mark)
        return super().compose_node(parent, index)

    @staticmethod
    def refusal(event: yaml.Event) -> str | None:
        """Why `event` (the start of a node) is refused, or None when it is plain data."""
        if isinstance(event, yaml.AliasEvent) or event.anchor is not None:
            kind, sign = ("alias", "*") if isinstance(event, yaml.AliasEvent) else ("anchor", "&")
            return (
                f"YAML {kind} '{sign}{event.anchor}' is not allowed: params files use no anchors "
                "or aliases (write each value out)"
            )
        tag = getattr(event, "tag", None)
        if tag is None:
            return None
        return (
            f"YAML tag '{tag.replace('tag:yaml.org,2002:', '!!')}' is not allowed: a params file "
            "holds only mappings, lists, strings, numbers, booleans and nulls"
        )


FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""YAML's safe loader in C (libyaml) where PyYAML was built with it, as its wheels are: the same
data, read 6-7 times faster than by the pure-Python loader. The workflow reads params.yaml and
every schema each time Snakemake starts: an up-to-date `snakemake -n all` took 2.80 s with the
pure-Python loader and 2.45 s with this one."""


def _load_plain(text: bytes) -> Any:
    """`text` as plain data (`_PlainLoader`). libyaml reads it when its events hold no anchor,
    alias or tag; otherwise, or when libyaml finds a problem, `_PlainLoader` reads it again and
    raises with the pure-Python parser's words and marks, which the messages quote (libyaml words
    the same problems differently)."""
    try:
        events = yaml.parse(text, Loader=FAST_LOADER)
        plain = not any(
            _PlainLoader.refusal(event) for event in events if isinstance(event, yaml.NodeEvent)
        )
        if plain:
            return yaml.load(text, Loader=FAST_LOADER)
    except yaml.YAMLError:
        pass
    return yaml.load(text, Loader=_PlainLoader)


USE_YTE = "__use_yte__"
"""The top-level key that makes Snakemake's config loader evaluate the file as a yte template."""


def load_yaml(path: str | Path) -> dict[str, Any]:
    """Read a params file (or another YAML mapping of reprolab's) as plain data, or raise a
    ParamsError of one line naming the file and, for a YAML problem, the line and column.

    Refused: anything YAML cannot parse, anchors, aliases and tags (`_PlainLoader`), a
    document that is not a mapping, and a top-level `__use_yte__`, since Snakemake's loader
    would run the file's yte expressions as Python before any check.
    """
    try:
        with open(path, "rb") as handle:  # bytes: YAML decodes, so bad UTF-8 is a YAMLError
            data = _load_plain(handle.read())
    except yaml.YAMLError as exc:
        raise ParamsError(_yaml_problem(path, exc)) from None
    if not isinstance(data, dict):
        raise ParamsError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    if USE_YTE in data:
        raise ParamsError(
            f"{path}: top-level key '{USE_YTE}': reprolab's params files do not use yte "
            "templates; under Snakemake a params file is trusted like code (its loader evaluates "
            "yte expressions before any check), so remove the key and write the values out"
        )
    return data


def _yaml_problem(path: str | Path, exc: yaml.YAMLError) -> str:
    """What the YAML parser found, on one line: the file, the line and column (1-based) of the
    problem where the parser has them, what it was doing (`while scanning a simple key`) and
    the problem."""
    if not isinstance(exc, yaml.MarkedYAMLError):  # a decoding error: a position, no line
        return f"{path}: {' '.join(str(exc).split())}"
    mark = exc.problem_mark or exc.context_mark
    where = f", line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    what = ": ".join(part for part in (exc.context, exc.problem) if part)
    return f"{path}{where}: {' '.join(what.split())}"


def check_config_files(paths: Iterable[str | Path]) -> None:
    """Read every config file Snakemake loaded again through `load_yaml`, so that a run refuses
    what `reprolab params-check` refuses. Snakemake has already read them with its own loader,
    which evaluates a yte template, and merged them, which expands mappings nested through
    aliases (docs/architecture.md, What a params file may do): this stops the run, it cannot
    undo what happened before."""
    for path in paths:
        load_yaml(path)


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


def dataclass_values(
    cls: Any, section: Mapping[str, Any], where: str, exclude: Collection[str] = ()
) -> dict[str, Any]:
    """The values of `section` for the fields of dataclass `cls` other than `exclude`, for a
    class built from a params section: a missing key is a KeyError and an unknown one a
    ValueError, each naming `where` and the keys."""
    names = [f.name for f in dataclasses.fields(cls) if f.name not in exclude]
    missing = [name for name in names if name not in section]
    if missing:
        raise KeyError(f"{where}: missing key(s) {missing}")
    unknown = sorted(set(section) - set(names))
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {unknown} (the keys are {names})")
    return {name: section[name] for name in names}


def study_params(config: Mapping[str, Any], section: str) -> dict[str, Any]:
    """The values of `section` at the active scale (`config['scale']`), without `scales:`."""
    if section not in config:
        raise ParamsError(f"params: no section '{section}'")
    values = dict(config[section])
    overrides = values.pop("scales", {}) or {}
    scale = config["scale"]
    return deep_merge(values, overrides.get(scale, {}))


GLOBAL_KEYS = ("scale", "seeds", "tuning_seeds", "threads", "cpu_kernels", "studies")
"""Top-level keys that are not study sections; the top-level `scales:` map overrides them."""


def merged_top_level(config: Mapping[str, Any]) -> dict[str, Any]:
    """The global values (`seeds`, `threads`, ...) at the active scale."""
    base = {key: config[key] for key in GLOBAL_KEYS if key in config}
    overrides = (config.get("scales") or {}).get(config["scale"], {})
    return deep_merge(base, overrides)


TOP_SCHEMA = "params.schema.yaml"
"""The schema of the whole file, relative to `schema_dir()`; it refers to the others."""


def schema_dir() -> Traversable:
    """The folder of the packaged JSON schemas (package data of `reprolab`), found through
    importlib.resources, so the workflow and the installed `reprolab` command both read it from
    any working directory."""
    return resources.files("reprolab") / "schemas"


def schema_uri(path: str = TOP_SCHEMA) -> str:
    """The URI of the packaged schema `path` (relative to `schema_dir()`): its file's location.

    The schemas are registered under these URIs, so their relative `$ref`s resolve to the
    package's own files; nothing is ever fetched.
    """
    return f"{Path(str(schema_dir())).absolute().as_uri()}/{path}"


def section_schema_path(section: str) -> str:
    """Path of a study's or a preprocessing family's schema, relative to `schema_dir()`."""
    kind = "families" if section in layout.known_families() else "studies"
    return f"{kind}/{section}.schema.yaml"


def _packaged_schemas() -> dict[str, Any]:
    """Path (relative to `schema_dir()`) -> contents of every `*.schema.yaml` under it."""
    found: dict[str, Any] = {}
    folders: list[tuple[str, Traversable]] = [("", schema_dir())]
    while folders:
        prefix, folder = folders.pop()
        for entry in folder.iterdir():
            if entry.is_dir():
                folders.append((f"{prefix}{entry.name}/", entry))
            elif entry.name.endswith(".schema.yaml"):
                text = entry.read_text(encoding="utf-8")
                found[prefix + entry.name] = yaml.load(text, Loader=FAST_LOADER)
    return found


@functools.cache
def schema_registry() -> Registry:
    """Every packaged schema, registered at its `schema_uri` as a 2020-12 schema; the top-level
    schema gets one property `<id>: {$ref: studies/<id>.schema.yaml}` per study schema file.

    Each file's `$schema` key is left out: following a `$ref` into a schema that names its
    `$schema`, jsonschema switches to the standard validator class of that draft, which would
    drop ParamsValidator's integer check."""
    schemas = _packaged_schemas()
    top = schemas[TOP_SCHEMA]
    for path in sorted(schemas):
        if path.startswith("studies/"):
            study = path.removeprefix("studies/").removesuffix(".schema.yaml")
            top["properties"].setdefault(study, {"$ref": path})
    registry: Registry = Registry()
    for path, contents in schemas.items():
        contents.pop("$schema", None)
        resource = DRAFT202012.create_resource(contents)
        registry = registry.with_resource(schema_uri(path), resource)
    return registry.crawl()


def load_schema(path: str = TOP_SCHEMA) -> dict[str, Any]:
    """The contents of a packaged schema file (`path` relative to `schema_dir()`), as
    registered (without `$schema`)."""
    return copy.deepcopy(schema_registry().contents(schema_uri(path)))


def _is_integer(checker: Any, instance: Any) -> bool:
    """JSON schema's `integer` without its floats: the standard accepts 1.0, but YAML's `1.0` is
    a float to Python, and a float seed or thread count fails only later (a seed of 1.0 names
    `seed1.0` files that no rule writes; torch.set_num_threads refuses 2.0)."""
    return isinstance(instance, int) and not isinstance(instance, bool)


def _is_finite_number(checker: Any, instance: Any) -> bool:
    """JSON schema's `number` without YAML's `.inf` and `.nan`: infinity passes `minimum` and
    `exclusiveMinimum`, and NaN passes every bound, so either would reach a job as a valid
    MPP, learning rate or threshold."""
    return (
        isinstance(instance, int | float)
        and not isinstance(instance, bool)
        and math.isfinite(instance)
    )


ParamsValidator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine_many(
        {"integer": _is_integer, "number": _is_finite_number}
    ),
)
"""The 2020-12 validator whose `integer` is a Python int (`_is_integer`) and whose `number` is
finite (`_is_finite_number`)."""


def _validator(path: str, studies: Iterable[str] = ()) -> jsonschema.Validator:
    """A validator of the packaged schema `path` that also requires the sections of `studies`."""
    schema = {
        "$ref": schema_uri(path),
        "required": list(studies),
        "description": "every study listed in `studies` needs its section",
    }
    return ParamsValidator(schema, registry=schema_registry())


def check_config(
    config: Mapping[str, Any],
    known_studies: Iterable[str] | None = None,
    *,
    source: str = "params.yaml",
) -> None:
    """Reject a bad configuration before any job starts; a ParamsError names `source`, every bad
    key and what it should be.

    Checks, in order: every id in `studies` is a known study (`known_studies`, by default the
    study packages) with a schema file; the configuration as written satisfies the packaged
    schema, where the sections of the listed studies are required (a study not listed needs
    none); every scale's values, the `scales:` overrides deep-merged into the base of the
    global keys, of each listed study and of each preprocessing family, satisfy it again (so an
    override with an unknown key or an out-of-range value is named with its scale and the
    override that set it); and at every scale no seed is also a tuning seed. Cross-field
    checks the schema cannot express stay in each study's `check_params`, which its rule file
    calls.
    """
    known = sorted(layout.known_studies() if known_studies is None else known_studies)
    studies = config.get("studies")
    if isinstance(studies, list):
        unknown = [s for s in studies if s not in known]
        if unknown:
            raise ParamsError(
                f"{source}: key 'studies': unknown study id(s) {unknown}; known ids are {known}"
            )
    else:
        studies = []
    for study in studies:
        if schema_uri(section_schema_path(study)) not in schema_registry():
            raise ParamsError(
                f"{source}: key 'studies': study '{study}' has no schema "
                f"{section_schema_path(study)} in {schema_dir()}"
            )
    validator = _validator(TOP_SCHEMA, studies)
    _raise_errors(validator.iter_errors(config), f"{source}: invalid parameters")
    families = [f for f in layout.known_families() if f in config]
    for scale in SCALES:
        scaled = {**config, "scale": scale}
        merged = merged_top_level(scaled)
        for section in [*studies, *families]:
            merged[section] = study_params(scaled, section)
        _raise_errors(
            validator.iter_errors(merged),
            f"{source}: invalid parameters at scale '{scale}' (its `scales:` overrides merged)",
            origin=functools.partial(_override_origin, config, scale),
        )
        shared = sorted(set(merged["seeds"]) & set(merged["tuning_seeds"]))
        if shared:
            raise ParamsError(
                f"{source}: keys 'seeds' and 'tuning_seeds' share {shared} at scale '{scale}': "
                "tuning seeds must never appear in a table"
            )


def check_section(values: Mapping[str, Any], section: str) -> None:
    """Check a study's or a preprocessing family's values at one scale (as `study_params` returns
    them) against its schema; a ParamsError names `<section>.<key>`."""
    path = section_schema_path(section)
    if schema_uri(path) not in schema_registry():
        raise ParamsError(f"params section '{section}': no schema {path} in {schema_dir()}")
    errors = _validator(path).iter_errors(values)
    _raise_errors(errors, f"params section '{section}': invalid parameters", prefix=[section])


def _raise_errors(
    errors: Iterable[jsonschema.ValidationError],
    headline: str,
    prefix: list[str] | None = None,
    origin: Callable[[list[str]], str | None] | None = None,
) -> None:
    """Raise one ParamsError listing `errors` (none: return), each with its key path, the
    validator's message, the description of the schema that failed when it explains the
    expected value, and (`origin`) where in the file a merged value came from."""
    lines = []
    for error in sorted(errors, key=lambda e: [str(p) for p in e.absolute_path]):
        path = [*(prefix or []), *(str(p) for p in error.absolute_path)]
        line = f"  key '{'.'.join(path) or '(top level)'}': {error.message}"
        schema = error.schema if isinstance(error.schema, dict) else {}
        hint = schema.get("description")
        if hint and "properties" not in schema:  # not the description of a whole mapping
            line += f" ({' '.join(hint.split())})"
        where = origin(path) if origin else None
        if where:
            line += f" [set by {where}]"
        lines.append(line)
    if lines:
        raise ParamsError(headline + "\n" + "\n".join(lines))


def _override_origin(config: Mapping[str, Any], scale: str, path: list[str]) -> str | None:
    """Where in the file the override of `scale` sets the value at `path` of the merged
    configuration (`<section>.scales.<scale>.<key>`, `scales.<scale>.<key>` for a global key),
    or None when the value comes from the base."""
    if not path:
        return None
    if path[0] in GLOBAL_KEYS:
        overrides, where, rest = config.get("scales"), ["scales", scale], path
    else:
        section = config.get(path[0])
        overrides = section.get("scales") if isinstance(section, Mapping) else None
        where, rest = [path[0], "scales", scale], path[1:]
    node = overrides.get(scale) if isinstance(overrides, Mapping) else None
    if node is None:
        return None
    for key in rest:
        if not isinstance(node, Mapping):
            break  # the override replaced the whole list or value that holds `key`
        if key not in node:
            return None
        node = node[key]
        where.append(key)
    return ".".join(where)


def params_hash(values: Any) -> str:
    """sha256 of the canonical JSON of `values`: the identity of a parameter set."""
    import hashlib

    text = json.dumps(values, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()
