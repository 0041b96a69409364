"""Issue 40: every form of the planted corpus is redacted, prose included, and ordinary prose
near the words that name secrets is kept.

A form is a kind of secret in one context shape (`tests/secret_corpus.py`: `every_form`): env
dumps, YAML, JSON, code, curl, prose sentences, a second sentence after a key id, chat turns,
Markdown tables, commit messages, file and folder names, URLs with credentials, headers, PEM
blocks, JWTs and provider pairs (an id given with its secret). Values are generated at run time
from seeded generators, so nothing here is a real-looking literal.
"""

from __future__ import annotations

import hashlib
import uuid

import pytest
from secret_corpus import every_form, leaked

from chinvex.redaction import redact

MIN_FORMS = 150

# The context shapes issue 40 names, as they appear in form names (`kind/shape`).
REQUIRED_SHAPES = (
    "prose", "second_sentence", "secret_for", "chat_turn", "chat_json", "markdown_table",
    "table_header_column", "commit_message", "commit_remove", "file_name", "folder_name",
    "credentials_csv", "slash_pair", "env", "yaml", "cli", "header", "url_token_user",
)
PROVIDER_PAIRS = ("aws_pair", "azure_client_pair", "azure_storage_pair", "gcp_oauth_pair",
                  "twilio_pair", "databricks_sp_pair", "slack_app_pair", "github_app_pair")


def test_the_corpus_has_at_least_150_distinct_forms_of_every_shape():
    items = every_form()
    forms = {item.form for item in items}
    assert len(forms) == len(items), "every item is one form"
    assert len(forms) >= MIN_FORMS, len(forms)
    shapes = " ".join(forms)
    missing = [shape for shape in REQUIRED_SHAPES if shape not in shapes]
    assert missing == [], missing
    kinds = {item.kind for item in items}
    assert set(PROVIDER_PAIRS) <= kinds, set(PROVIDER_PAIRS) - kinds
    assert {"private_key", "jwt", "auth_header", "password_in_url"} <= kinds
    assert every_form() == items, "the corpus must be the same on every run"


@pytest.mark.parametrize("seed", [20261140, 7, 40])
def test_every_form_is_redacted_and_redaction_is_stable(seed: int):
    leaks = []
    for item in every_form(seed):
        result = redact(item.text)
        if leaked(result.text, item):
            leaks.append((item.form, result.text[:160]))
            continue
        assert "[REDACTED:" in result.text, item.form
        assert result.text.count("\n") == item.text.count("\n"), item.form
        assert redact(result.text).text == result.text, item.form
    assert leaks == []


def _sha1(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


PROSE_WITHOUT_SECRETS = [
    f"The cache key is {_sha1('a')} and the token count is 4096.",
    f"Fixed the token refresh in commit {_sha1('b')}.",
    f"The idempotency key {uuid.UUID(int=12345)} was reused, so the API returned 409.",
    "The secret is kept in 1Password; ask ops for the vault name.",
    "Rotate the API key every 90 days and store it in the secrets manager.",
    "The password must be at least 12 characters and the passphrase at least 5 words.",
    "The key fingerprint is SHA256:nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8 for host db01.",
    "We moved the signing key to KMS; the old key id was 3f9a2c1d-4e5b-6a7c-8d9e-0f1a2b3c4d5e.",
    '{"max_output_tokens": 12000, "call_id": "call_AvUkcEDS8tiUyr1JW8hw2z43"}',
    '{"type": "token_usage_record", "payload": {"thread_id": '
    f'"{uuid.UUID(int=99)}", "turn_id": "{uuid.UUID(int=98)}"}}}}',
    "| setting | value |\n|---|---|\n| token_ttl | 3600 |\n| api_key_env | OPENAI_API_KEY |",
    "Use the session token from `gh auth token`, not a personal access token.",
    "data = 'aGVsbG8gd29ybGQsIHRoaXMgaXMgbm90IGEga2V5'  # the key of the sample, decoded",
    "Authorization header: Bearer <token>; the token expires in 1 hour.",
    "The secret rotation job runs at 02:00 UTC (cron 0 2 * * *).",
    "SSH public key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGmCmNq1n9Yw7w0hQ5k5vY6o dev@laptop",
]


@pytest.mark.parametrize("text", PROSE_WITHOUT_SECRETS)
def test_prose_near_secret_words_without_a_secret_is_kept(text: str):
    result = redact(text)
    assert result.text == text and result.counts == {}
