"""Validate a `check --json` report against the JSON Schema the package ships."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

import jsonschema


@cache
def _validator() -> jsonschema.protocols.Validator:
    text = resources.files("ortdoctor.report").joinpath("check.schema.json").read_text(encoding="utf-8")
    schema = json.loads(text)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def validate(report: dict[str, Any]) -> dict[str, Any]:
    """``report`` unchanged when it matches the schema; an AssertionError naming every mismatch when not."""
    errors = sorted(_validator().iter_errors(report), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors)
    return report
