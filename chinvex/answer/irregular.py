"""English verbs whose past forms share no stem with their base form.

The answer layer compares words by their porter stems (text.Stemmer), which join "painted" to
"paint" but not "found" to "find": a note saying "Aiko found that the search endpoint times out"
did not answer "What did Aiko find?". Questions ask with the base form ("did … find / make /
take"), and what people write tells it in the past ("found", "made", "took", "has written").
Each past form here is read as its base form too (never instead: "found" may also be the verb
"to found"). Data, not rules: the common irregular verbs of English.
"""

from __future__ import annotations

_FORMS = """
arise arose arisen; awake awoke awoken; be was were been; bear bore borne; beat beaten; become became;
begin began begun; bend bent; bet; bind bound; bite bit bitten; bleed bled; blow blew blown;
break broke broken; breed bred; bring brought; build built; burn burnt; buy bought; catch caught;
choose chose chosen; cling clung; come came; cost; creep crept; cut; deal dealt; dig dug; do did done;
draw drew drawn; dream dreamt; drink drank drunk; drive drove driven; eat ate eaten; fall fell fallen;
feed fed; feel felt; fight fought; find found; flee fled; fly flew flown; forbid forbade forbidden;
forget forgot forgotten; forgive forgave forgiven; freeze froze frozen; get got gotten; give gave given;
go went gone; grind ground; grow grew grown; hang hung; have had has; hear heard; hide hid hidden; hit;
hold held; hurt; keep kept; kneel knelt; know knew known; lay laid; lead led; lean leant; leap leapt;
learn learnt; leave left; lend lent; let; lie lay lain; light lit; lose lost; make made; mean meant;
meet met; pay paid; prove proven; put; quit; read; ride rode ridden; ring rang rung; rise rose risen;
run ran; say said; see saw seen; seek sought; sell sold; send sent; set; shake shook shaken; shine shone;
shoot shot; show shown; shrink shrank shrunk; shut; sing sang sung; sink sank sunk; sit sat; sleep slept;
slide slid; speak spoke spoken; speed sped; spend spent; spin spun; split; spread; spring sprang sprung;
stand stood; steal stole stolen; stick stuck; sting stung; stink stank stunk; strike struck;
swear swore sworn; sweep swept; swim swam swum; swing swung; take took taken; teach taught;
tear tore torn; tell told; think thought; throw threw thrown; understand understood; undo undid undone;
upset; wake woke woken; wear wore worn; weave wove woven; weep wept; win won; wind wound;
withdraw withdrew withdrawn; write wrote written; rebuild rebuilt; rewrite rewrote rewritten;
overcome overcame; undergo underwent undergone; mislead misled; overtake overtook overtaken
"""

BASE_OF: dict[str, str] = {}
"""Each irregular past or participle form -> its base form ("found" -> "find")."""
for _entry in _FORMS.replace("\n", " ").split(";"):
    _base, *_pasts = _entry.split()
    for _past in _pasts:
        BASE_OF.setdefault(_past, _base)
del _entry, _base, _pasts


def with_base_forms(text: str, words: list[str]) -> str:
    """`text` followed by the base form of each irregular past form among its `words` (so that
    its stems hold both), or `text` itself when it has none."""
    bases = [BASE_OF[w] for w in (word.lower() for word in words) if w in BASE_OF]
    return f"{text} {' '.join(bases)}" if bases else text
