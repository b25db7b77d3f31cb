"""Browser-test fixtures (labserver.py): a JupyterLab server on the stand-in NVML, and chromium."""

from labserver import browser, lab, page

__all__ = ["browser", "lab", "page"]
