"""The emulated kubelet's log files: rotated at ``containerLogMaxSize``, stamps taken by the writer."""

from __future__ import annotations

from airflow_provider_volcano_argo.sandbox.kubelet.logstore import CONTAINER_LOG_MAX_SIZE, LogStore, _parse_stamp


def _lines(path) -> list[str]:
    return [line.split(" ", 1)[1] for line in path.read_text().splitlines()]


def test_a_log_rotates_at_its_max_size_and_the_path_holds_only_what_came_after(tmp_path):
    store = LogStore(tmp_path, max_size=100)
    instance = store.new_instance("ns", "pod", "c")
    opened = instance.path.open("rb")  # a follow holding the file open, as the kubelet's ReadLogs does
    for i in range(10):
        instance.write(f"line {i} " + "x" * 20)  # 59 bytes with the stamp: every second line rotates
    assert instance.rotations == 5
    assert _lines(instance.path) == []  # the last write filled the fifth file, which rotated
    instance.write("after")
    assert _lines(instance.path) == ["after"]
    assert [line.split()[1] for line in opened.read().decode().splitlines()] == ["line", "line"]  # the old file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ns_pod_c_0.log"]  # rotated files are not kept
    opened.close()


def test_the_default_max_size_is_the_kubelets_and_none_never_rotates(tmp_path):
    assert LogStore(tmp_path).max_size == CONTAINER_LOG_MAX_SIZE == 10 * 1024 * 1024
    instance = LogStore(tmp_path, max_size=None).new_instance("ns", "pod", "c")
    for i in range(100):
        instance.write(f"line {i}")
    assert instance.rotations == 0 and len(_lines(instance.path)) == 100


def test_a_stamp_taken_before_an_earlier_write_lands_after_it(tmp_path):
    """Containerd stamps each stream's line before the shared write: the file is not in stamp order."""
    instance = LogStore(tmp_path).new_instance("ns", "pod", "c")
    instance.write("stdout", stamp_ns=2_000_000_000)
    instance.write("stderr", stamp_ns=1_999_999_999)
    stamps = [_parse_stamp(line.split(" ", 1)[0]) for line in instance.path.read_text().splitlines()]
    assert stamps == [2_000_000_000, 1_999_999_999]
