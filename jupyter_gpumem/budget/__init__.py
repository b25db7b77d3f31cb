"""The pure decisions: the policy asked, its plan on this machine's GPUs, the overhead, the limits, the State,
the Reading of this kernel's memory against it, attribution, privacy, the configuration."""
