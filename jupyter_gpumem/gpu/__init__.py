"""What reads the machine: NVML (the only importer of pynvml), the host's processes, a snapshot of both, files."""
