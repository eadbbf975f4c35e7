"""The seccomp filter of the bwrap sandbox: system calls a sandboxed program has no use
for, and that widen the kernel's attack surface, fail with ``EPERM``.

The list follows the container runtimes' default profiles: kernel keyrings, BPF,
``perf_event_open``, ``io_uring``, ``userfaultfd``, module and ``kexec`` loading,
``ptrace`` and reading other processes' memory, mounts and new namespaces (``unshare``,
``setns``, ``clone`` with a ``CLONE_NEW*`` flag; ``clone3``, whose flags a filter cannot
see, fails with ``ENOSYS`` so that the C library falls back to ``clone``), clocks,
swap, accounting, reboot, and ``personality`` switching off address randomisation.
System calls of other ABIs (32-bit ``int 0x80`` on x86-64) kill the process.

The filter is compiled with libseccomp through the ``pyseccomp`` package (the
``loopwright[sandbox]`` extra) and handed to ``bwrap --seccomp FD``. Without them the
sandbox runs without a filter and a warning is logged once.
"""

from __future__ import annotations

import errno
import functools
import logging
import os
import tempfile
from typing import Any

__all__ = ["DENIED", "seccomp_program"]

logger = logging.getLogger("loopwright.sandboxes")

DENIED = [
    "acct",
    "add_key",
    "adjtimex",
    "bpf",
    "chroot",
    "clock_adjtime",
    "clock_settime",
    "create_module",
    "delete_module",
    "fanotify_init",
    "finit_module",
    "fsconfig",
    "fsmount",
    "fsopen",
    "fspick",
    "get_kernel_syms",
    "init_module",
    "io_uring_enter",
    "io_uring_register",
    "io_uring_setup",
    "ioperm",
    "iopl",
    "kcmp",
    "kexec_file_load",
    "kexec_load",
    "keyctl",
    "lookup_dcookie",
    "mount",
    "mount_setattr",
    "move_mount",
    "name_to_handle_at",
    "nfsservctl",
    "open_by_handle_at",
    "open_tree",
    "perf_event_open",
    "pivot_root",
    "process_vm_readv",
    "process_vm_writev",
    "ptrace",
    "query_module",
    "quotactl",
    "quotactl_fd",
    "reboot",
    "request_key",
    "setns",
    "settimeofday",
    "stime",
    "swapoff",
    "swapon",
    "sysfs",
    "_sysctl",
    "syslog",
    "umount",
    "umount2",
    "unshare",
    "uselib",
    "userfaultfd",
    "ustat",
    "vm86",
    "vm86old",
]
"""The system calls that fail with ``EPERM`` in the bwrap sandbox."""

_CLONE_NEW = {
    "CLONE_NEWNS": 0x00020000,
    "CLONE_NEWCGROUP": 0x02000000,
    "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000,
    "CLONE_NEWUSER": 0x10000000,
    "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
}
_PERSONALITY_FLAGS = {"ADDR_NO_RANDOMIZE": 0x0040000, "READ_IMPLIES_EXEC": 0x0400000}


@functools.cache
def seccomp_program() -> bytes | None:
    """The compiled BPF program (cached), or ``None`` (with a logged warning) where
    libseccomp or ``pyseccomp`` is missing."""
    try:
        import pyseccomp as sc  # type: ignore[import-untyped,unused-ignore]
    except (ImportError, OSError) as e:  # (OSError: libseccomp.so.2 is missing)
        logger.warning(
            "the bwrap sandbox runs WITHOUT a seccomp filter (%s): install the "
            "'loopwright[sandbox]' extra (pyseccomp) and libseccomp (Debian/Ubuntu: "
            "apt-get install libseccomp2)",
            e,
        )
        return None
    try:
        return _compile(sc)
    except OSError as e:
        logger.warning("the bwrap sandbox runs WITHOUT a seccomp filter: libseccomp: %s", e)
        return None


def _compile(sc: Any) -> bytes:
    f = sc.SyscallFilter(sc.ALLOW)
    deny = sc.ERRNO(errno.EPERM)
    for name in DENIED:
        try:
            f.add_rule(deny, name)
        except (OSError, ValueError):  # unknown on this architecture
            continue
    for flag in _CLONE_NEW.values():
        f.add_rule(deny, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    for flag in _PERSONALITY_FLAGS.values():
        f.add_rule(deny, "personality", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    try:
        f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    except (OSError, ValueError):
        pass
    with tempfile.TemporaryFile() as out:
        f.export_bpf(out)
        out.seek(0)
        program = out.read()
    if not program or len(program) % 8:
        raise OSError(f"libseccomp exported {len(program)} bytes, not a BPF program")
    return program


def program_fd(program: bytes) -> int:
    """A fresh file descriptor to read ``program`` from (one per ``bwrap`` run, which
    reads it to the end); the caller closes it."""
    fd = os.memfd_create("loopwright-seccomp", os.MFD_CLOEXEC)
    try:
        os.write(fd, program)
        os.lseek(fd, 0, os.SEEK_SET)
    except OSError:
        os.close(fd)
        raise
    return fd
