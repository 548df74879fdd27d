"""The supervisor's measure of a MiniApp's data dir (`_quota`): bounded, never following links; and
its pids cgroups' priming."""

from __future__ import annotations

from pathlib import Path

from lineup.supervisor._quota import PidsCgroups, Usage, find_pids_cgroup, measure, over_quota


def test_measure_sums_every_file_beneath_and_counts_every_entry(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"x" * 5000)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b").write_bytes(b"y" * 3000)
    usage = measure(tmp_path, max_entries=100)
    assert usage.complete and usage.entries == 3
    assert usage.bytes >= 8000 + (tmp_path / "sub").stat().st_size


def test_measure_never_follows_a_symlink_out_of_the_directory(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "big").write_bytes(b"z" * 100_000)
    home = tmp_path / "home"
    home.mkdir()
    (home / "link").symlink_to(outside, target_is_directory=True)
    usage = measure(home, max_entries=100)
    assert usage.entries == 1 and usage.bytes < 100_000


def test_measure_stops_at_its_entry_budget_and_that_is_over_quota(tmp_path: Path) -> None:
    for index in range(50):
        (tmp_path / str(index)).touch()
    usage = measure(tmp_path, max_entries=10)
    assert not usage.complete and usage.entries == 11
    assert over_quota(usage, max_bytes=1 << 30, max_entries=10)


def test_a_directory_at_its_byte_quota_is_over_it_and_one_below_is_not() -> None:
    assert over_quota(Usage(1 << 20, 1, complete=True), max_bytes=1 << 20, max_entries=10)
    assert not over_quota(Usage((1 << 20) - 1, 1, complete=True), max_bytes=1 << 20, max_entries=10)
    assert over_quota(Usage(0, 11, complete=True), max_bytes=1 << 20, max_entries=10)


def test_a_missing_directory_measures_as_empty(tmp_path: Path) -> None:
    assert measure(tmp_path / "absent", max_entries=10) == Usage(0, 0, complete=True)


def test_priming_a_move_moves_nothing_and_never_raises(tmp_path: Path) -> None:
    """`prime` writes this process into the cgroup it is in: the lock a move takes is taken,
    and nothing moves; with no cgroup where it looks, it does nothing."""
    found = find_pids_cgroup()
    assert found is not None  # what this machine offers (test_sandbox's pids cgroup test too)
    before = Path("/proc/self/cgroup").read_text()
    PidsCgroups(*found).prime()
    assert Path("/proc/self/cgroup").read_text() == before
    PidsCgroups(tmp_path / "none", "v1").prime()
