"""Record and prediction schemas: the JSON Schema files in this folder are the source of truth.

>>> from streamcue.schemas import validate
>>> validate({"qa_id": "q1", "responses": [{"t_s": 3.0, "text": "a cup"}]}, "interval_qa_prediction")
"""

from streamcue.schemas._validate import (
    ID_FIELDS,
    KINDS,
    SCHEMA_VERSION,
    FileReport,
    check,
    check_file,
    check_records,
    load_durations,
    load_schema,
    schema_registry,
    validate,
    validate_file,
)

__all__ = [
    "ID_FIELDS",
    "KINDS",
    "SCHEMA_VERSION",
    "FileReport",
    "check",
    "check_file",
    "check_records",
    "load_durations",
    "load_schema",
    "schema_registry",
    "validate",
    "validate_file",
]
