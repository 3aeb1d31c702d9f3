"""The claims schema: the form every study's claims.json must have (package data
`reprolab/schemas/claims.schema.json`, so it is found outside the repository too)."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

CLAIMS_SCHEMA = "claims.schema.json"


@cache
def claims_schema() -> dict[str, Any]:
    """The JSON Schema of claims.json."""
    return json.loads(resources.files("reprolab.schemas").joinpath(CLAIMS_SCHEMA).read_text())


def validate_claims(document: Any, where: str) -> None:
    """Raise ValueError naming `where`, the path inside the document and what was expected,
    when `document` does not match the claims schema."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(claims_schema())
    error = jsonschema.exceptions.best_match(validator.iter_errors(document))
    if error is not None:
        path = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        raise ValueError(f"{where}: at {path}: {error.message}")
