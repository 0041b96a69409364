"""What the extension puts into the user's side of the API history besides the user's words.

Each user message carries an `<environment_details>` block (open tabs, time, cost, mode, model,
the workspace listing) that is dropped from the text but read for the working directory, the
mode and the model. Tool results arrive as text headed `[tool for 'arg'] Result:`; the user's
own words are wrapped in `<task>`, `<feedback>`, `<user_message>` or `<answer>`; the rest is
the extension's boilerplate (resumption notices, todo-list reminders), dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_ENV = re.compile(r"<environment_details>(.*?)(?:</environment_details>|\Z)", re.S)
_CWD = re.compile(r"^# Current (?:Workspace|Working) Directory \((.+?)\) Files", re.M)
_RESUME_CWD = re.compile(r"The current working directory is now '([^'\n]+)'")
_MODEL = re.compile(r"<model>([^<\n]{1,200})</model>")
_SLUG = re.compile(r"<slug>([^<\n]{1,80})</slug>")
_CLINE_MODE = re.compile(r"^# Current Mode\s*\n(ACT|PLAN) MODE", re.M)
_HEADER = re.compile(r"\[([A-Za-z_][\w-]{0,60})(?:\]| for | in )")
_NOT_RUN = re.compile(r"Tool \[([\w-]{1,60})\] was not executed because")
_USER_TAGS = re.compile(r"<(task|feedback|user_message|answer)>(.*?)</\1>", re.S)

BOILERPLATE = ("[TASK RESUMPTION]", "# task_progress", "# TODO LIST", "[ERROR] You did not use a tool",
               "[NOTE] Some previous conversation history", "[Continue assisting the user!]",
               "The user has accepted the condensed conversation summary",
               "New instructions for task continuation:", "(The user did not provide a new message")
"""Texts the extension writes on the user's behalf; the user's words inside them are kept."""


@dataclass
class EnvFacts:
    """What the injected environment details said, first seen first."""

    cwds: list[str] = field(default_factory=list)
    modes: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    model: str | None = None  # the latest, for the next assistant reply

    def read(self, text: str) -> None:
        for found, into in ((_CWD.search(text), self.cwds), (_SLUG.search(text), self.modes),
                            (_CLINE_MODE.search(text), self.modes)):
            if found:
                value = found.group(1).strip()
                if into is self.cwds and value.startswith("Primary:"):
                    continue
                value = value.lower() if into is self.modes else value
                if value and value not in into:
                    into.append(value)
        model = _MODEL.search(text)
        if model:
            self.model = model.group(1).strip()
            if self.model not in self.models:
                self.models.append(self.model)

    def resumed_in(self, text: str) -> None:
        found = _RESUME_CWD.search(text)
        if found and found.group(1) not in self.cwds:
            self.cwds.append(found.group(1))


def strip_environment(text: str, facts: EnvFacts | None) -> str:
    """The text without its environment details (read into `facts`)."""
    if "<environment_details>" not in text:
        return text
    if facts is not None:
        for found in _ENV.finditer(text):
            facts.read(found.group(1))
    return _ENV.sub("", text)


def result_header(text: str) -> tuple[str, str] | None:
    """(tool name, the rest) of a text that starts with a tool-result header, e.g.
    `[write_to_file for 'a.py'] Result:` or `[attempt_completion] Result:`."""
    if not text.startswith("["):
        return None
    head = _HEADER.match(text)
    if head is None:
        return None
    at = text.find("] Result:")
    if at == -1:
        return None
    return head.group(1), text[at + len("] Result:"):].lstrip("\n").removeprefix(" ")


def not_executed(text: str) -> str | None:
    """The tool named by `Tool [x] was not executed because …` (a call skipped)."""
    found = _NOT_RUN.match(text)
    return found.group(1) if found else None


def user_words(text: str) -> list[str]:
    """The user's own words in a text the extension wrapped: the inside of `<task>`,
    `<feedback>`, `<user_message>`, `<answer>`; [] when there are none."""
    if "<" not in text:
        return []
    return [m.group(2).strip() for m in _USER_TAGS.finditer(text) if m.group(2).strip()]


def is_boilerplate(text: str) -> bool:
    return text.lstrip().startswith(BOILERPLATE)
