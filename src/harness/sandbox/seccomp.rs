//! The seccomp filter every sandboxed command runs under. bwrap loads it (`--seccomp FD`) just
//! before it executes the command, so bwrap's own setup is not filtered and everything the
//! command starts is. The calls in [`refused_calls`] fail with EPERM, as container runtimes
//! refuse them; a call made through another ABI than the native one (i386 `int 0x80`, x32)
//! kills the process, since a filter written for one syscall table cannot judge another.
//! Calls that set a file mode are refused when the mode carries a set-id bit, and `openat2`
//! answers ENOSYS (`seccomp_set_id.rs`).
//! Invariant: on an architecture this table does not describe, no program is built, and the
//! launch fails instead of running the command unfiltered.

use std::collections::BTreeMap;
use std::io::{Seek, Write};
use std::os::fd::OwnedFd;

use seccompiler::{BpfProgram, SeccompAction, SeccompFilter, TargetArch, sock_filter};
use serde::Serialize;

use super::SandboxError;

#[path = "seccomp_set_id.rs"]
pub mod set_id;

/// One refused system call: its name, its number on this architecture, and why it is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RefusedCall {
    pub name: &'static str,
    #[serde(skip)]
    pub nr: i64,
    pub why: &'static str,
}

const fn refuse(nr: i64, name: &'static str, why: &'static str) -> RefusedCall {
    RefusedCall { nr, name, why }
}

/// The architectures the table below is written for.
pub const SUPPORTED_ARCHES: &[&str] = &["x86_64", "aarch64"];

const KEYS: &str = "kernel keyrings are not namespaced: the host user's keyrings and the keys \
                    in them (tokens, Kerberos and NFS credentials) would be readable and writable";
const MOUNTS: &str = "changes the mount table; the sandbox's view is fixed by bwrap before the \
                      command starts, and every mount needs privilege the command lacks";
const CLOCK: &str = "sets the host's clock (time is not namespaced)";

/// Calls refused on every supported architecture. Namespace creation through `clone`/`clone3`
/// is not listed: nested user namespaces are refused by `user.max_user_namespaces = 0` in the
/// sandbox, every other namespace needs a capability the command does not have, and `clone3`
/// passes its flags in memory a filter cannot read.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
const COMMON: &[RefusedCall] = &[
    refuse(libc::SYS_keyctl, "keyctl", KEYS),
    refuse(libc::SYS_add_key, "add_key", KEYS),
    refuse(libc::SYS_request_key, "request_key", KEYS),
    refuse(
        libc::SYS_bpf,
        "bpf",
        "loads programs into the host kernel; a large, often exploited attack surface",
    ),
    refuse(
        libc::SYS_perf_event_open,
        "perf_event_open",
        "host-wide performance monitoring and a frequent source of kernel bugs; no build needs it",
    ),
    refuse(
        libc::SYS_userfaultfd,
        "userfaultfd",
        "lets a process stall kernel page faults at will, the usual way to win kernel races",
    ),
    refuse(
        libc::SYS_io_uring_setup,
        "io_uring_setup",
        "io_uring: a large kernel attack surface with a long record of privilege escalations \
         (refused by Docker's default profile); libuv, tokio and others fall back to epoll",
    ),
    refuse(
        libc::SYS_io_uring_enter,
        "io_uring_enter",
        "io_uring, see io_uring_setup",
    ),
    refuse(
        libc::SYS_io_uring_register,
        "io_uring_register",
        "io_uring, see io_uring_setup",
    ),
    refuse(
        libc::SYS_kexec_load,
        "kexec_load",
        "replaces the running kernel",
    ),
    refuse(
        libc::SYS_kexec_file_load,
        "kexec_file_load",
        "replaces the running kernel",
    ),
    refuse(
        libc::SYS_init_module,
        "init_module",
        "loads code into the kernel",
    ),
    refuse(
        libc::SYS_finit_module,
        "finit_module",
        "loads code into the kernel",
    ),
    refuse(
        libc::SYS_delete_module,
        "delete_module",
        "unloads kernel modules",
    ),
    refuse(
        libc::SYS_open_by_handle_at,
        "open_by_handle_at",
        "opens files by handle, bypassing path lookup and the mount view (the 'shocker' \
         container escape)",
    ),
    refuse(
        libc::SYS_name_to_handle_at,
        "name_to_handle_at",
        "makes the handles open_by_handle_at consumes",
    ),
    refuse(libc::SYS_mount, "mount", MOUNTS),
    refuse(libc::SYS_umount2, "umount2", MOUNTS),
    refuse(libc::SYS_pivot_root, "pivot_root", MOUNTS),
    refuse(libc::SYS_fsopen, "fsopen", MOUNTS),
    refuse(libc::SYS_fsconfig, "fsconfig", MOUNTS),
    refuse(libc::SYS_fsmount, "fsmount", MOUNTS),
    refuse(libc::SYS_fspick, "fspick", MOUNTS),
    refuse(libc::SYS_move_mount, "move_mount", MOUNTS),
    refuse(libc::SYS_open_tree, "open_tree", MOUNTS),
    refuse(libc::SYS_mount_setattr, "mount_setattr", MOUNTS),
    refuse(
        libc::SYS_unshare,
        "unshare",
        "creates namespaces; already refused by missing privilege and the nested user \
         namespace limit, refused here so a namespace bug in the kernel stays out of reach",
    ),
    refuse(libc::SYS_setns, "setns", "joins namespaces, see unshare"),
    refuse(libc::SYS_swapon, "swapon", "changes the host's swap"),
    refuse(libc::SYS_swapoff, "swapoff", "changes the host's swap"),
    refuse(
        libc::SYS_acct,
        "acct",
        "switches the host's process accounting",
    ),
    refuse(libc::SYS_reboot, "reboot", "reboots or halts the host"),
    refuse(libc::SYS_settimeofday, "settimeofday", CLOCK),
    refuse(libc::SYS_clock_settime, "clock_settime", CLOCK),
    refuse(libc::SYS_clock_adjtime, "clock_adjtime", CLOCK),
    refuse(
        libc::SYS_quotactl,
        "quotactl",
        "changes disk quotas of host filesystems",
    ),
    refuse(
        libc::SYS_quotactl_fd,
        "quotactl_fd",
        "changes disk quotas of host filesystems",
    ),
    refuse(
        libc::SYS_lookup_dcookie,
        "lookup_dcookie",
        "kernel profiling interface that reveals host paths",
    ),
    refuse(
        libc::SYS_syslog,
        "syslog",
        "reads or clears the host's kernel log",
    ),
    refuse(libc::SYS_vhangup, "vhangup", "hangs up the terminal"),
];

/// Calls that exist on x86_64 only.
#[cfg(target_arch = "x86_64")]
const ARCH_ONLY: &[RefusedCall] = &[
    refuse(
        libc::SYS_iopl,
        "iopl",
        "direct access to the host's I/O ports",
    ),
    refuse(
        libc::SYS_ioperm,
        "ioperm",
        "direct access to the host's I/O ports",
    ),
    refuse(
        libc::SYS_uselib,
        "uselib",
        "obsolete a.out library loader, an old source of kernel bugs",
    ),
];

#[cfg(target_arch = "aarch64")]
const ARCH_ONLY: &[RefusedCall] = &[];

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const COMMON: &[RefusedCall] = &[];
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const ARCH_ONLY: &[RefusedCall] = &[];

/// Every call the filter refuses with EPERM on this architecture, in table order.
pub fn refused_calls() -> Vec<RefusedCall> {
    COMMON.iter().chain(ARCH_ONLY).copied().collect()
}

/// The architecture the filter is built for, or why there is none.
pub fn target_arch(arch: &str) -> Result<TargetArch, SandboxError> {
    let unsupported = || SandboxError::NoSeccompFilter {
        arch: arch.to_string(),
    };
    if !SUPPORTED_ARCHES.contains(&arch) {
        return Err(unsupported());
    }
    TargetArch::try_from(arch).map_err(|_| unsupported())
}

/// On x86_64 one architecture value covers two syscall tables: the native one and x32, whose
/// numbers carry bit 30. seccompiler compares numbers exactly, so `keyctl | 0x40000000` would
/// pass its rules; this guard, run first, kills any x32 call (and any foreign architecture).
/// Number -1 passes, as libseccomp lets it: a tracer uses it to skip a call, and the kernel
/// answers it with ENOSYS.
#[cfg(target_arch = "x86_64")]
fn abi_guard() -> Vec<sock_filter> {
    // Classic BPF opcodes (linux/bpf_common.h) and offsets in `struct seccomp_data`.
    const LD_W_ABS: u16 = 0x20;
    const JEQ_K: u16 = 0x15;
    const JGE_K: u16 = 0x35;
    const RET_K: u16 = 0x06;
    const NR_OFFSET: u32 = 0;
    const ARCH_OFFSET: u32 = 4;
    /// `EM_X86_64 | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE` (linux/audit.h).
    const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
    const X32_SYSCALL_BIT: u32 = 0x4000_0000;
    let op = |code: u16, k: u32, jt: u8, jf: u8| sock_filter { code, jt, jf, k };
    let kill = libc::SECCOMP_RET_KILL_PROCESS;
    vec![
        op(LD_W_ABS, ARCH_OFFSET, 0, 0),
        op(JEQ_K, AUDIT_ARCH_X86_64, 1, 0),
        op(RET_K, kill, 0, 0),
        op(LD_W_ABS, NR_OFFSET, 0, 0),
        op(JGE_K, X32_SYSCALL_BIT, 0, 2),
        op(JEQ_K, u32::MAX, 1, 0),
        op(RET_K, kill, 0, 0),
    ]
}

/// Other architectures have one table per architecture value; seccompiler's own check kills
/// calls of a foreign one.
#[cfg(not(target_arch = "x86_64"))]
fn abi_guard() -> Vec<sock_filter> {
    Vec::new()
}

/// Calls whose arguments a filter cannot read answer ENOSYS, as on a kernel without them
/// (`openat2`, see `seccomp_set_id`). Run after the ABI guard, before seccompiler's program.
/// On an architecture without a guard this runs before seccompiler's own architecture check,
/// where a foreign call with the same number is refused too: a refusal, never an allowance.
fn enosys_calls() -> Vec<sock_filter> {
    const LD_W_ABS: u16 = 0x20;
    const JEQ_K: u16 = 0x15;
    const RET_K: u16 = 0x06;
    const NR_OFFSET: u32 = 0;
    let op = |code: u16, k: u32, jt: u8, jf: u8| sock_filter { code, jt, jf, k };
    let mut program = vec![op(LD_W_ABS, NR_OFFSET, 0, 0)];
    for (nr, _) in set_id::ENOSYS_CALLS {
        program.push(op(JEQ_K, *nr as u32, 0, 1));
        program.push(op(
            RET_K,
            libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32,
            0,
            0,
        ));
    }
    program
}

/// The filter program for this machine.
pub fn program() -> Result<BpfProgram, SandboxError> {
    let arch = target_arch(std::env::consts::ARCH)?;
    let mut rules: BTreeMap<i64, Vec<seccompiler::SeccompRule>> =
        refused_calls().iter().map(|c| (c.nr, Vec::new())).collect();
    for call in set_id::mode_calls() {
        rules.insert(call.nr, set_id::rules(&call)?);
    }
    let broken = SandboxError::SeccompBuild;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(broken)?;
    let body: BpfProgram = filter.try_into().map_err(broken)?;
    let mut program = abi_guard();
    program.extend(enosys_calls());
    program.extend(body);
    Ok(program)
}

/// The program as bwrap reads it: the `struct sock_filter` array, native byte order.
pub fn program_bytes() -> Result<Vec<u8>, SandboxError> {
    let program = program()?;
    let mut out = Vec::with_capacity(program.len() * 8);
    for i in &program {
        out.extend_from_slice(&i.code.to_ne_bytes());
        out.push(i.jt);
        out.push(i.jf);
        out.extend_from_slice(&i.k.to_ne_bytes());
    }
    Ok(out)
}

/// A memfd holding the program, positioned at its start, for bwrap's `--seccomp FD` (bwrap
/// reads to the end of it). A memfd rather than a pipe: no capacity to fill, nothing to block.
pub fn program_fd() -> Result<OwnedFd, SandboxError> {
    let bytes = program_bytes()?;
    let fd = rustix::fs::memfd_create("spear-seccomp", rustix::fs::MemfdFlags::CLOEXEC)
        .map_err(std::io::Error::from)?;
    let mut file = std::fs::File::from(fd);
    file.write_all(&bytes)?;
    file.rewind()?;
    Ok(file.into())
}

#[cfg(test)]
#[path = "seccomp_tests.rs"]
mod tests;
