"""Plan, store and executors: turning a config into per-sample records."""
