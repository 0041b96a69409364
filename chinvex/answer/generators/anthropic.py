"""Answers written by Claude through the official `anthropic` SDK (Messages API).

Credentials and endpoint are the SDK's: `ANTHROPIC_API_KEY` (or `ANTHROPIC_AUTH_TOKEN`), and
`ANTHROPIC_BASE_URL` or context.json `answer.host` for a proxy or gateway. The model is
context.json `answer.model`, else DEFAULT_MODEL. Whatever goes wrong (SDK missing, no key,
network, an error status, a reply without text) becomes a GeneratorError with one clear line,
which the service reports as GENERATOR_ERROR; the grounding gate then judges the text as it
judges every generator's. `auto` (generators/__init__.py) chooses this generator when
`has_credentials()` and the configured model, if any, `is_claude_model`.
"""

from __future__ import annotations

import os

from chinvex.answer.base import GenerationRequest, Generated, GeneratorError
from chinvex.answer.prompt import SYSTEM_PROMPT, user_prompt

DEFAULT_MODEL = "claude-sonnet-5-5"
"""A current Claude model id of the installed SDK's list; context.json `answer.model` overrides."""
MAX_TOKENS = 1024
TIMEOUT_S = 120.0


class AnthropicGenerator:
    name = "anthropic"

    def __init__(self, model: str | None = None, base_url: str | None = None, timeout: float = TIMEOUT_S):
        self.model = model or DEFAULT_MODEL
        self.base_url = base_url
        self.timeout = timeout

    @classmethod
    def from_settings(cls, *, model: str | None, host: str | None) -> AnthropicGenerator:
        """context.json `answer.host` is the API's base URL (a proxy or gateway)."""
        return cls(model=model, base_url=host)

    def generate(self, request: GenerationRequest) -> Generated:
        try:
            import anthropic
        except ImportError:
            raise GeneratorError(
                "the anthropic generator needs the 'anthropic' package (pip install 'chinvex[anthropic]')"
            ) from None
        if not has_credentials():
            raise GeneratorError("the anthropic generator needs ANTHROPIC_API_KEY in the environment")
        try:
            client = anthropic.Anthropic(base_url=self.base_url, timeout=self.timeout, max_retries=1)
            message = client.messages.create(
                model=self.model,
                max_tokens=MAX_TOKENS,
                system=SYSTEM_PROMPT,
                messages=[{"role": "user", "content": user_prompt(request.query, request.evidence)}],
            )
        except anthropic.APIStatusError as exc:
            raise GeneratorError(f"Anthropic API error {exc.status_code}: {_short(exc.message)}") from None
        except anthropic.APIConnectionError as exc:
            raise GeneratorError(f"cannot reach the Anthropic API ({_short(str(exc))})") from None
        except anthropic.AnthropicError as exc:
            raise GeneratorError(f"Anthropic SDK error: {_short(str(exc))}") from None
        except (TypeError, ValueError) as exc:  # e.g. credentials the SDK cannot use
            raise GeneratorError(f"Anthropic SDK error: {_short(str(exc))}") from None
        texts = [getattr(block, "text", "") for block in (message.content or []) if getattr(block, "type", "") == "text"]
        text = "\n\n".join(t for t in texts if t).strip()
        if not text:
            raise GeneratorError(f"the Anthropic reply had no text (stop reason: {message.stop_reason})")
        return Generated(text=text, model=message.model or self.model)


CREDENTIAL_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE")
"""The environment variables through which the SDK finds credentials."""


def has_credentials() -> bool:
    """Whether the environment gives the SDK credentials to use: the generator refuses to run
    without them, and `auto` only chooses Anthropic with them."""
    return any((os.environ.get(name) or "").strip() for name in CREDENTIAL_VARIABLES)


def is_claude_model(model: str) -> bool:
    """A model id of Anthropic's (`claude-…`), as opposed to a local model's name."""
    return model.strip().lower().startswith("claude")


def _short(text: str, limit: int = 300) -> str:
    one = " ".join(str(text).split())
    return one if len(one) <= limit else one[: limit - 3] + "..."
