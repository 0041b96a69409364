"""A planted-secret corpus: fake credentials of the real shapes in the places they turn up.

Used by tests/redaction/test_redaction.py (recall >= 0.98, false positives), tests/redaction/test_secrets_never_stored.py
and bench/redaction.py. Everything is generated from a seeded generator and every vendor prefix is
assembled from pieces, so this file holds no literal a secret scanner would flag and the same
seed always gives the same corpus. No value is a real key.

Each `Planted` is one secret in one context line (an env dump, a YAML or JSON config, code, a
curl command, prose, a file name...). `CORPUS_KINDS` are the kinds planted: vendor tokens by
their shape, and passwords and secrets that only their name or the words around them give
away.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

B62 = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
WORDS = ("staging", "orange", "harbor", "falcon", "copper", "winter", "maple", "rocket",
         "velvet", "summit", "cobalt", "prairie", "lantern", "meadow", "tundra", "quartz")


@dataclass(frozen=True)
class Planted:
    """One secret in one context. `form` names the context shape (`kind/shape`); `others` are
    more secrets of the same text that must go too (the access key id beside its secret)."""

    kind: str
    text: str
    secret: str
    form: str = ""
    others: tuple[str, ...] = ()


class _Gen:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def s(self, n: int, alphabet: str = B62) -> str:
        return "".join(self.rng.choice(alphabet) for _ in range(n))

    def mixed(self, n: int, alphabet: str = B62) -> str:
        """Random, with a character of each class the alphabet has (upper, lower, digit), as
        real keys of that length have."""
        classes = [c for c in (str.isupper, str.islower, str.isdigit)
                   if any(c(ch) for ch in alphabet)]
        while True:
            value = self.s(n, alphabet)
            if all(any(c(ch) for ch in value) for c in classes):
                return value

    def pick(self, items):
        return self.rng.choice(items)

    def word(self) -> str:
        return self.pick(WORDS)

    def human_password(self) -> str:
        """Passwords people type: words with digits and symbols in them."""
        w1, w2 = self.word(), self.word()
        n = self.rng.randrange(2, 999)
        shapes = (
            f"hunter{n % 10}{w1}{n}",
            f"{w1}{n % 10}{w2}",
            f"{w1.capitalize()}-{n}-{w2}",
            f"hunter2-{w1}-{n}",
            f"{w1[:3]}{n}{w2[:4]}!",
            f"{w1.capitalize()}{n}#{w2}",
            self.mixed(12, B62 + "!#%^*&"),
            f"{w1}_{n}!{w2.upper()}",
        )
        return self.pick(shapes)


def _jwt(g: _Gen) -> str:
    header = base64.urlsafe_b64encode(
        json.dumps({"alg": g.pick(["HS256", "RS256", "ES256"]), "typ": "JWT"}).encode()
    ).rstrip(b"=").decode()
    payload = base64.urlsafe_b64encode(
        json.dumps({"sub": g.s(8, HEX), "iat": 1700000000 + g.rng.randrange(10**7)}).encode()
    ).rstrip(b"=").decode()
    return f"{header}.{payload}.{g.s(43, B62 + '_-')}"


def _pem(g: _Gen, label: str) -> str:
    body = "\n".join(g.s(64, B62 + "+/") for _ in range(g.rng.randrange(4, 9)))
    head = "-----BEGIN " + label + "-----"
    return f"{head}\n{body}\n{g.s(20)}==\n{head.replace('BEGIN', 'END')}"


# Each maker returns (secret, contexts): the contexts are templates with `{s}` for the secret.
Maker = Callable[[_Gen], tuple[str, tuple[str, ...]]]

_TOKEN_PLACES = (
    "export {name}={s}",
    "{name}={s}",
    '{{"{name_lower}": "{s}"}}',
    "{name_lower}: {s}",
    "here is the token I used: {s} - why does the API say 401?",
    "`{s}`",
    "ls ~/backups\nprod-{s}.env  notes.txt",
    "curl -H 'Authorization: Bearer {s}' https://api.example.net/v1/me",
    "{name} = \"{s}\"",
    "Error: invalid credentials {s} (status 403)",
)


def _token(name: str, make: Callable[[_Gen], str]) -> Maker:
    def maker(g: _Gen) -> tuple[str, tuple[str, ...]]:
        return make(g), _TOKEN_PLACES
    maker.env_name = name  # type: ignore[attr-defined]
    return maker


def _aws_secret(g: _Gen) -> tuple[str, tuple[str, ...]]:
    secret = g.mixed(g.rng.randrange(10, 30)) + "/" + g.mixed(9) + "+"
    secret = (secret + g.mixed(40))[:40]
    return secret, (
        "export AWS_SECRET_ACCESS_KEY={s}",
        "aws_secret_access_key = {s}",
        '{{"AccessKeyId": "AS' + 'IA' + g.s(16, string.ascii_uppercase + string.digits)
        + '", "SecretAccessKey": "{s}"}}',
        "my aws secret is {s}",
        "AWS secret key:\n{s}",
        "the aws secret for staging ({s}) stopped working",
        "  secret_access_key: \"{s}\"",
        "aws configure set aws_secret_access_key {s}",
    )


def _password(g: _Gen) -> tuple[str, tuple[str, ...]]:
    pw = g.human_password()
    return pw, (
        "password={s}",
        "DB_PASSWORD={s}",
        "Staging DB password: {s}",
        "the staging password is {s}",
        '  password: "{s}"',
        '{{"user": "deploy", "password": "{s}"}}',
        "mysql -u root --password {s} -h db.internal",
        "PGPASSWORD={s} psql -h db -U app",
        "<password>{s}</password>",
        "smtp_pass = '{s}'",
        "curl -u admin:{s} https://ci.internal/api/json",
    )


def _url_password(g: _Gen) -> tuple[str, tuple[str, ...]]:
    pw = g.human_password().replace("#", "")
    return pw, (
        "DATABASE_URL=postgres://app:{s}@db.internal:5432/app",
        "redis://:{s}@cache.internal:6379/0",
        "amqp://worker:{s}@mq.internal/vhost",
        "git clone https://deploy:{s}@git.internal/team/repo.git",
        "mongodb+srv://svc:{s}@cluster0.example.net/db",
    )


def _generic_secret(g: _Gen) -> tuple[str, tuple[str, ...]]:
    secret = g.mixed(g.pick([24, 32, 40]), g.pick([B62, B62 + "_-", HEX + "ABCDEF"]))
    return secret, (
        "API_KEY={s}",
        'export SERVICE_TOKEN="{s}"',
        '{{"client_id": "web", "client_secret": "{s}"}}',
        "  apiKey: {s}",
        "SECRET_KEY = '{s}'",
        'headers["X-Api-Key"] = "{s}"',
        "mytool login --api-key {s} --verbose",
        "GET /callback?code=1&access_token={s}&state=x",
        "<apiToken>{s}</apiToken>",
        "webhook_secret: {s}",
        "DefaultEndpointsProtocol=https;AccountName=prod;AccountKey={s}==;",
    )


def _auth_header(g: _Gen) -> tuple[str, tuple[str, ...]]:
    if g.rng.random() < 0.5:
        user = g.word()
        secret = base64.b64encode(f"{user}:{g.human_password()}".encode()).decode()
        return secret, ("curl -H 'Authorization: Basic {s}' https://api.internal",
                        '{{"headers": {{"Authorization": "Basic {s}"}}}}')
    secret = g.mixed(32, B62 + "-_")
    return secret, ("Authorization: Bearer {s}", '{{"Authorization": "Token {s}"}}',
                    "proxy-authorization: Bearer {s}")


def _private_key(g: _Gen) -> tuple[str, tuple[str, ...]]:
    key = _pem(g, g.pick(["RSA ", "OPENSSH ", "EC ", "", "ENCRYPTED "]) + "PRIVATE KEY")
    return key, ("$ cat ~/.ssh/id_rsa\n{s}\n$ ls", '{{"private_key": {s_json}}}')


def _slack_webhook(g: _Gen) -> tuple[str, tuple[str, ...]]:
    url = ("https://hooks.slack" + ".com/services/T" + g.s(8, string.ascii_uppercase + string.digits)
           + "/B" + g.s(8, string.ascii_uppercase + string.digits) + "/" + g.mixed(24))
    return url, ("curl -X POST {s} -d '{{\"text\": \"deploy done\"}}'", "SLACK_WEBHOOK_URL={s}",
                 "alerts go to {s}")


_KINDS: dict[str, Maker] = {
    "aws_access_key": _token("AWS_ACCESS_KEY_ID", lambda g: g.pick(["AK" + "IA", "AS" + "IA"])
                             + g.mixed(16, string.ascii_uppercase + string.digits)),
    "aws_secret_key": _aws_secret,
    "github_token": _token("GITHUB_TOKEN", lambda g: "gh" + g.pick("pousr") + "_" + g.mixed(36)),
    "github_fine_grained": _token("GH_TOKEN", lambda g: "github" + "_pat_" + g.mixed(22) + "_"
                                  + g.mixed(59)),
    "openai_key": _token("OPENAI_API_KEY", lambda g: "sk" + g.pick(["-proj-", "-", "-svcacct-"])
                         + g.mixed(48, B62 + "_-")),
    "anthropic_key": _token("ANTHROPIC_API_KEY", lambda g: "sk" + "-ant-api03-"
                            + g.mixed(93, B62 + "_-") + "AA"),
    "slack_token": _token("SLACK_BOT_TOKEN", lambda g: "xo" + "x" + g.pick("bpa") + "-"
                          + g.s(11, string.digits) + "-" + g.s(12, string.digits) + "-" + g.mixed(24)),
    "slack_webhook": _slack_webhook,
    "stripe_key": _token("STRIPE_SECRET_KEY", lambda g: g.pick(["s", "r"]) + "k_"
                         + g.pick(["live", "test"]) + "_" + g.mixed(24)),
    "google_api_key": _token("GOOGLE_API_KEY", lambda g: "AI" + "za" + g.mixed(35, B62 + "_-")),
    "gitlab_token": _token("GITLAB_TOKEN", lambda g: "gl" + "pat-" + g.mixed(20, B62 + "_-")),
    "npm_token": _token("NPM_TOKEN", lambda g: "np" + "m_" + g.mixed(36)),
    "huggingface_token": _token("HF_TOKEN", lambda g: "h" + "f_" + g.mixed(34)),
    "pypi_token": _token("PYPI_TOKEN", lambda g: "py" + "pi-AgEIcHlwaS5vcmc" + g.mixed(60, B62 + "_-")),
    "sendgrid_key": _token("SENDGRID_API_KEY", lambda g: "S" + "G." + g.mixed(22, B62 + "_-")
                           + "." + g.mixed(43, B62 + "_-")),
    "digitalocean_token": _token("DIGITALOCEAN_TOKEN", lambda g: "do" + "p_v1_" + g.s(64, HEX)),
    "shopify_token": _token("SHOPIFY_ACCESS_TOKEN", lambda g: "sh" + "pat_" + g.s(32, HEX)),
    "databricks_token": _token("DATABRICKS_TOKEN", lambda g: "da" + "pi" + g.s(32, HEX)),
    "twilio_key": _token("TWILIO_API_KEY", lambda g: "S" + "K" + g.s(32, HEX)),
    "age_secret_key": _token("SOPS_AGE_KEY", lambda g: "AGE-SECRET" + "-KEY-1"
                             + g.s(58, "023456789ACDEFGHJKLMNPQRSTUVWXYZ")),
    "jwt": _token("ID_TOKEN", _jwt),
    "private_key": _private_key,
    "password_in_url": _url_password,
    "password_assignment": _password,
    "secret_assignment": _generic_secret,
    "auth_header": _auth_header,
}

CORPUS_KINDS = tuple(_KINDS)


def planted(seed: int = 20261125, per_kind: int = 10) -> list[Planted]:
    """`per_kind` secrets of every kind in `CORPUS_KINDS`, each in one of its contexts (taken
    in turn, so every context is used)."""
    g = _Gen(seed)
    out: list[Planted] = []
    for kind, maker in _KINDS.items():
        env_name = getattr(maker, "env_name", "SECRET")
        for i in range(per_kind):
            secret, places = maker(g)
            template = places[i % len(places)]
            text = template.format(s=secret, s_json=json.dumps(secret), name=env_name,
                                   name_lower=env_name.lower())
            out.append(Planted(kind, text, secret, f"{kind}/{i % len(places)}"))
    return out


def every_form(seed: int = 20261140) -> list[Planted]:
    """One secret in every distinct form (kind x context shape): each context of each kind of
    `planted`, then the provider pairs (tests/secret_corpus_pairs.py) and the prose, chat,
    table, commit, code and file-name forms (tests/secret_corpus_prose.py)."""
    from secret_corpus_pairs import PAIR_FORMS
    from secret_corpus_prose import PROSE_FORMS

    g = _Gen(seed)
    out: list[Planted] = []
    for kind, maker in _KINDS.items():
        env_name = getattr(maker, "env_name", "SECRET")
        seen: set[str] = set()
        for _ in range(40):  # a maker may offer other contexts for other values (auth_header)
            secret, places = maker(g)
            fresh = [(i, t) for i, t in enumerate(places) if f"{i}:{len(places)}" not in seen]
            if not fresh:
                continue
            i, template = fresh[0]
            seen.add(f"{i}:{len(places)}")
            text = template.format(s=secret, s_json=json.dumps(secret), name=env_name,
                                   name_lower=env_name.lower())
            out.append(Planted(kind, text, secret, f"{kind}/{i}:{len(places)}"))
    for kind, (values, shapes) in {**PAIR_FORMS, **PROSE_FORMS}.items():
        for shape, template in shapes:
            v = values(g)
            others = tuple(v[name] for name in v.get("others", "").split() if name)
            out.append(Planted(kind, template.format(**v), v["s"], f"{kind}/{shape}", others))
    return out


def leaked(redacted: str, item: Planted) -> bool:
    """Is the secret, or one of the others that go with it, still in `redacted`? A PEM key is
    checked by its body lines (its BEGIN/END lines are not secret)."""
    if item.kind == "private_key":
        return any(line in redacted for line in item.secret.splitlines()
                   if line and not line.startswith("-----"))
    return any(secret in redacted for secret in (item.secret, *item.others))


def false_positive_lines(paths: list[Path]) -> tuple[int, list[str]]:
    """Redaction of real files that hold no secret: (lines read, every line redaction changed,
    as "file: line"). The false-positive rate of tests/redaction/test_redaction.py and bench/redaction.py."""
    from chinvex.redaction import redact

    lines = 0
    flagged: list[str] = []
    for path in paths:
        text = path.read_text(errors="replace")
        lines += text.count("\n") + 1
        result = redact(text)
        if result.counts:
            flagged += [f"{path.name}: {a.strip()[:110]}" for a, b in
                        zip(text.splitlines(), result.text.splitlines()) if a != b]
    return lines, flagged
