"""The Cypher that keeps cached documents (spec 000) from outliving what they were built from:
every query that deletes a node ends with `drop_documents` on it."""

from __future__ import annotations

from polyg.store.names import CACHED_AT, CACHED_DOCUMENT, DEPENDS_ON


def drop_documents(v: str) -> str:
    """Clauses, after a WITH binding node `v` (one row per node), that delete the documents
    cached for `v` and every document built from it (DEPENDS_ON `v`): a deleted node's page
    and the pages that read it are gone, not left orphaned or stale. Ends with `WITH v`."""
    return (
        f"OPTIONAL MATCH ({v})-[:{CACHED_AT}]->(own:{CACHED_DOCUMENT}) "
        f"WITH {v}, collect(own) AS owns "
        f"OPTIONAL MATCH (dep:{CACHED_DOCUMENT})-[:{DEPENDS_ON}]->({v}) "
        f"WITH {v}, owns, collect(dep) AS deps "
        f"FOREACH (x IN owns + [d IN deps WHERE NOT d IN owns] | DETACH DELETE x) "
        f"WITH {v} "
    )
