"""The board shell's views: overview, project/environment switcher, audit, id jump."""
