"""bench/conv_workspace_gpu.py's levels and filler sizes (the GPU part runs on the GPU machine)."""
import importlib.util
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("conv_workspace_gpu",
                                              ROOT / "bench" / "conv_workspace_gpu.py")
conv_workspace_gpu = importlib.util.module_from_spec(spec)
spec.loader.exec_module(conv_workspace_gpu)  # imports torch; nothing of the GPU until main()
MIB = 1 << 20


def test_levels_keep_their_order_and_all_means_no_filler():
    assert conv_workspace_gpu.parse_levels("all, 4096,16") == [None, 4096, 16]
    for bad in ("0", "-5", "1.5", "some", ""):
        with pytest.raises(ValueError, match="--free"):
            conv_workspace_gpu.parse_levels(bad)


def test_the_filler_leaves_the_level_and_the_calls_own_output_free():
    free = 10_000 * MIB
    assert conv_workspace_gpu.filler_bytes(free, None) == 0
    assert conv_workspace_gpu.filler_bytes(free, 1024) == (10_000 - 1024) * MIB
    assert conv_workspace_gpu.filler_bytes(free, 1024, 200 * MIB) == (10_000 - 1024 - 200) * MIB
    assert conv_workspace_gpu.filler_bytes(512 * MIB, 1024) == 0  # less free than the level
