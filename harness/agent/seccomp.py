"""The seccomp filter every sandboxed process runs under, built with libseccomp.

It refuses what Docker's default profile refuses a container without CAP_SYS_ADMIN: tracing
and reading other processes (ptrace, process_vm_*, pidfd_getfd: the sandbox's first process
could be made to outlive the harness), keyrings, kernel modules, mounts and new namespaces,
clocks, swap, reboot, BPF and perf events, io_uring (which bypasses the filter), vsock
sockets, and terminal injection (TIOCSTI). bwrap loads the compiled program (`--seccomp FD`)
just before it runs the command. libseccomp's own Python binding (`seccomp`) is used where
installed, else `pyseccomp`, a ctypes binding with the same API.
"""

from __future__ import annotations

import errno
import os
import tempfile
from functools import cache

REFUSED = (
    "acct", "add_key", "bpf", "clock_adjtime", "clock_settime", "create_module",
    "delete_module", "finit_module", "fsconfig", "fsmount", "fsopen", "fspick",
    "get_kernel_syms", "init_module", "io_uring_enter", "io_uring_register", "io_uring_setup",
    "ioperm", "iopl", "kcmp", "kexec_file_load", "kexec_load", "keyctl", "lookup_dcookie",
    "mount", "mount_setattr", "move_mount", "name_to_handle_at", "nfsservctl",
    "open_by_handle_at", "open_tree", "perf_event_open", "pidfd_getfd", "pivot_root",
    "process_madvise", "process_vm_readv", "process_vm_writev", "ptrace", "query_module",
    "quotactl", "quotactl_fd", "reboot", "request_key", "setdomainname", "sethostname",
    "setns", "settimeofday", "stime", "swapoff", "swapon", "sysfs", "syslog", "umount",
    "umount2", "unshare", "uselib", "userfaultfd", "ustat", "vm86", "vm86old",
)
# clone() with any of these flags makes a namespace; clone3 is refused with ENOSYS, as
# Docker does, so that libc falls back to clone(), whose flags a filter can see
NAMESPACE_FLAGS = (0x00020000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000,
                   0x02000000)  # NEWNS, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWCGROUP
TIOCSTI, TIOCLINUX = 0x5412, 0x541C
AF_VSOCK = 40  # the host and its VMs' channel: no network namespace holds it (Docker refuses)


def _binding():
    try:
        import seccomp  # libseccomp's own binding (e.g. Debian's python3-seccomp)
    except ImportError:
        import pyseccomp as seccomp
    return seccomp


def seccomp_problem() -> str | None:
    """Why no filter can be built here (no libseccomp), or None."""
    try:
        program()
    except (ImportError, OSError, RuntimeError) as e:
        return f"libseccomp is not usable ({e}); install it (e.g. apt-get install libseccomp2)"
    return None


@cache
def program() -> bytes:
    """The filter as a BPF program, compiled once per process."""
    sc = _binding()
    refuse = sc.ERRNO(errno.EPERM)
    rules = sc.SyscallFilter(defaction=sc.ALLOW)
    for name in REFUSED:
        try:
            rules.add_rule(refuse, name)
        except (RuntimeError, ValueError, OSError):
            continue  # not a system call on this architecture
    for flag in NAMESPACE_FLAGS:
        rules.add_rule(refuse, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    rules.add_rule(refuse, "socket", sc.Arg(0, sc.EQ, AF_VSOCK))
    for request in (TIOCSTI, TIOCLINUX):
        rules.add_rule(refuse, "ioctl", sc.Arg(1, sc.MASKED_EQ, 0xFFFFFFFF, request))
    try:
        rules.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    except (RuntimeError, ValueError, OSError):
        pass
    with tempfile.TemporaryFile() as out:
        rules.export_bpf(out)
        out.seek(0)
        return out.read()


def program_fd() -> int:
    """A pipe's read end holding the program, for bwrap's `--seccomp FD` (bwrap reads it to
    the end, so each sandbox needs its own); the caller closes it once the child started."""
    data = program()
    read, write = os.pipe()
    try:
        os.write(write, data)  # a few KiB: well within a pipe's buffer
    finally:
        os.close(write)
    return read
