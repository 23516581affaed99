"""Background memory daemons: jobs registered with one JobRunner, live or in simulated time."""

from tasks.registry import JobSpec
from tasks.runner import JobRunner

__all__ = ["JobRunner", "JobSpec"]
