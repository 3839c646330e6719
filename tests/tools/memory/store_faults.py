"""`polyg` with store faults a test can arm: run as `python tests/tools/memory/store_faults.py serve ...`.

`STORE_FAULTS_DIR` names a directory; a file there named after one of the query functions below
makes that function's next call fail with a StoreError before it reaches the store, once (the
file is removed). So a test drives the real server through the real MCP client, and makes
exactly one write of a tool fail, as a store that goes away would.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType
from typing import Any

from polyg.errors import StoreError
from polyg.store.queries import causal, temporal

# The one function that writes a fact, and the one that writes a new causal link.
FAULTY: tuple[tuple[ModuleType, str], ...] = ((temporal, "create_fact"), (causal, "create_link"))


def take(flag: Path) -> bool:
    """Whether the fault was armed; disarmed once taken."""
    try:
        flag.unlink()
    except FileNotFoundError:
        return False
    return True


def install(armed: Path) -> None:
    for module, name in FAULTY:
        real = getattr(module, name)

        async def failing(*args: Any, _real: Any = real, _flag: Path = armed / name, **kwargs: Any) -> Any:
            if take(_flag):
                raise StoreError("the store went away (a fault the test armed)")
            return await _real(*args, **kwargs)

        setattr(module, name, failing)


if __name__ == "__main__":
    install(Path(os.environ["STORE_FAULTS_DIR"]))
    from polyg.cli import main

    main()
