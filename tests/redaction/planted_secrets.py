"""Fake secrets with the real shapes, assembled at run time from a seeded generator and split
literals, so that no file holds anything a secret scanner would flag. Shared by the redaction
tests (test_redaction.py: text rules; test_redactor.py: redaction in use)."""

from __future__ import annotations

import base64
import random
import string

B62 = string.ascii_letters + string.digits
rng = random.Random(20261122)


def rand(n: int, alphabet: str = B62) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def b64url(n: int) -> str:
    return rand(n, B62 + "_-")


def jwt() -> str:
    header = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').rstrip(b"=").decode()
    payload = base64.urlsafe_b64encode(
        b'{"sub":"1234567890","name":"Jo","iat":1516239022}').rstrip(b"=").decode()
    return f"{header}.{payload}.{b64url(43)}"


def pem(label: str, lines: int = 6, sep: str = "\n") -> str:
    body = sep.join(rand(64, B62 + "+/") for _ in range(lines))
    return f"-----BEGIN {label}-----{sep}{body}{sep}{rand(20, B62)}=={sep}-----END {label}-----"


AWS_ACCESS = "AKIA" + "IOSFODNN7" + "EXAMPLE"
AWS_SESSION = "AS" + "IA" + rand(16, string.ascii_uppercase + string.digits)
AWS_SECRET = rand(18) + "/" + rand(12) + "+" + rand(8)  # 40 chars of the AWS alphabet
GH_CLASSIC = "gh" + "p_" + rand(36)
GH_OAUTH = "gh" + "o_" + rand(36)
GH_SERVER = "gh" + "s_" + rand(36)
GH_FINE = "github" + "_pat_" + rand(22) + "_" + rand(59)
OPENAI_LEGACY = "sk" + "-" + rand(20) + "T3Blbk" + "FJ" + rand(20)
OPENAI_PROJ = "sk" + "-proj-" + b64url(20) + "3" + b64url(100) + "aZ"
ANTHROPIC = "sk" + "-ant-" + "api03-" + b64url(93) + "AA"
SLACK_BOT = "xo" + "xb-" + rand(11, string.digits) + "-" + rand(13, string.digits) + "-" + rand(24)
SLACK_USER = "xo" + "xp-" + rand(11, string.digits) + "-" + rand(12, string.digits) + "-" + rand(32)
SLACK_HOOK = ("https://hooks.slack" + ".com/services/T" + rand(8, string.ascii_uppercase)
              + "/B" + rand(8, string.ascii_uppercase) + "/" + rand(24))
STRIPE_LIVE = "sk" + "_live_" + rand(24)
STRIPE_RESTRICTED = "rk" + "_test_" + rand(24)
GOOGLE = "AI" + "za" + "Sy" + b64url(33)
GITLAB = "gl" + "pat-" + b64url(20)
NPM = "np" + "m_" + rand(36)
HF = "h" + "f_" + rand(17, string.ascii_lowercase) + rand(17, string.ascii_uppercase)
PYPI = "pypi-" + "AgEIcHlwaS5vcmc" + b64url(60)
JWT = jwt()
SHOPIFY = "sh" + "pat_" + rand(32, "0123456789abcdef")
DATABRICKS = "da" + "pi" + rand(32, "0123456789abcdef")
TWILIO = "S" + "K" + rand(32, "0123456789abcdef")
AGE = "AGE-SECRET" + "-KEY-1" + rand(58, "023456789ACDEFGHJKLMNPQRSTUVWXYZ")
POSTMAN = "PM" + "AK-" + rand(24, "0123456789abcdef") + "-" + rand(34, "0123456789abcdef")
GENERIC = rand(32)
HEX_SECRET = rand(40, "0123456789abcdef")
AZURE_SECRET = rand(3) + "7" + "Q" + "~" + rand(34, B62 + "_~.-")
AZURE_STORAGE = base64.b64encode(bytes(rng.randrange(256) for _ in range(64))).decode()
SAS_SIG = base64.b64encode(bytes(rng.randrange(256) for _ in range(32))).decode().replace(
    "+", "%2B").replace("/", "%2F").replace("=", "%3D")
GOOGLE_OAUTH_SECRET = "GOC" + "SPX-" + b64url(28)
GOOGLE_OAUTH_TOKEN = "ya" + "29." + b64url(120)
TWILIO_SID = "A" + "C" + rand(32, "0123456789abcdef")
TWILIO_AUTH = "4f" + rand(28, "0123456789abcdef") + "a1"


FRAGMENTS = [
    "password", "PASSWORD", "token", "Token", "api_key", "apiKey", "secret", "auth",
    "Authorization", "key", "=", ":", ": ", " = ", "=>", '"', "'", "`", "\\", "\\n", "\n",
    "\r\n", " ", "\t", "export ", "--", "--token ", "-u ", "://", "@", "user:", "[REDACTED:",
    "[REDACTED:jwt]", "]", "Bearer ", "Basic ", "<", ">", "</", "${", "}", "(", ")", "[",
    "-----BEGIN RSA " + "PRIVATE KEY-----", "-----END RSA " + "PRIVATE KEY-----",
    "AKIA", "ghp_", "sk-",
    "sk-ant-", "eyJ", ".", "xoxb-", "AIza", "glpat-", "npm_", "hf_", "k_live_", "s", "r",
    GENERIC, HEX_SECRET, AWS_ACCESS, AWS_SECRET, GH_CLASSIC, JWT, OPENAI_PROJ, ANTHROPIC,
    rand(64, B62 + "+/"), "Tr0ub4dor&3x", "None", "changeme",
]
