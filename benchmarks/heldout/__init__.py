"""A held-out set of workloads from pip libraries the advisor was never tuned on."""
