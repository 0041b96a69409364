"""Provider pairs of the planted corpus: an id and its secret given together, in prose, chat
turns, tables, CSV, commit messages, code and command lines (issue 40).

The secret half has no vendor prefix that gives it away (an AWS secret access key, a Twilio
auth token, an Azure storage key, a Slack signing secret): only the id beside it, or the words
around it, say what it is. Values are generated at run time from a seeded generator and every
prefix is assembled from pieces, so this file holds nothing a secret scanner would flag.

`PAIR_FORMS` maps a corpus kind to (a maker of its values, its shapes). A maker returns the
values a shape's template names: `s` is the secret, `others` lists the other names that are
secrets too (an access key id goes with its secret).
"""

from __future__ import annotations

import base64
import string
import uuid
from collections.abc import Callable
from urllib.parse import quote

from secret_corpus import B62, HEX, _Gen

UPPER_DIGITS = string.ascii_uppercase + string.digits
Values = dict[str, str]
Shapes = tuple[tuple[str, str], ...]


def _hex_with_digits_and_letters(g: _Gen, n: int) -> str:
    while True:
        value = g.s(n, HEX)
        if sum(ch.isdigit() for ch in value) >= 4 and sum(ch.isalpha() for ch in value) >= 4:
            return value


def _uuid(g: _Gen) -> str:
    return str(uuid.UUID(int=g.rng.getrandbits(128)))


def aws_values(g: _Gen) -> Values:
    secret = g.mixed(18) + "/" + g.mixed(12) + "+" + g.mixed(8)
    return {"id": g.pick(["AK" + "IA", "AS" + "IA"]) + g.s(16, UPPER_DIGITS), "s": secret,
            "others": "id"}


def aws_name_values(g: _Gen) -> Values:
    """A pair that can stand in a file name: a secret without `/`."""
    return {"id": "AK" + "IA" + g.s(16, UPPER_DIGITS), "s": g.mixed(40), "others": "id"}


AWS_SHAPES: Shapes = (
    ("prose_with_secret", "The AWS break-glass key is {id} with secret {s}."),
    ("second_sentence", "The break-glass key id is {id}. Its secret is {s}. Rotate it monthly."),
    ("secret_first", "{s} goes with {id} (prod account)"),
    ("slash_pair", "creds: {id} / {s}"),
    ("no_secret_word", "use {id} and {s} for the backup bucket"),
    ("two_lines", "access key\n{id}\n{s}\n"),
    ("credentials_csv", "User name,Password,Access key ID,Secret access key\nci-bot,,{id},{s}"),
    ("markdown_table", "| user | access key | secret |\n|---|---|---|\n| ci-bot | {id} | {s} |"),
    ("chat_turn", "User: here are the prod creds {id} {s} - can you set up the CLI?\n"
                  "Assistant: Run `aws configure` and paste them when asked."),
    ("chat_json", '{{"role": "user", "content": "aws key {id} secret {s}"}}'),
    ("commit_message", "chore: rotate break-glass creds\n\nThe old key {id} (secret {s}) is "
                       "revoked."),
    ("aws_configure_prompt", "AWS Access Key ID [None]: {id}\nAWS Secret Access Key [None]: {s}\n"
                             "Default region name [None]: eu-west-1"),
    ("boto3_positional", 'boto3.client("s3", "eu-west-1", None, True, None, "{id}", "{s}")'),
    ("sts_json", '{{"Credentials": {{"AccessKeyId": "{id}", "SecretAccessKey": "{s}", '
                 '"SessionToken": "x"}}}}'),
    ("yaml_pair", "aws:\n  access_key: {id}\n  secret: {s}\n"),
)
AWS_NAME_SHAPES: Shapes = (
    ("file_name", "ls ~/Downloads\n{id}-{s}.csv  report.pdf"),
    ("folder_name", "/mnt/backup/creds-{id}-{s}/restore.sh"),
)


def azure_values(g: _Gen) -> Values:
    secret = g.mixed(3) + g.s(1, string.digits) + "Q" + "~" + g.mixed(34, B62 + "_~.-")
    return {"tenant": _uuid(g), "client": _uuid(g), "s": secret}


AZURE_SHAPES: Shapes = (
    ("prose", "The deploy app is {client} in tenant {tenant}; its client secret is {s}."),
    ("cli_login", "az login --service-principal -u {client} -p {s} --tenant {tenant}"),
    ("env", "AZURE_CLIENT_ID={client}\nAZURE_TENANT_ID={tenant}\nAZURE_CLIENT_SECRET={s}"),
    ("json_sp", '{{"appId": "{client}", "password": "{s}", "tenant": "{tenant}"}}'),
    ("chat_turn", "User: the service principal {client} / {s} stopped working, why?"),
    ("markdown_table", "| app id | secret |\n|---|---|\n| {client} | {s} |"),
    ("bare_in_log", "WARN auth failed for client {client} using {s}"),
)


def azure_storage_values(g: _Gen) -> Values:
    key = base64.b64encode(bytes(g.rng.randrange(256) for _ in range(64))).decode()
    return {"account": "prod" + g.word(), "s": key}


AZURE_STORAGE_SHAPES: Shapes = (
    ("prose", "The storage account {account} key is {s} (key1)."),
    ("cli", "az storage blob list --account-name {account} --account-key {s} -c logs"),
    ("connection_string", "DefaultEndpointsProtocol=https;AccountName={account};AccountKey={s};"
                          "EndpointSuffix=core.windows.net"),
    ("chat_turn", "User: key1 for {account} is {s} - is that enough for the upload script?"),
    ("two_lines", "storage account: {account}\n{s}"),
)


def azure_sas_values(g: _Gen) -> Values:
    sig = quote(base64.b64encode(bytes(g.rng.randrange(256) for _ in range(32))).decode(), safe="")
    return {"account": "prod" + g.word(), "s": sig}


AZURE_SAS_SHAPES: Shapes = (
    ("blob_url", "https://{account}.blob.core.windows.net/logs/app.log?sv=2022-11-02&ss=b"
                 "&srt=o&sp=r&se=2026-12-01T00:00:00Z&spr=https&sig={s}"),
    ("curl", "curl 'https://{account}.blob.core.windows.net/c?restype=container&sv=2021-08-06"
             "&sp=rl&sig={s}'"),
    ("sas_only", "SAS token: sv=2022-11-02&ss=bfqt&srt=sco&sp=rwdlacupx&se=2026-01-01&sig={s}"),
)


def gcp_values(g: _Gen) -> Values:
    client = f"{g.s(12, string.digits)}-{g.s(32, string.ascii_lowercase + string.digits)}"
    return {"client": client + ".apps.googleusercontent.com",
            "s": "GOC" + "SPX-" + g.mixed(28, B62 + "_-")}


GCP_SHAPES: Shapes = (
    ("prose", "OAuth client {client}, secret {s}."),
    ("client_json", '{{"installed": {{"client_id": "{client}", "client_secret": "{s}"}}}}'),
    ("chat_turn", "User: my google oauth client is {client} and the secret {s}"),
    ("flags", "gcloud-helper --client-id {client} --client-secret {s}"),
)


def gcp_token_values(g: _Gen) -> Values:
    return {"s": "ya" + "29." + g.mixed(140, B62 + "_-")}


GCP_TOKEN_SHAPES: Shapes = (
    ("cli_output", "$ gcloud auth print-access-token\n{s}\n$"),
    ("header", "curl -H \"Authorization: Bearer {s}\" https://storage.googleapis.com/b"),
    ("prose", "the access token was {s} but it expired after an hour"),
)


def twilio_values(g: _Gen) -> Values:
    return {"sid": "AC" + g.s(32, HEX), "s": _hex_with_digits_and_letters(g, 32)}


TWILIO_SHAPES: Shapes = (
    ("prose", "Account SID {sid} Auth Token {s}"),
    ("client_code", 'client = Client("{sid}", "{s}")'),
    ("curl_user", "curl -X POST https://api.twilio.com/2010-04-01/Accounts/{sid}/Messages.json "
                  "-u {sid}:{s}"),
    ("chat_turn", "User: twilio sid {sid} token {s}, the SMS test fails with 20003"),
    ("markdown_table", "| account sid | auth token |\n|---|---|\n| {sid} | {s} |"),
    ("env", "TWILIO_ACCOUNT_SID={sid}\nTWILIO_AUTH_TOKEN={s}"),
)


def twilio_api_values(g: _Gen) -> Values:
    return {"key": "S" + "K" + g.s(32, HEX), "s": g.mixed(32), "others": "key"}


TWILIO_API_SHAPES: Shapes = (
    ("prose", "API key {key} with secret {s}"),
    ("client_code", 'Client("{key}", "{s}", account_sid)'),
)


def databricks_values(g: _Gen) -> Values:
    return {"host": f"https://dbc-{g.s(8, HEX)}-{g.s(4, HEX)}.cloud.databricks.com",
            "client": _uuid(g), "s": "do" + "se" + _hex_with_digits_and_letters(g, 32)}


DATABRICKS_SHAPES: Shapes = (
    ("prose", "Service principal {client} on {host} has the OAuth secret {s}."),
    ("cfg", "[prod]\nhost = {host}\nclient_id = {client}\nclient_secret = {s}"),
    ("chat_turn", "User: sp {client} secret {s} gets a 401 from {host}"),
    ("env", "export DATABRICKS_HOST={host}\nexport DATABRICKS_CLIENT_SECRET={s}"),
)


def databricks_pat_values(g: _Gen) -> Values:
    return {"host": f"https://adb-{g.s(16, string.digits)}.azuredatabricks.net",
            "s": "da" + "pi" + g.s(32, HEX)}


DATABRICKS_PAT_SHAPES: Shapes = (
    ("prose", "workspace {host} token {s}"),
    ("cfg", "[DEFAULT]\nhost = {host}\ntoken = {s}"),
)


def slack_app_values(g: _Gen) -> Values:
    return {"id": f"{g.s(13, string.digits)}.{g.s(13, string.digits)}",
            "s": _hex_with_digits_and_letters(g, 32)}


SLACK_APP_SHAPES: Shapes = (
    ("prose", "Slack app: Client ID {id}, Client Secret {s}."),
    ("signing_secret", "The signing secret of the slack app is {s}"),
    ("markdown_table", "| Client ID | Signing Secret |\n|---|---|\n| {id} | {s} |"),
)


def github_app_values(g: _Gen) -> Values:
    return {"id": "Iv1." + g.s(16, HEX), "s": _hex_with_digits_and_letters(g, 40)}


GITHUB_APP_SHAPES: Shapes = (
    ("prose", "GitHub App client {id}, client secret {s}"),
    ("chat_turn", "User: the oauth app secret is {s} (client {id})"),
    ("env", "GITHUB_CLIENT_ID={id}\nGITHUB_CLIENT_SECRET={s}"),
)


def stripe_values(g: _Gen) -> Values:
    return {"pk": "pk" + "_live_" + g.mixed(24), "s": g.pick(["s", "r"]) + "k_live_" + g.mixed(24)}


STRIPE_SHAPES: Shapes = (
    ("secret_for", "the secret for stripe is {s}"),
    ("publishable_then_secret", "Stripe keys: publishable {pk}, secret {s}"),
    ("chat_turn", "User: I pasted {s} into the dashboard, is that the right stripe key?"),
)


PAIR_FORMS: dict[str, tuple[Callable[[_Gen], Values], Shapes]] = {
    "aws_pair": (aws_values, AWS_SHAPES),
    "aws_pair_in_name": (aws_name_values, AWS_NAME_SHAPES),
    "azure_client_pair": (azure_values, AZURE_SHAPES),
    "azure_storage_pair": (azure_storage_values, AZURE_STORAGE_SHAPES),
    "azure_sas": (azure_sas_values, AZURE_SAS_SHAPES),
    "gcp_oauth_pair": (gcp_values, GCP_SHAPES),
    "gcp_access_token": (gcp_token_values, GCP_TOKEN_SHAPES),
    "twilio_pair": (twilio_values, TWILIO_SHAPES),
    "twilio_api_pair": (twilio_api_values, TWILIO_API_SHAPES),
    "databricks_sp_pair": (databricks_values, DATABRICKS_SHAPES),
    "databricks_pat_pair": (databricks_pat_values, DATABRICKS_PAT_SHAPES),
    "slack_app_pair": (slack_app_values, SLACK_APP_SHAPES),
    "github_app_pair": (github_app_values, GITHUB_APP_SHAPES),
    "stripe_pair": (stripe_values, STRIPE_SHAPES),
}
