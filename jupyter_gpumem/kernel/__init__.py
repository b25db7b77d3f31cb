"""The IPython runtime: the Runtime that owns the kernel's parts, the magic, the Controller, the import watch, the
stream and its sampler thread, the report to the server, the out-of-memory advisor, the warnings, batched, the
inline view."""
