"""How far could recall get on LoCoMo with the offline signals polyg has? A ceiling analysis.

For each question of categories 1-4 of `../shared/eval/locomo_dev.json` (read by path: CC BY-NC,
benchmark use only), each dialog turn of its conversation (the text `remember` stores: the turn,
plus " [image: <caption>]" when it shares a photo) is ranked by each signal alone:

- `vector`: cosine of the question and the turn (polyg's embedder, all-MiniLM-L6-v2);
- `vector+speaker`: the same, the turn embedded as "<speaker>: <text>";
- `bm25`: BM25 over the turns' words (function words dropped, as polyg's full-text query does);
- `fused`: the two fused by reciprocal rank (k=10), what polyg's hybrid search does;
- `speaker`: `fused`, only the turns said by the speaker the question names;
- `adjacent`: the turns just before and after each of `fused`'s first 10, in that order;
- `own turn`: the same speaker's nearest turns before and after each of `fused`'s first 10 in
  the same session (recall's same-context neighbours);
- `session`: the other turns of the sessions of `fused`'s first 3, ranked by `fused`;
- `similar`: the turns closest by cosine to any of `fused`'s first 5 (meaning-level links).

Each is scored as bench/lib/locomo_scoring.py scores recall (recall@10, all-evidence@10, per
category). Then two oracles, upper bounds for any combination of these signals: `best single`
(for each question, the one signal that does best on it) and `union of top-10s` (an evidence
turn counts when it is in the first 10 of at least one signal; a question is all-found when
every evidence turn is). The union holds up to 90 turns, so it bounds what a perfect reranker
could put in 10, not what one could reach; the union of top-50s bounds a reranker given 50 of
each signal's candidates (a model reading them, an LLM path). Last, where each evidence turn's
best rank over all signals falls (1-10, 11-20, 21-50, beyond).

    .venv/bin/python bench/quality/locomo_ceiling.py              # embeds the turns once (cached in --workdir)
    .venv/bin/python bench/quality/locomo_ceiling.py --smoke      # four turns, hashing vectors: it runs
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: bench.lib, polyg, tests

from bench.lib import locomo_scoring
from bench.lib.machine import machine_info
from bench.lib.results import write_results
from bench.lib.smoke import SMOKE_HELP, smoke_workdir
from bench.quality import locomo_eval, locomo_recall

CATEGORIES = locomo_scoring.CATEGORIES
MULTI_HOP = CATEGORIES[1]
RRF_K = 10
TOP = 10
DEEP = 50  # how deep a reranker (a model reading the candidates) could be given each signal
BANDS = ((1, 10), (11, 20), (21, 50), (51, 10**9))
WORD = re.compile(r"[a-z0-9]+")

Ranking = list[int]  # turn positions in the conversation, best first


def log(msg: str) -> None:
    print(f"[locomo-ceiling] {msg}", file=sys.stderr, flush=True)


# --- the signals ---------------------------------------------------------------------------


class Conversation:
    """One conversation's turns with what every signal needs: vectors, BM25 statistics,
    speakers and sessions."""

    def __init__(self, turns: list[dict[str, str]], vectors: Any, spoken: Any) -> None:
        import numpy as np

        from polyg.core.search.service import STOPWORDS

        self.turns = turns
        self.vectors = np.asarray(vectors, dtype=np.float32)
        self.spoken = np.asarray(spoken, dtype=np.float32)
        self.stopwords = STOPWORDS
        self.docs = [self.words(t["content"]) for t in turns]
        self.avg_len = sum(len(d) for d in self.docs) / max(1, len(self.docs))
        df: Counter[str] = Counter(w for d in self.docs for w in set(d))
        n = len(self.docs)
        self.idf = {w: math.log(1 + (n - c + 0.5) / (c + 0.5)) for w, c in df.items()}
        self.counts = [Counter(d) for d in self.docs]

    def words(self, text: str) -> list[str]:
        return [w for w in WORD.findall(text.lower()) if w not in self.stopwords]

    def vector_rank(self, query_vector: Any, spoken: bool = False) -> Ranking:
        import numpy as np

        sims = (self.spoken if spoken else self.vectors) @ np.asarray(query_vector, dtype=np.float32)
        return [int(i) for i in np.argsort(-sims, kind="stable")]

    def bm25_rank(self, query: str, k1: float = 1.5, b: float = 0.75) -> Ranking:
        terms = set(self.words(query))
        scores: dict[int, float] = {}
        for i, counts in enumerate(self.counts):
            s = 0.0
            for w in terms:
                tf = counts.get(w, 0)
                if tf:
                    s += self.idf[w] * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(self.docs[i]) / self.avg_len))
            if s > 0:
                scores[i] = s
        return sorted(scores, key=lambda i: (-scores[i], i))

    def similar_rank(self, seeds: Sequence[int]) -> Ranking:
        """Turns by their best cosine to any seed turn, the seeds left out."""
        import numpy as np

        if not seeds:
            return []
        sims = (self.vectors @ self.vectors[list(seeds)].T).max(axis=1)
        return [int(i) for i in np.argsort(-sims, kind="stable") if int(i) not in set(seeds)]


def fuse(*rankings: Ranking, k: int = RRF_K) -> Ranking:
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, i in enumerate(ranking):
            scores[i] = scores.get(i, 0.0) + 1.0 / (k + rank + 1)
    return sorted(scores, key=lambda i: (-scores[i], i))


def signals(conv: Conversation, question: str, query_vector: Any) -> dict[str, Ranking]:
    vector = conv.vector_rank(query_vector)
    bm25 = conv.bm25_rank(question)
    fused = fuse(vector, bm25)
    speakers = {t["context"] for t in conv.turns}
    named = {s for s in speakers if s.lower() in question.lower()}
    speaker = [i for i in fused if conv.turns[i]["context"] in named] if named else []
    adjacent: Ranking = []
    for i in fused[:TOP]:
        for j in (i - 1, i + 1):
            if 0 <= j < len(conv.turns) and conv.turns[j]["date"] == conv.turns[i]["date"] and j not in adjacent:
                adjacent.append(j)
    own: Ranking = []  # the nearest turn each way of the same speaker in the same session
    for i in fused[:TOP]:
        for step in (-1, 1):
            j = i + step
            while 0 <= j < len(conv.turns) and conv.turns[j]["date"] == conv.turns[i]["date"]:
                if conv.turns[j]["context"] == conv.turns[i]["context"]:
                    if j not in own:
                        own.append(j)
                    break
                j += step
    sessions = {conv.turns[i]["date"] for i in fused[:3]}
    session = [i for i in fused if conv.turns[i]["date"] in sessions and i not in fused[:3]]
    similar = conv.similar_rank(fused[:5])
    return {
        "vector": vector,
        "vector+speaker": conv.vector_rank(query_vector, spoken=True),
        "bm25": bm25,
        "fused": fused,
        "speaker": speaker,
        "adjacent": adjacent,
        "own turn": own,
        "session": session,
        "similar": similar,
    }


# --- scoring -------------------------------------------------------------------------------


def analyse(
    conversations: list[tuple[Conversation, list[dict[str, Any]], list[Any]]],
) -> dict[str, Any]:
    rows: dict[str, list[dict[str, Any]]] = {}
    bands: Counter[str] = Counter()
    pools: list[int] = []  # turns in each question's union of top-DEEPs
    for conv, questions, query_vectors in conversations:
        position = {t["dia_id"]: i for i, t in enumerate(conv.turns)}
        for q, qv in zip(questions, query_vectors, strict=True):
            ranks = signals(conv, q["question"], qv)
            named = {name: [conv.turns[i]["dia_id"] for i in r] for name, r in ranks.items()}
            per_signal = {name: locomo_scoring.score(r, q["evidence"]) for name, r in named.items()}
            for name, row in per_signal.items():
                rows.setdefault(name, []).append({"category": q["category"], **row})
            union = {d for r in named.values() for d in r[:TOP]}
            wanted = set(q["evidence"])
            for left_out in named:
                rest = {d for name, r in named.items() if name != left_out for d in r[:TOP]}
                rows.setdefault(f"oracle: union without {left_out}", []).append(
                    {
                        "category": q["category"],
                        "recall@10": len(wanted & rest) / len(wanted),
                        "all_evidence@10": float(wanted <= rest),
                    }
                )
            found = len(wanted & union) / len(wanted)
            rows.setdefault("oracle: union of top-10s", []).append(
                {"category": q["category"], "recall@10": found, "all_evidence@10": float(wanted <= union)}
            )
            deep = {d for r in named.values() for d in r[:DEEP]}
            pools.append(len(deep))
            rows.setdefault(f"oracle: union of top-{DEEP}s (a reranker's pool)", []).append(
                {
                    "category": q["category"],
                    "recall@10": len(wanted & deep) / len(wanted),
                    "all_evidence@10": float(wanted <= deep),
                }
            )
            rows.setdefault("oracle: best single signal", []).append(
                {
                    "category": q["category"],
                    "recall@10": max(r["recall@10"] for r in per_signal.values()),
                    "all_evidence@10": max(r["all_evidence@10"] for r in per_signal.values()),
                }
            )
            for e in q["evidence"]:
                best = min((r.index(position[e]) + 1 for r in ranks.values() if position[e] in r), default=10**9)
                band = next(f"{lo}-{hi}" if hi < 10**9 else f">{lo - 1}" for lo, hi in BANDS if lo <= best <= hi)
                bands[band] += 1
                if q["category"] == 1:
                    bands[f"multi-hop {band}"] += 1
    metrics = ("recall@10", "all_evidence@10")
    table = {
        name: {
            **{m: locomo_scoring.mean(r, m) for m in metrics},
            "by_category": locomo_scoring.by_category(r, metrics),
        }
        for name, r in rows.items()
    }
    pool = sum(pools) / max(1, len(pools))
    return {"signals": table, "best_rank_of_evidence": dict(bands), f"union_of_top_{DEEP}s_mean_turns": round(pool, 1)}


# --- data and vectors ----------------------------------------------------------------------


def embed_all(
    samples: list[dict[str, Any]], embed: Callable[[list[str]], list[list[float]]], cache: Path | None
) -> dict[str, Any]:
    """Every turn's and question's vector, cached by the texts and the embedder."""
    texts: list[str] = []
    for sample in samples:
        texts += [m["content"] for m in locomo_recall.memories_of(sample)]
        texts += [spoken(m) for m in locomo_recall.memories_of(sample)]
        texts += [qa["question"] for qa in sample["qa"]]
    texts = list(dict.fromkeys(texts))
    stored: dict[str, Any] = json.loads(cache.read_text()) if cache is not None and cache.exists() else {}
    todo = [t for t in texts if t not in stored]
    if todo:
        log(f"embedding {len(todo)} texts")
        stored.update(zip(todo, embed(todo), strict=True))
        if cache is not None:
            cache.write_text(json.dumps(stored))
    return stored


def spoken(turn: dict[str, str]) -> str:
    return f"{turn['context']}: {turn['content']}"


def prepare(
    samples: list[dict[str, Any]], vectors: dict[str, Any]
) -> tuple[list[tuple[Conversation, list[dict[str, Any]], list[Any]]], Counter[str]]:
    stats: Counter[str] = Counter()
    out = []
    for sample in samples:
        turns = locomo_recall.memories_of(sample)
        questions = locomo_scoring.questions_of(sample, {t["dia_id"] for t in turns}, stats)
        conv = Conversation(turns, [vectors[t["content"]] for t in turns], [vectors[spoken(t)] for t in turns])
        out.append((conv, questions, [vectors[q["question"]] for q in questions]))
    return out, stats


def markdown(result: dict[str, Any], command: str) -> str:
    cats = list(CATEGORIES.values())
    lines = [
        "# LoCoMo: what the offline signals could reach (ceiling)",
        "",
        f"`{command}`; {result['questions']} questions, {result['turns']} turns, embedder {result['embedder']}.",
        "",
        "| signal | recall@10 | all-evidence@10 | " + " | ".join(f"{c} r@10 / all@10" for c in cats) + " |",
        "|---|---:|---:|" + "---:|" * len(cats),
    ]
    for name, res in result["signals"].items():
        by_cat = res["by_category"]
        cells = [
            f"{by_cat[c]['recall@10']:.1f} / {by_cat[c]['all_evidence@10']:.1f}" if c in by_cat else "" for c in cats
        ]
        lines.append(f"| {name} | {res['recall@10']:.1f} | {res['all_evidence@10']:.1f} | " + " | ".join(cells) + " |")
    bands = result["best_rank_of_evidence"]
    total = sum(v for k, v in bands.items() if not k.startswith("multi-hop"))
    mh_total = sum(v for k, v in bands.items() if k.startswith("multi-hop"))
    lines += [
        "",
        f"The union of top-{DEEP}s holds {result[f'union_of_top_{DEEP}s_mean_turns']} turns a question on average.",
        "",
        "Best rank of each evidence turn over all signals (all questions / multi-hop):",
        "",
    ]
    for lo, hi in BANDS:
        band = f"{lo}-{hi}" if hi < 10**9 else f">{lo - 1}"
        lines.append(
            f"- {band}: {100 * bands.get(band, 0) / max(1, total):.1f}% / "
            f"{100 * bands.get(f'multi-hop {band}', 0) / max(1, mh_total):.1f}%"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=locomo_eval.DATA)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/polyg-locomo-ceiling"))
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = parser.parse_args(argv)
    provider = "minilm"
    if args.smoke:
        args.workdir, args.no_save, provider = smoke_workdir("locomo-ceiling"), True, "hashing"
        args.data = locomo_eval.smoke_data(args.workdir)
    from polyg.embed import create_embedder

    embedder = create_embedder(provider)
    samples = json.loads(args.data.read_text())
    args.workdir.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha256(args.data.read_bytes() + repr(embedder).encode()).hexdigest()[:16]
    vectors = embed_all(samples, embedder.embed_batch_sync, args.workdir / f"vectors-{key}.json")
    conversations, fixes = prepare(samples, vectors)
    result = analyse(conversations)
    result.update(
        questions=sum(len(q) for _, q, _ in conversations),
        turns=sum(len(c.turns) for c, _, _ in conversations),
        embedder=repr(embedder),
        evidence_fixes=dict(fixes),
        machine=machine_info(),
    )
    text = markdown(result, "bench/quality/locomo_ceiling.py" + (" --smoke" if args.smoke else ""))
    print(text)
    if not args.no_save:
        mh = result["signals"]["oracle: union of top-10s"]["by_category"].get(MULTI_HOP, {})
        figures = {
            "union_recall@10": result["signals"]["oracle: union of top-10s"]["recall@10"],
            "union_multi_hop_all@10": mh.get("all_evidence@10"),
            "fused_recall@10": result["signals"]["fused"]["recall@10"],
        }
        md, js = write_results(
            "locomo-ceiling", text, result, size=args.data.stem.removeprefix("locomo_"), figures=figures
        )
        log(f"wrote {md} and {js}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
