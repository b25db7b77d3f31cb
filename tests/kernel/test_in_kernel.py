"""`%gpumem` in a real IPython kernel (jupyter_client) over the stand-in NVML."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.kernel


def test_status_in_a_kernel_shows_s1_figures(kernel_with):
    kernel = kernel_with("s1_two_gpus")
    assert kernel.run("%load_ext jupyter_gpumem").status == "ok"
    reply = kernel.run("%gpumem status")
    assert reply.status == "ok" and reply.stderr == "" and reply.error == ""
    out = reply.stdout
    assert "NVIDIA driver 537.58" in out
    assert "GPU 0  NVIDIA GeForce GTX 1080 Ti" in out
    assert "memory 6063 MiB used of 11422 MiB (11.2 GiB) (53%)" in out
    assert "GPU 1  NVIDIA GeForce GTX 1080" in out
    assert "memory 4575 MiB used of 8192 MiB (8.0 GiB) (56%)" in out
    assert [line.split()[:4] for line in out.splitlines() if line.strip().startswith("788")] == [
        ["788", "N/A", "5927", "MiB"],
        ["788", "N/A", "N/A", "N/A"],
    ]
    assert "SIMULATED GPU" in out


def test_bare_gpumem_is_status_and_the_snapshot_is_available_to_code(kernel_with):
    kernel = kernel_with("s1_two_gpus")
    kernel.run("%load_ext jupyter_gpumem")
    assert "GPU 0  NVIDIA GeForce GTX 1080 Ti" in kernel.run("%gpumem").stdout
    reply = kernel.run(
        "import jupyter_gpumem\n"
        "s = jupyter_gpumem.take_snapshot()\n"
        "print([(d.uuid, d.total_bytes >> 20, [(p.pid, p.used_bytes) for p in d.processes])\n"
        "       for d in s.devices])"
    )
    assert reply.stdout.strip() == (
        "[('GPU-a1a1a1a1-0000-4000-8000-000000000001', 11422, [(788, 6214909952)]), "
        "('GPU-b2b2b2b2-0000-4000-8000-000000000002', 8192, [(788, None), (1204, None)])]"
    )


def test_this_kernels_own_process_is_marked(kernel_with):
    kernel = kernel_with("own_process")
    kernel.run("%load_ext jupyter_gpumem")
    pid = kernel.run("import os; print(os.getpid())").stdout.strip()
    marked = [line for line in kernel.run("%gpumem").stdout.splitlines() if "<- this kernel" in line]
    assert len(marked) == 1 and marked[0].split()[0] == pid
    assert "3100 MiB" in marked[0]


def test_help_lists_every_subcommand(kernel_with):
    kernel = kernel_with("s2_seven_jobs")
    kernel.run("%load_ext jupyter_gpumem")
    for form in ("%gpumem --help", "%gpumem -h", "%gpumem help"):
        out = kernel.run(form).stdout
        assert "%gpumem status" in out and "%gpumem --help" in out and "take_snapshot()" in out


def test_unknown_arguments_get_a_sentence_and_the_kernel_keeps_working(kernel_with):
    kernel = kernel_with("s2_seven_jobs")
    kernel.run("%load_ext jupyter_gpumem")
    for line in ("%gpumem frobnicate", "%gpumem status extra", "%gpumem 'unclosed"):
        reply = kernel.run(line)
        assert reply.status == "ok" and reply.error == "" and reply.stdout == ""
        assert reply.stderr.count("\n") == 1 and "%gpumem --help" in reply.stderr
    assert kernel.run("print(6 * 7)").stdout == "42\n"


def test_no_driver_is_one_plain_sentence_and_the_kernel_keeps_working(kernel_with):
    kernel = kernel_with("no_driver")
    kernel.run("%load_ext jupyter_gpumem")
    reply = kernel.run("%gpumem status")
    assert reply.status == "ok" and reply.error == "" and reply.stderr == ""
    assert reply.stdout.startswith("The NVIDIA driver is installed but not loaded")
    assert reply.stdout.count("\n") == 1
    assert kernel.run("print(6 * 7)").stdout == "42\n"


def test_no_library_at_all_says_no_nvidia_driver_found(kernel_with, tmp_path):
    import ctypes.util

    if ctypes.util.find_library("nvidia-ml"):
        pytest.skip("this machine has a real libnvidia-ml installed, so the library is not missing")
    empty = tmp_path / "empty"
    empty.mkdir()
    kernel = kernel_with("s1_two_gpus", library_dir=empty)
    kernel.run("%load_ext jupyter_gpumem")
    reply = kernel.run("%gpumem")
    assert reply.status == "ok" and reply.error == ""
    assert reply.stdout.startswith("No NVIDIA driver found")


def test_loading_the_extension_twice_changes_nothing(kernel_with):
    kernel = kernel_with("s2_seven_jobs")
    kernel.run("%load_ext jupyter_gpumem")
    assert kernel.run("%reload_ext jupyter_gpumem").status == "ok"
    assert kernel.run("%load_ext jupyter_gpumem").status == "ok"
    assert "GeForce GTX 1080" in kernel.run("%gpumem").stdout


def test_the_configured_defaults_apply_at_load_even_after_a_figure_was_asked_for_first(kernel_with):
    kernel = kernel_with("s1_two_gpus", env={"JUPYTER_GPUMEM_FRACTION": "0.4"})
    assert kernel.run("import jupyter_gpumem; jupyter_gpumem.figure()").status == "ok"  # before %load_ext
    assert "fraction=0.4 recorded (configured defaults)" in kernel.run("%load_ext jupyter_gpumem").stdout
    assert "fraction=0.4 recorded (configured defaults)" not in kernel.run("%reload_ext jupyter_gpumem").stdout


def test_unloading_takes_the_magic_away_and_loading_again_brings_it_back(kernel_with):
    kernel = kernel_with("s2_seven_jobs")
    kernel.run("%load_ext jupyter_gpumem")
    assert "Line magic function `%gpumem` not found" in kernel.run("%unload_ext jupyter_gpumem\n%gpumem").stderr
    kernel.run("%load_ext jupyter_gpumem")
    assert "GeForce GTX 1080" in kernel.run("%gpumem").stdout


def test_unloading_an_extension_never_loaded_starts_nothing(kernel_with):
    kernel = kernel_with("s1_two_gpus")
    code = (
        "from jupyter_gpumem.kernel import notebook, runtime\n"
        "notebook.unload_ipython_extension(get_ipython())\n"
        "print(runtime.current())"
    )
    reply = kernel.run(code)
    assert reply.status == "ok" and reply.stdout.strip() == "None", reply
