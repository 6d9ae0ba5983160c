"""What the measuring scripts read of a process from /proc. Scripts next to this file import it directly."""


def _kib(path, label):
    """The value in KiB of the line starting with `label` in the /proc file at `path`, 0 when there is none."""
    with open(path) as lines:
        for line in lines:
            if line.startswith(label):
                return int(line.split()[1])
    return 0


def rss_kib(pid):
    """The resident size of `pid` in KiB (VmRSS)."""
    return _kib(f"/proc/{pid}/status", "VmRSS:")


def pss_kib(pid):
    """The proportional set size of `pid` in KiB (Pss of smaps_rollup)."""
    return _kib(f"/proc/{pid}/smaps_rollup", "Pss:")
