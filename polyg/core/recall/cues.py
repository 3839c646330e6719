"""Words that say what a query asks for: causes (upstream), effects (downstream), or a topic
lookup (semantic). Read on the query with its names masked."""

from __future__ import annotations

import re

from polyg.core.recall.model import Direction


def _any(*patterns: str) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)


UPSTREAM = _any(
    r"\bwhy\b",
    r"\bhow come\b",
    r"\bwhat(?:['’]s| is| was| were| are)? (?:the |a )?(?:root |main |real |likely )?causes?\b",
    r"\bwhat(?:['’]s| is| was| were)? (?:been )?causing\b",
    r"\bwhat (?:caused|causes|made|makes|triggered|triggers|prompted|led (?:up )?to|leads to)\b",
    r"\broot[- ]cause",
    r"\breasons?\b",
    r"\b(?:ended|end) up\b",
    r"\b(?:doing|went|go|going|gone) wrong\b",
    r"\bexplain (?:how|why)\b",
    r"\bcaused by\b",
    r"\bdue to what\b",
    r"\bresponsible for\b",
    r"\bto blame\b",
    r"\bwhat(?:['’]s| is) behind\b",
    r"\bwhere did .{1,40} come from\b",
)
DOWNSTREAM = _any(
    r"\bwhat (?:would|will|could|might|does|did|would've) (?:[\w'’-]+ ){0,6}?(?:happen|break|do to|affect|impact)\b",
    r"\bwhat (?:would|will|could|might) (?:\w+ ){0,3}?do\b",
    r"\bwhat (?:breaks|broke|happens|happened to|changes)\b",
    r"\bsuppose\b",
    r"\bwhat if\b",
    r"\bconsequences?\b",
    r"\beffects?\b",
    r"\baffect(?:s|ed|ing)?\b",
    r"\bimpact(?:s|ed)?\b",
    r"\bfallout\b",
    r"\bblast radius\b",
    r"\bripple\b",
    r"\bknock-on\b",
    r"\bdownstream\b",
    r"\bdo to\b",
    r"\bwhat did .{1,60} (?:lead to|result in|cause)\b",
    r"\bresult(?:ed|s)? in\b",
    r"\bbecause of (?:it|that|this|them)\b",
    r"\beverything that (?:broke|failed)\b",
    r"\bif (?:we|i|you|they|he|she|it|the|our|my) .{1,60}\bwhat\b",
)
SEMANTIC = _any(
    r"\bwhat (?:do|did|does) (?:we|i|you) (?:know|have|store|keep|save|remember)\b",
    r"\bwhat(?:['’]s| is| was) (?:known|stored|saved|recorded|in memory|there)\b",
    r"\bwhat(?:['’]ve| have) (?:we|i) (?:got|noted|stored|saved|written|learned|recorded)\b",
    r"\bwhat have we got\b",
    r"^(?:so |and )?(?:is there |are there |do (?:we|i|you) have |got )?"
    r"(?:anything|anythign|anyting|any ?thing|any info|any information|something)(?: else)? "
    r"(?:on|about|regarding|related to|re)\b",
    r"\b(?:is there|do (?:we|i) have|got) anything\b",
    r"\bnotes?\b",
    r"\bnoted\b",
    r"\b(?:wrote|write|written|jot|jotted|put) down\b",
    r"\bdocumented\b",
    r"\bsummar(?:y|ize|ise|ized|ised)\b",
    r"\brundown\b",
    r"\boverview\b",
    r"\btell me (?:about|what|everything|anything)\b",
    r"\bwhat we have on\b",
    r"\bpull (?:together|up)\b",
    r"\blook up\b",
    r"\bsearch (?:(?:my|our|the) )?(?:notes|memory|memories|for)\b",
    r"\bfind (?:notes|anything|everything|whatever|stuff|info|information|material|things)\b",
    r"\bsaved? anything\b",
    r"\b(?:did|have|had) (?:i|we) (?:save|saved|store|stored|bookmark|bookmarked|clip|clipped)\b",
    r"\bin (?:memory|my memory|our memory)\b",
    r"\bknowledge\b",
    r"\bunderstanding of\b",
    r"\beverything (?:stored|we have|we know|i know|on|about)\b",
    r"\b(?:tips|lessons?|learnings|insights?|advice|takeaways?)\b",
    r"\blearn(?:ed|t)\b",
    r"\bideas? (?:on|about|for)\b",
    r"\brelated to\b",
    r"\bwhat(?:['’]s| has) been said\b",
)


def causal_direction(text: str) -> Direction | None:
    up = UPSTREAM.search(text) is not None
    down = DOWNSTREAM.search(text) is not None
    if up and down:
        return "both"
    if up:
        return "upstream"
    if down:
        return "downstream"
    return None


def asks_semantic(text: str) -> bool:
    return SEMANTIC.search(text) is not None


_SCAFFOLD = _any(
    r"^(?:so |and |ok,? |hey,? )",
    r"\b(?:can|could|would) you\b",
    r"\bplease\b",
    r"\b(?:remind me|tell me|show me|give me|walk me through|pull together|pull up|look up)\b",
    r"\bsearch (?:my|our) notes for\b",
    r"\bwhat (?:do|did|does) (?:we|i|you) (?:know|have)(?: stored| saved)?(?: about| on)?\b",
    r"\bwhat(?:['’]s| is) (?:known|stored|in memory)(?: about| on)?\b",
    r"\b(?:is there |do we have )?(?:anything|anythign) (?:on|about|regarding)\b",
    r"\bwhat have we got\b",
    r"\b(?:any|my|our) notes (?:on|about)\b",
    r"\bsummari[sz]e (?:our|my|what we have on|the)?(?: knowledge of)?\b",
)


def semantic_query(text: str) -> str:
    """The query without its request scaffolding, for embedding search."""
    stripped = _SCAFFOLD.sub(" ", text)
    stripped = re.sub(r"\s+", " ", stripped).strip(" \t\n,;:?!.")
    return stripped or text.strip()
