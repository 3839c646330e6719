"""Cypher of the projects service: what a project holds, and clearing part of it.

Counts are the forms FalkorDB answers from its label and relationship-type sizes without
touching a node (`MATCH (n:L) RETURN count(n)`, `MATCH ()-[r:T]->() RETURN count(r)`, and the
unlabelled totals): any other form scans. Labels and types reach the text only as `Label` /
`RelType`; a name in the graph that is not a valid one (written by something other than polyg)
is counted through a parameter instead, by a scan.
"""

from __future__ import annotations

from polyg.store.names import POLYG_META, Label, RelType

LABELS = "CALL db.labels() YIELD label RETURN label"
REL_TYPES = "CALL db.relationshipTypes() YIELD relationshipType RETURN relationshipType"
NODE_TOTAL = "MATCH (n) RETURN count(n)"
EDGE_TOTAL = "MATCH ()-[r]->() RETURN count(r)"
META = f"MATCH (m:{POLYG_META} {{key: 'schema'}}) RETURN m.schema_version, m.embedding_model, m.dimension LIMIT 1"
# By parameter, for names that cannot be interpolated (a scan: rare, and only for stats).
COUNT_ANY_LABEL = "MATCH (n) WHERE $name IN labels(n) RETURN count(n)"
COUNT_ANY_REL_TYPE = "MATCH ()-[r]->() WHERE type(r) = $name RETURN count(r)"


def count_label(label: Label) -> str:
    return f"MATCH (n:{label}) RETURN count(n)"


def count_rel_type(rel_type: RelType) -> str:
    return f"MATCH ()-[r:{rel_type}]->() RETURN count(r)"


# Deletes go by batches of `$batch`, so that clearing a large label neither holds the graph's
# write lock for long nor builds one huge undo log; each returns how many it deleted.
def delete_label_batch(label: Label) -> str:
    return f"MATCH (n:{label}) WITH n LIMIT $batch DETACH DELETE n RETURN count(n)"


def delete_rel_type_batch(rel_type: RelType) -> str:
    return f"MATCH ()-[r:{rel_type}]->() WITH r LIMIT $batch DELETE r RETURN count(r)"
