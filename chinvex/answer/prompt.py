"""What an LLM generator is told: the seed spec's rules (§3, "Prompt Enforcement") and the
evidence, each chunk under its id, so that citing `[chunk:<id>]` is copying, not recalling."""

from __future__ import annotations

from chinvex.answer.evidence import Evidence
from chinvex.answer.grounding import REFUSAL

SYSTEM_PROMPT = f"""You answer questions about a developer's own knowledge base (code, notes, chats,
agent sessions) using ONLY the retrieved chunks given to you.

You MUST cite chunk IDs for every factual claim. Use format: [chunk:abc123]
Every paragraph of your answer must contain at least one such citation, and you may only cite
ids of the chunks below.

If no retrieved chunk supports your answer, respond ONLY with:
"{REFUSAL}"

Do NOT invent, extrapolate, or use external knowledge. Only use the provided chunks.
Answer in 1 to 3 short sentences that say what the question asks, each ending with its
citation. For a question about code, name the identifier and its file. For a "when" question
about a conversation, give the date the words point to (yesterday = the day before the message).
Do not quote whole passages and do not add background the question did not ask for."""

MAX_CHUNK_CHARS = 6000


def evidence_block(evidence: list[Evidence]) -> str:
    parts = []
    for item in evidence:
        text = item.text if len(item.text) <= MAX_CHUNK_CHARS else item.text[:MAX_CHUNK_CHARS] + "\n[...]"
        stale = " (source changed since indexing)" if item.result.freshness.stale else ""
        parts.append(
            f"<chunk id=\"{item.chunk_id}\" source=\"{item.display_path()}\" "
            f"type=\"{item.source_type}\"{stale}>\n{text}\n</chunk>"
        )
    return "\n\n".join(parts)


def user_prompt(query: str, evidence: list[Evidence]) -> str:
    if not evidence:
        return f"Retrieved chunks: none.\n\nQuestion: {query}"
    return f"Retrieved chunks:\n\n{evidence_block(evidence)}\n\nQuestion: {query}"
