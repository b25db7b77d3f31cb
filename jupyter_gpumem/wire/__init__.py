"""The formats that cross a process boundary: the comm protocol, the kernel's report file, the server's API."""
