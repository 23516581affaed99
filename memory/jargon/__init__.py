"""Group jargon: offline discovery, the shared candidate filters and the dictionary matcher.

Pure functions and small classes, no storage: the scheduled miner job and the reply path call them.
"""

from memory.jargon.discovery import Discoverer, DiscoveryParams, discover, discover_in
from memory.jargon.filters import FilterParams, FilterResult, filter_candidates, reject_reason
from memory.jargon.matcher import JargonMatcher, Match
from memory.jargon.stats import HistoryStats
from memory.jargon.types import Candidate, MinerMessage

__all__ = [
    "Candidate",
    "Discoverer",
    "DiscoveryParams",
    "FilterParams",
    "FilterResult",
    "HistoryStats",
    "JargonMatcher",
    "Match",
    "MinerMessage",
    "discover",
    "discover_in",
    "filter_candidates",
    "reject_reason",
]
