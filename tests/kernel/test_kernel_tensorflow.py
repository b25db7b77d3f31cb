"""`%gpumem` settings in real kernels with TensorFlow (tensorflow-cpu) really imported."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.kernel

THREADS = (
    "import tensorflow as tf; print(tf.config.threading.get_intra_op_parallelism_threads(), "
    "tf.config.threading.get_inter_op_parallelism_threads())"
)
S1_GPU_B = (
    "GPU 1 NVIDIA GeForce GTX 1080: budget 4096 MiB (50% of 8192 MiB) as nvidia-smi counts it = "
    "allocator limit 3696 MiB + about 400 MiB CUDA context and libraries (estimated: TensorFlow on Pascal "
    "(compute 6.1))"
)


def test_magic_first_then_import_applies_the_policy_at_import(kernel_with):
    kernel = kernel_with("s1_two_gpus")
    kernel.run("%load_ext jupyter_gpumem")
    recorded = kernel.run("%gpumem fraction=0.5 gpus=1 threads=1")
    assert recorded.status == "ok" and recorded.stderr == ""
    assert "recorded" in recorded.stdout and "import tensorflow" in recorded.stdout
    assert S1_GPU_B in recorded.stdout
    assert "GPU 0 NVIDIA GeForce GTX 1080 Ti: hidden from this kernel" in recorded.stdout
    env = kernel.run("import os; print(os.environ['CUDA_VISIBLE_DEVICES'], os.environ['CUDA_DEVICE_ORDER'])")
    assert env.stdout == "GPU-b2b2b2b2-0000-4000-8000-000000000002 PCI_BUS_ID\n"

    imported = kernel.run("import tensorflow as tf")
    assert imported.status == "ok", imported.error
    assert "jupyter-gpumem: applied fraction=0.5 gpus=1 threads=1 to TensorFlow." in imported.stdout
    assert S1_GPU_B in imported.stdout
    assert "Not in force: TensorFlow 2.21.0 is a CPU-only build" in imported.stdout  # tensorflow-cpu: said, not hidden
    assert kernel.run(THREADS).stdout == "1 1\n"
    status = kernel.run("%gpumem status").stdout
    assert "Policy: fraction=0.5 gpus=1 threads=1, applied to TensorFlow at" in status
    assert "in force in TensorFlow" not in status


def test_imported_but_not_started_applies_at_once(kernel_with):
    kernel = kernel_with("s2_seven_jobs")
    kernel.run("%load_ext jupyter_gpumem\nimport tensorflow as tf")
    reply = kernel.run("%gpumem threads=1 growth=on")
    assert reply.stdout.startswith("jupyter-gpumem: applied growth=on threads=1 to TensorFlow.")
    assert kernel.run(THREADS).stdout == "1 1\n"
    again = kernel.run("%gpumem threads=1 growth=on")
    assert again.stdout == "jupyter-gpumem: growth=on threads=1 is already in force; nothing to do.\n"


def test_too_late_says_what_is_in_force_and_changes_nothing(kernel_with):
    kernel = kernel_with("s1_two_gpus")
    kernel.run("%load_ext jupyter_gpumem\nimport tensorflow as tf\nx = tf.constant([1.0]) * 2")
    reply = kernel.run("%gpumem fraction=0.5 threads=2")
    assert reply.status == "ok" and reply.error == "" and reply.stderr == ""
    assert reply.stdout.startswith("Too late: TensorFlow has already started in this kernel")
    assert "Nothing was changed." in reply.stdout
    assert "In force: TensorFlow 2." in reply.stdout and "intra-op default (all cores)" in reply.stdout
    assert "restart the kernel, then run %gpumem fraction=0.5 threads=2 before any TensorFlow code" in reply.stdout
    assert kernel.run(THREADS).stdout == "0 0\n"
    assert "Policy: none set" in kernel.run("%gpumem status").stdout


BAD_INPUTS = [
    ("%gpumem fraction=1.5", "fraction=1.5 is outside (0, 1]"),
    ("%gpumem fraction=abc", "fraction=abc is not a number"),
    ("%gpumem limit=-1GiB", "limit=-1GiB must be above zero"),
    ("%gpumem limit=0MiB", "limit=0MiB must be above zero"),
    ("%gpumem limit=20GiB gpus=1", "limit=20GiB is more than GPU 1's 8192 MiB"),
    ("%gpumem colour=blue", "colour= is not a %gpumem setting"),
    ("%gpumem gpus=7", "there is no GPU 7 here"),
    ("%gpumem gpus=GPU-00000000-dead", "there is no GPU GPU-00000000-dead here"),
    ("%gpumem fraction=0.4 limit=2GiB", "contradict each other"),
    ("%gpumem threads=-3", "threads=-3 is not a whole number from 1 to 1024"),
]


def test_every_bad_input_is_a_sentence_and_the_earlier_policy_stays(kernel_with):
    kernel = kernel_with("s1_two_gpus")
    kernel.run("%load_ext jupyter_gpumem")
    kernel.run("%gpumem fraction=0.3 threads=2")
    for line, sentence in BAD_INPUTS:
        reply = kernel.run(line)
        assert reply.status == "ok" and reply.error == "", line
        assert sentence in reply.stderr and reply.stderr.rstrip().endswith("Nothing was changed."), line
        assert reply.stderr.count("\n") == 1, line
    status = kernel.run("%gpumem status").stdout
    assert "Policy: fraction=0.3 threads=2, recorded and waiting for the framework's import." in status
    assert kernel.run("import os; print(os.environ['TF_NUM_INTRAOP_THREADS'])").stdout == "2\n"


def test_reset_forgets_a_policy_not_yet_applied(kernel_with):
    kernel = kernel_with("s1_two_gpus")
    kernel.run("%load_ext jupyter_gpumem")
    kernel.run("%gpumem gpus=1 threads=2")
    assert (
        kernel.run("%gpumem reset").stdout
        == "jupyter-gpumem: forgot gpus=1 threads=2; each framework's own defaults apply.\n"
    )
    assert kernel.run("import os; print('CUDA_VISIBLE_DEVICES' in os.environ)").stdout == "False\n"
    imported = kernel.run("import tensorflow as tf")
    assert "jupyter-gpumem" not in imported.stdout
    assert kernel.run(THREADS).stdout == "0 0\n"


def test_without_a_driver_threads_still_apply(kernel_with):
    kernel = kernel_with("no_driver")
    kernel.run("%load_ext jupyter_gpumem")
    recorded = kernel.run("%gpumem threads=1")
    assert "No GPU: The NVIDIA driver is installed but not loaded" in recorded.stdout
    assert recorded.stderr == ""
    kernel.run("import tensorflow as tf")
    assert kernel.run(THREADS).stdout == "1 1\n"


def test_configured_defaults_and_ceiling_from_the_environment(kernel_with):
    kernel = kernel_with(
        "s1_two_gpus",
        env={"JUPYTER_GPUMEM_FRACTION": "0.4", "JUPYTER_GPUMEM_MAX_FRACTION": "0.5", "JUPYTER_GPUMEM_THREADS": "x"},
    )
    loaded = kernel.run("%load_ext jupyter_gpumem").stdout
    assert "The configured default threads was ignored: threads=x is not a whole number" in loaded
    assert "fraction=0.4 recorded (configured defaults)" in loaded
    refused = kernel.run("%gpumem fraction=0.8")
    assert "fraction=0.8 is above this server's ceiling of 0.5 of each GPU" in refused.stderr
    accepted = kernel.run("%gpumem fraction=0.5 gpus=1")
    assert "budget 4096 MiB (50% of 8192 MiB)" in accepted.stdout
    kernel.run("import tensorflow as tf")
    assert "Policy: fraction=0.5 gpus=1, applied to TensorFlow at" in kernel.run("%gpumem status").stdout


def test_a_ceiling_alone_becomes_the_budget(kernel_with):
    kernel = kernel_with("s1_two_gpus", env={"JUPYTER_GPUMEM_MAX_FRACTION": "0.5"})
    kernel.run("%load_ext jupyter_gpumem")
    assert "this server's ceiling (0.5 of each GPU) is the budget" in kernel.run("%gpumem status").stdout
    imported = kernel.run("import tensorflow as tf").stdout
    assert "GPU 0 NVIDIA GeForce GTX 1080 Ti: budget 5711 MiB (50% of 11422 MiB)" in imported
    assert "GPU 1 NVIDIA GeForce GTX 1080: budget 4096 MiB (50% of 8192 MiB)" in imported


def test_ipython_configuration_sets_defaults_too(kernel_with, tmp_path):
    profile = tmp_path / "ipython"
    (profile / "profile_default").mkdir(parents=True)
    (profile / "profile_default" / "ipython_kernel_config.py").write_text(
        "c.InteractiveShellApp.extensions = ['jupyter_gpumem']\nc.GpumemConfig.limit = '2GiB'\n"
    )
    kernel = kernel_with("s1_two_gpus", env={"IPYTHONDIR": str(profile)})
    status = kernel.run("%gpumem status").stdout
    assert "Policy: limit=2GiB, recorded and waiting for the framework's import." in status


def test_tensorflow_cpu_every_surface_agrees_the_budget_is_in_force_on_no_gpu_and_why(kernel_with):
    """NVML sees a GPU holding this kernel; tensorflow-cpu cannot use it. The import message, status,
    explain and the sidebar's sample tell one story: applied, in force on no GPU, and what to install."""
    from test_stream import connect, sample_where

    kernel = kernel_with("own_process")
    kernel.run("%load_ext jupyter_gpumem")
    kernel.run("%gpumem fraction=0.4")
    why = "TensorFlow 2.21.0 is a CPU-only build (tensorflow-cpu, or a platform without GPU wheels)"
    install = "pip install 'tensorflow[and-cuda]'"
    imported = kernel.run("import tensorflow as tf").stdout
    assert f"Not in force: {why}" in imported and install in imported
    status = kernel.run("%gpumem status").stdout
    assert f"the GPU budget is in force on no GPU: {why}" in status and "in force in TensorFlow" not in status
    explained = kernel.run("%gpumem explain").stdout
    assert f"Policy fraction=0.4: applied to TensorFlow, but NOT in force on any GPU: {why}" in explained
    assert "the 6550 MiB budget is not in force on this GPU" in explained and "holds." not in explained
    comm_id, _ = connect(kernel)
    sample = sample_where(kernel, comm_id, lambda s: s["policy_state"] is not None)
    assert sample["policy_state"] == "not_in_force" and sample["policy_note"].startswith(why)
    assert [(g["budget_bytes"], g["in_force"]) for g in sample["gpus"]] == [(int(0.4 * 16376 * 1024 * 1024), False)]
