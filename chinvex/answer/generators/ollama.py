"""Answers written by a local model through the official `ollama` client (`/api/chat`).

Host: context.json `answer.host`, else `OLLAMA_HOST`, else the client's default
(http://127.0.0.1:11434). Model: context.json `answer.model`, else DEFAULT_MODEL. Temperature 0
so the same evidence gives the same answer as far as the model allows.
"""

from __future__ import annotations

from chinvex.answer.base import GenerationRequest, Generated, GeneratorError
from chinvex.answer.prompt import SYSTEM_PROMPT, user_prompt

DEFAULT_MODEL = "llama3.2"
TIMEOUT_S = 300.0


class OllamaGenerator:
    name = "ollama"

    def __init__(self, model: str | None = None, host: str | None = None, timeout: float = TIMEOUT_S):
        self.model = model or DEFAULT_MODEL
        self.host = host
        self.timeout = timeout

    @classmethod
    def from_settings(cls, *, model: str | None, host: str | None) -> OllamaGenerator:
        return cls(model=model, host=host)

    def generate(self, request: GenerationRequest) -> Generated:
        try:
            import ollama
        except ImportError:
            raise GeneratorError(
                "the ollama generator needs the 'ollama' package (pip install 'chinvex[ollama]')"
            ) from None
        try:
            client = ollama.Client(host=self.host, timeout=self.timeout)
            response = client.chat(
                model=self.model,
                messages=[
                    {"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": user_prompt(request.query, request.evidence)},
                ],
                options={"temperature": 0},
            )
        except ollama.ResponseError as exc:
            hint = f" (try 'ollama pull {self.model}')" if exc.status_code == 404 else ""
            raise GeneratorError(f"Ollama error {exc.status_code}: {_short(exc.error)}{hint}") from None
        except ConnectionError as exc:
            raise GeneratorError(f"cannot reach Ollama at {self.host or 'OLLAMA_HOST/default'}: {_short(str(exc))}") from None
        except Exception as exc:  # httpx timeouts, malformed replies
            raise GeneratorError(f"Ollama request failed ({type(exc).__name__}: {_short(str(exc))})") from None
        message = getattr(response, "message", None)
        text = (getattr(message, "content", None) or "").strip()
        if not text:
            raise GeneratorError("the Ollama reply had no text")
        return Generated(text=text, model=getattr(response, "model", None) or self.model)


def _short(text: str, limit: int = 300) -> str:
    one = " ".join(str(text).split())
    return one if len(one) <= limit else one[: limit - 3] + "..."
