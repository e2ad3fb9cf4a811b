"""Observability the engine offers on request: a worker's Prometheus counters and
histograms (:mod:`.worker_metrics`), OpenTelemetry spans around ``add`` and each run
(:mod:`.tracing`), and JSON log lines (:mod:`.json_logs`). Each is off unless asked
for, and imports its third-party package only then."""
