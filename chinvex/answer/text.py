"""Words, stems and term weights for deciding whether evidence answers a question.

Stems come from SQLite's own FTS5 tokenizer (the one hybrid.db's `chunks_fts` uses, asked
through chinvex.storage.fts_tokens), run on an in-memory table: the answer layer then agrees with
the index about what a word is ("painting" = "paints" = "paint", "café" = "cafe") without a
second, hand-written stemmer. Term weights are inverse document frequencies read from the
context's own FTS index through a temporary `fts5vocab` table, so a term that appears in every
chunk (a speaker's name in a transcript, `self` in Python) counts for little and a rare one
(`chariti`, `clipboard`) counts for much.
"""

from __future__ import annotations

import math
import re
import sqlite3
from collections.abc import Iterable, Sequence

from chinvex.answer.irregular import with_base_forms
from chinvex.storage import fts_tokens
from chinvex.storage.search_reads import chunk_count, data_version

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)

# Verbs and nouns that frame a question ("what did X say about", "how does X describe", "the
# reason for") rather than name its subject: answers rarely repeat them.
FRAME_WORDS = frozenset(
    """describe described describes describing mention mentioned mentions say said says saying
    tell telling tells told think thinks happen happened happens reason reasons general
    specific particular recently currently according regarding concerning""".split()
)

# English function words and the frame words of questions ("what kind of", "how often"):
# they say what is asked, not what the answer is about, so they never count as coverage.
STOPWORDS = frozenset(
    """a about above across after again against all almost also am among an and another any
    anybody anyone anything anyway are around as at be became because become been before being
    below beside besides between both but by came can cannot come could did do does doing done
    down during each either else enough etc even ever every few for from further get gets getting
    got had has have having he her here hers herself him himself his how however i if in into is
    it its itself just kind kinds least less let likely lot lots made make makes many may me
    might mine more most much must my myself near need needs neither never no nor not now of off
    often on once one only onto or other others otherwise our ours ourselves out over own per
    perhaps please quite rather really same several shall she should since so some somebody
    someone something sometimes sort still such than that the their theirs them themselves then
    there therefore these they thing things this those though through thus to together too
    toward towards type types under until up upon us use used uses using very via was way ways
    we well were what whatever when whenever where whereas wherever whether which while who
    whoever whom whose why will with within without would yet you your yours yourself
    yourselves""".split()
) | FRAME_WORDS

# Contractions: their first part decides ("what's" -> "what", "Caroline's" -> "Caroline").
_APOSTROPHE = re.compile(r"['’]\w*$")


def words(text: str) -> list[str]:
    """Word tokens in order, with apostrophe forms kept whole ("don't", "Caroline's")."""
    return _WORD.findall(text)


def base_word(word: str) -> str:
    """A word without its clitic: "Caroline's" -> "Caroline", "don't" -> "don"."""
    return _APOSTROPHE.sub("", word)


_MONTHS = frozenset(
    """january february march april may june july august september october november december jan feb
    mar apr jun jul aug sep sept oct nov dec""".split()
)
_WEEKDAYS = frozenset("monday tuesday wednesday thursday friday saturday sunday".split())
_YEAR = re.compile(r"^(?:19|20)\d\d$")
_DAY = re.compile(r"^(?:[12]?\d|3[01])(?:st|nd|rd|th)?$")


def content_words(text: str) -> list[str]:
    """Words that carry meaning: no function words, no single letters, possessives cut, and no
    calendar dates ("on 13 October, 2023"): a date in a question says *when*, which the
    evidence states in its timestamps or a session header, not in the passage that answers."""
    tokens = [base_word(w) for w in words(text)]
    lows = [t.lower() for t in tokens]
    out: list[str] = []
    for i, (base, low) in enumerate(zip(tokens, lows)):
        if len(base) < 2 and not base.isdigit():
            continue
        if low in STOPWORDS or low in _WEEKDAYS or _YEAR.match(low):
            continue
        if low in _MONTHS and (low != "may" or _near_date(lows, i)):
            continue
        if _DAY.match(low) and _near_date(lows, i):
            continue
        out.append(base)
    return out


def _near_date(lows: list[str], i: int) -> bool:
    """Is the token at `i` next to a month name or a year (part of a calendar date)?"""
    for j in (i - 2, i - 1, i + 1, i + 2):
        if 0 <= j < len(lows) and j != i and (lows[j] in _MONTHS - {"may"} or _YEAR.match(lows[j])):
            return True
    return False


class Stemmer:
    """Stem sets of many texts at once, through FTS5's porter tokenizer, an irregular verb's past
    forms holding its base form's stem too ("found" holds "find").

    One instance per thread (it owns an in-memory SQLite connection); creating one costs well
    under a millisecond.
    """

    def __init__(self) -> None:
        self._conn = fts_tokens.token_table()
        self._cache: dict[str, frozenset[str]] = {}

    def stem_sets(self, texts: Sequence[str]) -> list[frozenset[str]]:
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            # "found" is read as "find" too: porter stems do not join irregular verbs (irregular.py)
            found = fts_tokens.stems_of(self._conn, [with_base_forms(t, words(t)) for t in missing])
            for text, stems in zip(missing, found):
                self._cache[text] = frozenset(stems)
        return [self._cache[t] for t in texts]

    def stems(self, text: str) -> frozenset[str]:
        return self.stem_sets([text])[0]

    def close(self) -> None:
        self._conn.close()


class TermWeights:
    """How much each stem of a question weighs: the square root of its inverse document
    frequency in the context's FTS index.

    `idf = ln((N + 1) / (df + 0.5))` is about ln(2) for a stem in every chunk and largest for
    one the index has never seen. The square root keeps the ordering but stops one rare word
    from outweighing the rest of the question: a passage naming "chunk" and "ids" answers "how
    are chunk ids computed?" even if "computed" is rare. The power was chosen on LoCoMo against
    1.0 and 0.75 (bench/answers.py), keeping every golden question over this repository answered.
    """

    def __init__(self, df: dict[str, int], total: int):
        self.df = df
        self.total = max(1, total)

    power = 0.5

    def idf(self, stem: str) -> float:
        return math.log((self.total + 1) / (self.df.get(stem, 0) + 0.5)) ** self.power

    def weight(self, stems: Iterable[str]) -> float:
        return sum(self.idf(s) for s in stems)

    @classmethod
    def uniform(cls) -> TermWeights:
        """Every stem weighs the same (no index at hand)."""
        return cls({}, 1)

    @classmethod
    def from_index(cls, conn: sqlite3.Connection, stems: Iterable[str],
                   cache: DocumentFrequencies | None = None) -> TermWeights:
        """Document frequencies of `stems` in `chunks_fts` (read-only; the vocab table is temp).
        With a `cache` (one per connection), stems read before cost nothing."""
        source = cache if cache is not None else DocumentFrequencies()
        return source.weights(conn, stems)


class DocumentFrequencies:
    """Document frequencies read from one connection's index, kept until the database changes.

    An answer reads the frequency of every word of its evidence (a few hundred stems);
    questions over the same context share most of them. `PRAGMA data_version`
    changes when another connection commits (an ingest), which empties the cache."""

    def __init__(self) -> None:
        self.version: int | None = None
        self.total = 1
        self.df: dict[str, int] = {}

    def weights(self, conn: sqlite3.Connection, stems: Iterable[str]) -> TermWeights:
        version = data_version(conn)
        if version != self.version:
            self.version, self.df = version, {}
            self.total = chunk_count(conn)
        wanted = sorted(set(stems) - self.df.keys())
        if wanted:
            self.df.update(fts_tokens.document_frequencies(conn, wanted))
        return TermWeights(self.df, self.total)
