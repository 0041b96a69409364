"""Secrets without a vendor prefix in the places people write them down: prose sentences, chat
turns, Markdown tables, commit messages, code, command lines, headers and file and folder
names (issue 40). Only the words beside the value ("secret", "API key", "token", "password")
say what it is.

Values are generated at run time from a seeded generator, so this file holds nothing a secret
scanner would flag. `PROSE_FORMS` maps a corpus kind to (a maker of its values, its shapes);
the templates name the secret `s`.
"""

from __future__ import annotations

import string
from collections.abc import Callable

from secret_corpus import B62, HEX, _Gen

Values = dict[str, str]
Shapes = tuple[tuple[str, str], ...]


def generic_values(g: _Gen) -> Values:
    return {"s": g.mixed(g.pick([32, 40]), g.pick([B62, B62 + "_-"]))}


GENERIC_SHAPES: Shapes = (
    ("secret_for", "the secret for the billing webhook is {s}"),
    ("api_key_for", "the API key for the billing service is {s}"),
    ("api_key_colon", "API key: {s}"),
    ("api_key_parens", "API key (prod): {s}"),
    ("value_before_keyword", "Use {s} as the signing key."),
    ("keyword_then_value", "my openai key {s} stopped working"),
    ("changed_to", "The webhook secret changed to {s} yesterday."),
    ("em_dash", "Key for the staging bucket \u2014 {s}"),
    ("arrow", "secret \u2192 {s}"),
    ("here_is", "Here's the token, keep it safe\n\n{s}\n"),
    ("second_sentence", "I made a new API key for the importer. It is {s} and expires in May."),
    ("chat_user_turn", "**User:** my api key is {s}, why do I get 401?\n\n**Assistant:** The key "
                       "may be revoked."),
    ("chat_json", '{{"role": "user", "content": "token {s} - does it have the read scope?"}}'),
    ("chat_quote", "> token {s}\n\nThat token is for the staging API only."),
    ("chat_transcript", "[10:42] alice: new deploy key {s}\n[10:43] bob: thanks"),
    ("table_name_value", "| Name | Value |\n|---|---|\n| STRIPE_SECRET_KEY | {s} |"),
    ("table_header_column", "| service | api key | owner |\n|---|---|---|\n| billing | {s} | ops |"),
    ("table_second_row", "| service | token |\n|---|---|\n| search | n/a |\n| billing | {s} |"),
    ("commit_remove", "chore: remove hardcoded token {s} from settings.py"),
    ("commit_revert", 'Revert "add api key {s}"\n\nThis reverts commit 9fceb02d.'),
    ("commit_body", "fix(ci): new deploy token\n\nOld token {s} leaked in a log; rotated."),
    ("dockerfile_env", "ENV API_TOKEN {s}"),
    ("php_define", "define('API_KEY', '{s}');"),
    ("nested_json", '{{"credentials": {{"key": "{s}"}}}}'),
    ("query_key", "https://api.example.com/v2/search?key={s}&q=x"),
    ("gh_secret_set", "gh secret set STRIPE_KEY --body {s}"),
    ("kubectl_literal", "kubectl create secret generic app --from-literal=api-key={s}"),
    ("docker_env_flag", "docker run -e API_TOKEN={s} registry.local/app:1.4"),
    ("toml", '[billing]\nsecret = "{s}"'),
    ("ini_section", "[stripe]\nsecret_key = {s}"),
    ("yaml_list", "webhooks:\n  - url: https://hooks.internal/a\n    secret: {s}"),
    ("xml_attribute", '<add key="ApiKey" value="{s}" />'),
    ("csharp_const", 'const string ApiKey = "{s}";'),
    ("rust_let", 'let api_key = "{s}";'),
    ("go_short_assign", 'token := "{s}"'),
    ("js_header", "fetch(url, {{ headers: {{ 'X-Api-Key': '{s}' }} }})"),
    ("cookie_header", "Cookie: theme=dark; session_token={s}; lang=en"),
    ("auth_header_custom", "X-Auth-Token: {s}"),
    ("url_token_user", "git clone https://{s}@git.internal/team/repo.git"),
    ("url_token_oauth_basic", "https://{s}:x-oauth-basic@github.example.com/org/repo"),
    ("log_line", "2026-11-02T10:00:01Z DEBUG using api_key={s} for tenant acme"),
    ("python_kwarg", "client = Client(api_key='{s}', timeout=30)"),
    ("file_name", "ls ~/keys\napi-key-{s}.txt  notes.md"),
    ("folder_name", "/srv/app/token={s}/config.yaml"),
)


def hex_values(g: _Gen) -> Values:
    while True:
        value = g.s(g.pick([32, 40, 64]), HEX)
        if sum(ch.isdigit() for ch in value) >= 4 and sum(ch.isalpha() for ch in value) >= 4:
            return {"s": value}


HEX_SHAPES: Shapes = (
    ("secret_is", "the shared secret is {s}"),
    ("api_key_for", "Datadog API key for prod: {s}"),
    ("token_then_value", "webhook token {s} (rotate monthly)"),
    ("chat_turn", "User: my mailgun api key is {s}, is that the private one?"),
    ("table", "| vendor | api key |\n|---|---|\n| datadog | {s} |"),
    ("env", "DD_API_KEY={s}"),
)


def password_values(g: _Gen) -> Values:
    return {"s": g.human_password(), "user": g.pick(["deploy", "admin", "svc-backup"])}


PASSWORD_SHAPES: Shapes = (
    ("password_for_is", "the root password for db01 is {s}"),
    ("passphrase_for", "The passphrase for the backup drive is {s}"),
    ("password_then_value", "user {user}, password {s}"),
    ("chat_turn", "User: I changed my password to {s} but the login still fails"),
    ("second_sentence", "The vault has a new master password. It is {s} until Friday."),
    ("table_name_value", "| Name | Value |\n|---|---|\n| DB_PASSWORD | {s} |"),
    ("table_header_column", "| host | user | password |\n|---|---|---|\n| db01 | {user} | {s} |"),
    ("commit_message", "fix: stop logging the admin password ({s}) on startup"),
    ("yaml_nested", "database:\n  user: {user}\n  password: {s}"),
    ("ini", "[mysql]\nuser = {user}\npassword = {s}"),
    ("requests_auth_tuple", 'requests.get(url, auth=("{user}", "{s}"))'),
    ("sshpass", "sshpass -p '{s}' ssh {user}@db01"),
    ("german", "Passwort: {s}"),
    ("login_line", "login: {user} / password: {s}"),
)


def name_password_values(g: _Gen) -> Values:
    """A password that can stand in a file name (no `/`, no `#`)."""
    return {"s": g.human_password().replace("/", "").replace("#", "")}


NAME_PASSWORD_SHAPES: Shapes = (
    ("file_name", "ls\npassword={s}.txt  readme.md"),
    ("folder_name", "/home/dev/pw-{s}/notes.md"),
)


def url_values(g: _Gen) -> Values:
    return {"s": g.mixed(20, string.ascii_letters + string.digits + "-_")}


URL_SHAPES: Shapes = (
    ("ftp", "ftp://backup:{s}@ftp.internal/dump.sql.gz"),
    ("smtp", "SMTP_URL=smtps://mailer:{s}@smtp.internal:465"),
    ("proxy", "export https_proxy=http://proxyuser:{s}@proxy.corp:3128"),
    ("jdbc", "jdbc:postgresql://db.internal:5432/app?user=app&password={s}"),
)


PROSE_FORMS: dict[str, tuple[Callable[[_Gen], Values], Shapes]] = {
    "generic_secret_prose": (generic_values, GENERIC_SHAPES),
    "hex_secret_prose": (hex_values, HEX_SHAPES),
    "password_prose": (password_values, PASSWORD_SHAPES),
    "password_in_name": (name_password_values, NAME_PASSWORD_SHAPES),
    "url_credentials": (url_values, URL_SHAPES),
}
