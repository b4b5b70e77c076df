"""memory_lake: the agent's memory and the users' data lake of experience.

Append-only Parquet tables under one root, read by DuckDB. Imports nothing else of the project.
Public API: ``Lake`` (create/open/append/add_items/connect/query/retrieve/update_values/
current_q), the value types in ``models``, and ``LakeError``.
"""

from memory_lake.errors import LakeError
from memory_lake.lake import Lake
from memory_lake.models import (
    NewItem,
    RetrievalRequest,
    RetrievedItem,
    SeedItemRow,
    ValueUpdate,
)
from memory_lake.retrieval import Bm25Scorer, Candidate, SimilarityScorer

__all__ = [
    "Bm25Scorer",
    "Candidate",
    "Lake",
    "LakeError",
    "NewItem",
    "RetrievalRequest",
    "RetrievedItem",
    "SeedItemRow",
    "SimilarityScorer",
    "ValueUpdate",
]
