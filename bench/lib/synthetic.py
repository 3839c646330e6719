"""The synthetic code-memory graph the latency benchmarks preload: deterministic names and ids."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator
from typing import Any

WORDS = (
    "parser lexer router cache queue worker scheduler session token client server handler "
    "config logger metrics tracer index store buffer stream socket codec encoder decoder "
    "planner executor optimizer validator resolver loader builder registry gateway proxy "
    "adapter bridge monitor watcher notifier mailer billing invoice payment account profile "
    "search ranker crawler fetcher upload download"
).split()
AREAS = "auth api core db ui jobs infra billing search mail storage net cli sdk web".split()
TYPES = ("file", "class", "function", "module", "service", "library", "concept", "person")
VERBS = "parses validates caches routes schedules encodes decodes indexes stores streams".split()
OBJECTS = "requests tokens sessions records events messages payloads queries invoices users".split()
LINK_TYPES = ("depends_on", "calls")
LIBS = "redis numpy requests pydantic sqlalchemy moment lodash react grpc protobuf".split()


def entity_id(i: int) -> str:
    """Deterministic polyg-shaped ids for preloaded entity i (same for every size)."""
    return "ent_" + hashlib.blake2b(f"e{i}".encode(), digest_size=8).hexdigest()


def observation_id(i: int, k: int) -> str:
    return "obs_" + hashlib.blake2b(f"o{i}.{k}".encode(), digest_size=8).hexdigest()


def generated_entity(i: int) -> dict[str, Any]:
    """Entity i of the synthetic code-memory graph: name, type, one-sentence description,
    and one observation on every 10th entity."""
    r = random.Random(i)
    area, word, type_ = r.choice(AREAS), r.choice(WORDS), TYPES[i % len(TYPES)]
    name = f"src/{area}/{word}_{i:06d}.py" if type_ in ("file", "module") else f"{area}.{word}_{i:06d}"
    description = (
        f"The {word} {type_} {r.choice(VERBS)} {r.choice(OBJECTS)} for the {area} subsystem "
        f"and reports to {r.choice(WORDS)}."
    )
    obs = []
    if i % 10 == 0:
        lib, verb, what = r.choice(LIBS), r.choice(VERBS)[:-1], r.choice(OBJECTS)
        obs.append(f"Uses {lib} to {verb} {what} since release {i % 97}.")
    return {"i": i, "id": entity_id(i), "name": name, "type": type_, "description": description, "obs": obs}


def links(n: int, per_entity: int = 2) -> Iterator[tuple[int, int, str]]:
    """Entity i -> `per_entity` others drawn from Random(i): with 2, an out-degree of 2, so about
    4 neighbours a node and some 60 within 3 hops, at every size."""
    for i in range(n):
        r = random.Random(1_000_003 * i + 17)
        for k in range(per_entity):
            j = r.randrange(n - 1) if n > 1 else 0
            yield i, j + (j >= i), LINK_TYPES[k % len(LINK_TYPES)]


def relation_id(i: int, j: int, kind: str) -> str:
    return "rel_" + hashlib.blake2b(f"r{i}.{j}.{kind}".encode(), digest_size=8).hexdigest()
