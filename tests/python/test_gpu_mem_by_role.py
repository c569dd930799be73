"""bench/gpu_mem_by_role.py's roles and summary (its sampling runs on the GPU machine)."""
import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("gpu_mem_by_role", ROOT / "bench" / "gpu_mem_by_role.py")
gpu_mem_by_role = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gpu_mem_by_role)


def test_roles_come_from_the_workers_names():
    assert gpu_mem_by_role.role_of("kbx-reference\n") == "reference"
    assert gpu_mem_by_role.role_of("kbx-candidate") == "candidate"
    assert gpu_mem_by_role.role_of("python3") == "other"
    assert gpu_mem_by_role.role_of("kbx-") == "other"
    assert gpu_mem_by_role.role_of("") == "other"


def test_the_summary_names_who_held_the_memory_at_its_highest():
    lines = ["0.0,0,_total,30000", "0.0,0,_capacity,81559",
             "0.0,11,reference,20000", "0.0,21,candidate,9000",
             "0.25,0,_total,78000", "0.25,0,_capacity,81559",
             "0.25,11,reference,50000", "0.25,12,reference,20000", "0.25,21,candidate,7000",
             "garbage", "0.5,x,candidate,1"]
    out = gpu_mem_by_role.summarize(gpu_mem_by_role.read_samples(lines))
    assert out[0] == ("2 samples; GPU memory 81559 MiB; in use at most 78000 MiB (t=0.25 s); "
                      "above 90% in 1 samples")
    assert out[1] == "  candidate: 1 processes, peak median 9000 MiB, largest 9000 MiB"
    assert out[2] == "  reference: 2 processes, peak median 35000 MiB, largest 50000 MiB"
    assert out[3] == "  at the highest: candidate 7000 MiB in 1, reference 70000 MiB in 2"
    assert gpu_mem_by_role.summarize({}) == ["no samples"]
