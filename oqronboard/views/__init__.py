"""The board shell's views: overview, project/environment switcher, audit, id jump, and
the pages that read several tables (run detail, the queues and a job, definitions,
schedules)."""
