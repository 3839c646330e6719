"""What a newcomer met on the command line: a folder ingest with one bad file, a JSONL file
with a bad line, a mistyped project, and the import's summary and vector bar.

The CLI runs in the test process (tests/cli_runner.py) on one embedded FalkorDB for the module
(tests/e2e/test_transfer.py's `root`), each test in projects of its own. The partial import
stays a real process: its point is the exit status a script sees."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.test_transfer import module_store, polyg, root, write_jsonl

__all__ = ["module_store", "root"]  # the fixtures, used by name


def test_a_folder_ingest_goes_on_past_bad_files_and_names_each(root: Path, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Lighthouses\n\nThe Fresnel lens made beams visible.\n", encoding="utf-8")
    (docs / "empty.md").write_text("", encoding="utf-8")  # no text: the ingest refuses it
    (docs / "latin.txt").write_bytes("Un café noir.".encode("latin-1"))
    (docs / "z.txt").write_text("Keepers wrote a log every night.\n", encoding="utf-8")
    done = polyg(root, "ingest", str(docs), "--project", "docs")
    assert done.returncode != 0, done.stderr
    assert "Traceback" not in done.stderr
    assert json.loads(done.stdout)["created"] == 2, done.stdout
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 2, done.stderr
    assert str(docs / "empty.md") in errors[0] and "no text" in errors[0]
    assert str(docs / "latin.txt") in errors[1] and "(code 3002)" in errors[1]
    assert "2 of the files failed" in done.stderr
    found = polyg(root, "query", "Fresnel lens", "--project", "docs")
    assert found.returncode == 0 and json.loads(found.stdout)["total_results"] >= 1, found.stderr


def test_a_partial_import_exits_non_zero_and_says_what_was_skipped(root: Path, tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "partial.jsonl",
        [
            {"type": "entity", "name": "Ada", "entityType": "person", "observations": ["a", "b"]},
            {"type": "entity", "name": "Bob", "entityType": "person", "observations": ["c"]},
            {"type": "relation", "from": "Ada", "to": "Bob", "relationType": "knows"},
            "not json",
        ],
    )
    done = polyg(root, "import", str(path), "--project", "partial", process=True)
    assert done.returncode == 1, done.stderr
    assert "skipped line 4: not JSON" in done.stderr
    assert "Error: 1 of the file's items were skipped" in done.stderr
    # The summary counts the observations of the entities it created.
    assert "created 2 entities, 1 relations; added 3 observations; skipped 1 lines" in done.stderr
    # The vectors bar ends full, not at 0%.
    bar = [line for line in done.stderr.splitlines() if "storing vectors" in line]
    assert bar and "100%" in bar[-1], done.stderr


def test_a_query_of_a_project_that_does_not_exist_is_an_error(root: Path) -> None:
    done = polyg(root, "query", "anything", "--project", "nosuch")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Project 'nosuch' does not exist" in done.stderr and "(code 4004)" in done.stderr
    assert done.stdout == ""


def test_a_version_1_export_import_counts_the_observations_it_restores(root: Path, tmp_path: Path) -> None:
    stamp = "2024-01-01T00:00:00.000000Z"
    observations = [{"id": f"obs_{i}", "text": f"fact {i}", "created_at": stamp} for i in range(2)]
    document = {
        "format": "polyg-export",
        "version": 1,
        "project": "old",
        "entities": [
            {
                "id": "ent_0000000000000001",
                "name": "Ada",
                "type": "person",
                "created_at": stamp,
                "updated_at": stamp,
                "description": "",
                "observations": observations,
            }
        ],
        "relationships": [],
    }
    path = tmp_path / "old.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    done = polyg(root, "import", str(path), "--project", "old")
    assert done.returncode == 0, done.stderr
    assert "created 1 entities, 0 relations; added 2 observations; skipped 0 lines" in done.stderr
