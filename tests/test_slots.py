"""GPU slot allocation (mdm_mi.infra.slots) on CPU: the device count is injected, concurrent jobs are
real processes holding real ``flock`` locks, and ``resolve_device`` is checked with torch's CUDA
queries patched."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from conftest import REPO
from mdm_mi.infra import runtime, slots
from mdm_mi.infra.errors import InputError

HOLDER = """
import sys
from mdm_mi.infra.slots import claim_slot
print(claim_slot(int(sys.argv[1]), sys.argv[2], timeout=float(sys.argv[3]), poll=0.05), flush=True)
sys.stdin.read()  # hold the slot until the test closes stdin (or kills us)
"""


class Holder:
    """A separate process that claims a slot, prints its index and holds it until released."""

    def __init__(self, n_devices: int, folder, timeout: float = 30.0):
        env = os.environ | {"PYTHONPATH": str(REPO / "src")}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(n_devices), str(folder), str(timeout)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )

    def slot(self) -> int:
        """Block until the process has claimed its slot; return the index."""
        line = self.proc.stdout.readline()
        assert line, self.proc.stderr.read()
        return int(line)

    def release(self) -> None:
        """Close stdin so the process exits normally."""
        self.proc.stdin.close()
        self.proc.wait(timeout=30)

    def kill(self) -> None:
        """SIGKILL: no cleanup code runs in the process."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)


@pytest.fixture
def holders():
    """Factory of :class:`Holder` processes; every one is killed at the end of the test."""
    made: list[Holder] = []

    def make(*args, **kwargs) -> Holder:
        made.append(Holder(*args, **kwargs))
        return made[-1]

    yield make
    for h in made:
        if h.proc.poll() is None:
            h.kill()


@pytest.fixture(autouse=True)
def fresh_process_slot(monkeypatch, tmp_path):
    """Each test starts with no slot held by this process and its own lock folder."""
    slots.release_slot()
    monkeypatch.setenv("MDM_MI_SLOT_DIR", str(tmp_path / "locks"))
    yield
    slots.release_slot()


def test_concurrent_jobs_get_distinct_slots(holders, tmp_path):
    started = [holders(3, tmp_path) for _ in range(3)]  # all three race for the locks
    assert sorted(h.slot() for h in started) == [0, 1, 2]


def test_job_waits_when_all_slots_are_taken(holders, tmp_path):
    first, second = holders(2, tmp_path), holders(2, tmp_path)
    taken = {first.slot(): first, second.slot(): second}
    waiting = holders(2, tmp_path)
    time.sleep(1.0)
    assert waiting.proc.poll() is None  # still waiting, has printed no slot
    taken[1].release()
    assert waiting.slot() == 1
    assert "all 2 GPU slots" in waiting.proc.stderr.readline()


def test_wait_times_out_with_one_line_error(holders, tmp_path):
    for h in [holders(2, tmp_path), holders(2, tmp_path)]:
        h.slot()
    with pytest.raises(slots.SlotError, match=r"no free GPU slot after 0 s: all 2 slots") as info:
        slots.claim_slot(2, tmp_path, timeout=0.2, poll=0.05)
    assert "\n" not in str(info.value)


def test_slot_freed_after_sigkill(holders, tmp_path):
    killed, other = holders(2, tmp_path), holders(2, tmp_path)
    index = killed.slot()
    other.slot()
    killed.kill()
    assert slots.claim_slot(2, tmp_path, timeout=5, poll=0.05) == index


def test_process_keeps_its_slot_on_later_calls(tmp_path):
    first = slots.claim_slot(4, tmp_path, timeout=1)
    assert slots.claim_slot(4, tmp_path, timeout=1) == first
    assert sorted(p.name for p in tmp_path.glob("slot-*.lock")) == ["slot-0.lock"]


def test_one_device_takes_no_lock(tmp_path):
    folder = tmp_path / "never-made"
    assert slots.claim_slot(1, folder, timeout=0) == 0
    assert not folder.exists()


def test_simulated_device_count_from_env(monkeypatch):
    monkeypatch.setenv("MDM_MI_SIMULATED_GPUS", "3")
    assert slots.visible_devices() == 3
    monkeypatch.setenv("MDM_MI_SIMULATED_GPUS", "two")
    with pytest.raises(slots.SlotError, match="whole number"):
        slots.visible_devices()


@pytest.fixture
def fake_gpus(monkeypatch):
    """Make torch report ``n`` CUDA devices; returns the list of devices passed to set_device."""
    current: list[int] = []

    def install(n: int) -> list[int]:
        monkeypatch.setattr(torch.cuda, "is_available", lambda: n > 0)
        monkeypatch.setattr(torch.cuda, "device_count", lambda: n)
        monkeypatch.setattr(torch.cuda, "set_device", current.append)
        monkeypatch.setenv("MDM_MI_SIMULATED_GPUS", str(n))
        return current

    return install


def test_resolve_device_auto_spreads_over_gpus(fake_gpus, holders, tmp_path):
    current = fake_gpus(2)
    other = holders(2, tmp_path / "locks")
    assert other.slot() == 0
    assert runtime.resolve_device("auto") == "cuda:1"
    assert runtime.resolve_device("cuda") == "cuda:1"  # the same slot: one per process
    assert current[-1] == 1


def test_resolve_device_single_gpu_is_cuda0_without_locks(fake_gpus, tmp_path):
    fake_gpus(1)
    assert runtime.resolve_device("auto") == "cuda:0"
    assert not (tmp_path / "locks").exists()


def test_resolve_device_timeout_is_input_error(fake_gpus, holders, tmp_path, monkeypatch):
    fake_gpus(2)
    for h in [holders(2, tmp_path / "locks"), holders(2, tmp_path / "locks")]:
        h.slot()
    monkeypatch.setenv("MDM_MI_SLOT_TIMEOUT", "0")
    with pytest.raises(InputError, match="no free GPU slot"):
        runtime.resolve_device("auto")


def test_resolve_device_accepts_indexed_cuda(fake_gpus, tmp_path):
    fake_gpus(2)
    assert runtime.resolve_device("cuda:1") == "cuda:1"
    assert not (tmp_path / "locks").exists()  # a named device takes no slot
    with pytest.raises(InputError, match=r"'cuda:2' requested but only 2 CUDA GPU\(s\) are visible"):
        runtime.resolve_device("cuda:2")


@pytest.mark.parametrize("name", ["gpu", "cuda:", "cuda:x", "CUDA", "cuda:0 "])
def test_resolve_device_rejects_bad_names(fake_gpus, name):
    fake_gpus(2)
    with pytest.raises(InputError, match="device must be auto, cpu, cuda or cuda:<index>"):
        runtime.resolve_device(name)


def test_resolve_device_without_gpu(fake_gpus):
    fake_gpus(0)
    assert runtime.resolve_device("auto") == "cpu"
    assert runtime.resolve_device("cpu") == "cpu"
    for name in ("cuda", "cuda:0"):
        with pytest.raises(InputError, match="no CUDA GPU is visible"):
            runtime.resolve_device(name)
