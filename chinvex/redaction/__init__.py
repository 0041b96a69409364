"""Secret redaction: every text is cleaned before it is chunked, stored, embedded or logged.

How secrets are found, and why, is told in `chinvex.redaction.text` (the detectors and the text
functions); `chinvex.redaction.structured` holds `Redactor` (structured values, URIs, counts).
This package re-exports both.
"""

from chinvex.redaction.structured import Redactor
from chinvex.redaction.text import (
    KINDS,
    REDACTION_VERSION,
    RedactionResult,
    redact,
    redact_uri,
    replace_spans,
    secret_spans,
)

__all__ = ["KINDS", "REDACTION_VERSION", "RedactionResult", "Redactor", "redact", "redact_uri",
           "replace_spans", "secret_spans"]
