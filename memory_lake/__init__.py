"""memory_lake: the agent's memory and the users' data lake of experience.

A DuckLake (Parquet data files plus a SQLite or PostgreSQL catalog) of append-only tables,
read and written with DuckDB. Imports nothing else of the project. Public API: ``Lake``
(create/open/open_or_create/append/add_items/connect/query/retrieve/update_values/current_q/
compact/snapshots and the typed reads of ``reads``), the value types in ``models``, and
``LakeError``.
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
from memory_lake.reads import AttemptRow, CampaignState, ChildTrace, FailureAndFix, TaskAttempt, TaskProgress
from memory_lake.retrieval import Bm25Scorer, Candidate, SimilarityScorer

__all__ = [
    "AttemptRow",
    "Bm25Scorer",
    "CampaignState",
    "ChildTrace",
    "FailureAndFix",
    "Candidate",
    "Lake",
    "LakeError",
    "NewItem",
    "RetrievalRequest",
    "RetrievedItem",
    "SeedItemRow",
    "SimilarityScorer",
    "TaskAttempt",
    "TaskProgress",
    "ValueUpdate",
]
