"""LoCoMo retrieval scoring as `../shared/eval/README.md` defines it, shared by every LoCoMo bench
(bench/quality/locomo_eval.py, bench/quality/graphrag_locomo.py, bench/quality/locomo_recall.py).

A dialog turn is a unit. recall@k: the share of a question's evidence turns among the first k
ranked turns, averaged over questions; all-evidence@10: the share of questions with every
evidence turn among the first 10. Only categories 1-4 are scored (5, adversarial, has no
evidence to find). Evidence ids are normalised first (a few are malformed in the data), and the
report says how many were fixed or dropped.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS = (5, 10, 20)
METRICS = (*(f"recall@{k}" for k in KS), "all_evidence@10")

EVIDENCE_ID = re.compile(r"D:?(\d+):(\d+)")


def normalise_evidence(raw: list[str], turns: set[str], stats: Counter[str]) -> list[str]:
    """Evidence ids as turn names: `"D8:6; D9:17"` is split, `D:11:26` and `D30:05` are
    rewritten to `D11:26` / `D30:5`; ids that match no turn (or no id shape, like `D`) are dropped."""
    out: list[str] = []
    for item in raw:
        parts = [p for p in re.split(r"[;,\s]+", item) if p]
        if len(parts) > 1:
            stats["split_strings"] += 1
        for part in parts:
            m = EVIDENCE_ID.fullmatch(part)
            if m is None:
                stats["dropped_malformed"] += 1
                continue
            norm = f"D{int(m.group(1))}:{int(m.group(2))}"
            if norm != part:
                stats["normalised"] += 1
            if norm not in turns:
                stats["dropped_missing_turn"] += 1
                continue
            if norm not in out:
                out.append(norm)
    return out


def questions_of(sample: dict[str, Any], turns: set[str], stats: Counter[str]) -> list[dict[str, Any]]:
    """The sample's scored questions (categories 1-4 with at least one evidence turn left)."""
    out = []
    for qa in sample["qa"]:
        if qa["category"] not in CATEGORIES:
            continue
        evidence = normalise_evidence(qa.get("evidence", []), turns, stats)
        if not evidence:
            stats["questions_without_evidence"] += 1
            continue
        out.append(
            {
                "question": qa["question"],
                "category": qa["category"],
                "evidence": evidence,
                "answer": str(qa.get("answer", "")),
            }
        )
    return out


def score(ranked: Sequence[str], evidence: Iterable[str], ks: Sequence[int] = KS) -> dict[str, float]:
    """One question's row: recall@k for each k in `ks` and all-evidence@10, each 0..1."""
    wanted = set(evidence)
    row = {f"recall@{k}": len(wanted & set(ranked[:k])) / len(wanted) for k in ks}
    row["all_evidence@10"] = float(wanted <= set(ranked[:10]))
    return row


def mean(rows: Sequence[dict[str, Any]], key: str) -> float:
    """The rows' average of `key` as a percentage (one decimal); nan for no rows."""
    return round(100.0 * sum(r[key] for r in rows) / len(rows), 1) if rows else float("nan")


def by_category(rows: Sequence[dict[str, Any]], metrics: Sequence[str] = METRICS) -> dict[str, dict[str, Any]]:
    """Each category's question count and metric averages (categories without questions left out)."""
    return {
        CATEGORIES[c]: {"questions": len(cat_rows), **{m: mean(cat_rows, m) for m in metrics}}
        for c in CATEGORIES
        if (cat_rows := [r for r in rows if r["category"] == c])
    }


# --- answers, judge-free ---------------------------------------------------------------------
#
# Whether an answer says the gold answer, without a model to judge it: every content word of the
# gold answer must be in the answer, a date counting as one word that matches the same date in
# any common format ("7 May 2023", "May 7th, 2023", "2023-05-07"; a gold year or month matches
# any day inside it). Only gold answers of at most MAX_ANSWER_WORDS content words are scored
# (longer ones are lists and descriptions no extractive answer says word for word).

MAX_ANSWER_WORDS = 6
# Words that carry no answer: articles, pronouns, auxiliaries, most prepositions, conjunctions.
# "before", "after" and numbers stay: "the week before 9 June 2023" is not the week after it.
ANSWER_STOPWORDS = frozenset(
    "a an the and or but nor of in on at to for with by from into onto as about than then so "
    "is are was were be been being am do does did has have had will would can could should may might "
    "i me my mine we us our ours you your yours he him his she her hers they them their theirs it its "
    "this that these those there here who whom whose which what when where why how "
    "s t ll ve re d m not no also just very some any all".split()
)
_NUMBER_WORDS = {
    w: str(i)
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen twenty".split()
    )
}
_NUMBER_WORDS.update({"once": "1", "twice": "2", "thrice": "3"})
_MONTHS = {
    m: i
    for i, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        1,
    )
    for m in names
}
_MONTH_RE = "(?P<{}>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY_RE = r"(?P<{}>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR_RE = r"(?P<{}>(?:19|20)\d\d)"
# Most specific first: a day with its month and year, then a month and year, then a year.
_DATE_PATTERNS = (
    re.compile(r"\b(?P<y>(?:19|20)\d\d)-(?P<m>[01]\d)-(?P<d>[0-3]\d)\b"),
    re.compile(
        # "\s*": a few gold answers lack the space ("22August, 2022").
        rf"\b{_DAY_RE.format('d')}(?:\s+of)?\s*{_MONTH_RE.format('mn')},?\s+{_YEAR_RE.format('y')}\b",
        re.I,
    ),
    re.compile(rf"\b{_MONTH_RE.format('mn')}\s+{_DAY_RE.format('d')},?\s+{_YEAR_RE.format('y')}\b", re.I),
    re.compile(rf"\b{_MONTH_RE.format('mn')},?\s+(?:of\s+)?{_YEAR_RE.format('y')}\b", re.I),
    # A day and month without a year ("13 August"): any year.
    re.compile(rf"\b{_DAY_RE.format('d')}(?:\s+of)?\s*{_MONTH_RE.format('mn')}\b", re.I),
    re.compile(rf"\b{_MONTH_RE.format('mn')}\s+{_DAY_RE.format('d')}\b", re.I),
    re.compile(rf"\b{_YEAR_RE.format('y')}\b"),
)
_TOKEN = re.compile(r"[a-z0-9]+")

Date = tuple[int | None, int | None, int | None]  # year, month, day (None: not stated)


def dates_in(text: str) -> tuple[list[Date], str]:
    """The dates `text` states, and the text with them blanked out (so their words are not
    counted again as words)."""
    found: list[Date] = []
    rest = text
    for pattern in _DATE_PATTERNS:
        kept: list[Date] = []

        def take(m: re.Match[str], kept: list[Date] = kept) -> str:
            groups = m.groupdict()
            month = int(groups["m"]) if groups.get("m") else _MONTHS.get((groups.get("mn") or "").lower())
            day = int(groups["d"]) if groups.get("d") else None
            if (day is not None and not 1 <= day <= 31) or (month is not None and not 1 <= month <= 12):
                return m.group(0)
            kept.append((int(groups["y"]) if groups.get("y") else None, month, day))
            return " "

        rest = pattern.sub(take, rest)
        found += kept
    return found, rest


def _norm(word: str) -> str:
    """A word as compared: number words as digits, a plural as its singular."""
    word = _NUMBER_WORDS.get(word, word)
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def answer_words(gold: str) -> tuple[list[Date], list[str]]:
    """The gold answer's dates and its other content words (normalised)."""
    dates, rest = dates_in(gold)
    words = [_norm(w) for w in _TOKEN.findall(rest.lower()) if w not in ANSWER_STOPWORDS]
    return dates, list(dict.fromkeys(words))


def scorable(gold: str) -> bool:
    dates, words = answer_words(gold)
    return 0 < len(dates) + len(words) <= MAX_ANSWER_WORDS


def _same_date(gold: Date, said: Date) -> bool:
    """`said` falls inside `gold` (a gold year or month holds every day in it)."""
    return all(g is None or g == s for g, s in zip(gold, said, strict=True))


def contains_answer(gold: str, text: str) -> bool:
    """`text` holds every content word and every date of the gold answer."""
    dates, words = answer_words(gold)
    said_dates = dates_in(text)[0]
    # The answer's words are read with its dates left in: a gold "2022" or "week" may be said
    # inside a date.
    said_words = {_norm(w) for w in _TOKEN.findall(text.lower())}
    return all(w in said_words for w in words) and all(any(_same_date(d, s) for s in said_dates) for d in dates)


def category_table(results: dict[str, Any], cats: list[str], label: str) -> list[str]:
    """Markdown rows: recall@10 / all-evidence@10 (questions) per category, a row per result."""
    lines = [f"| {label} | " + " | ".join(cats) + " |", "|---|" + "---:|" * len(cats)]
    for name, res in results.items():
        by_cat = res["by_category"]
        cells = [
            f"{by_cat[c]['recall@10']:.1f} / {by_cat[c]['all_evidence@10']:.1f} ({by_cat[c]['questions']})"
            if c in by_cat
            else ""
            for c in cats
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines
