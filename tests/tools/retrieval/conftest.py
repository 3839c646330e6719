"""One polyg core with the real MiniLM embedder (384 dimensions, as the spec's tests expect) on
an embedded FalkorDB per test module; each test ingests into its own project."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from polyg.runtime.app import Polyg, Services
from tests.core.conftest import isolated_settings

TEST_DATA = Path(__file__).with_name("test_data.yaml")


def load_test_data() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(TEST_DATA.read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="module")
async def services(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Services]:
    core = Polyg(isolated_settings(tmp_path_factory.mktemp("retrieval")))
    try:
        yield await core.ready()
    finally:
        await core.close()


@pytest.fixture
def project() -> str:
    return f"r{uuid.uuid4().hex[:12]}"


def write_corpus(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for item in load_test_data()["corpus"]:
        (folder / item["file"]).write_text(item["content"], encoding="utf-8")
    return folder


def minimal_pdf(text_lines: list[str], title: str, author: str) -> bytes:
    """A one-page PDF whose text a reader extracts, with title and author metadata."""
    stream = "BT /F1 12 Tf 72 720 Td 14 TL " + " ".join(f"({line}) '" for line in text_lines) + " ET"
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        "/Resources << /Font << /F1 5 0 R >> >> >>",
        f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        f"<< /Title ({title}) /Author ({author}) >>",
    ]
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R /Info 6 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return out
