"""The sections of benchmarks/gpu_acceptance.py, one module each; each case runs in a fresh process."""
