//! The filter program judged by a small classic-BPF interpreter: what the kernel would answer
//! for a given architecture and call number.

use super::*;

const ALLOW: u32 = 0x7fff_0000;
const KILL_PROCESS: u32 = 0x8000_0000;
const EPERM: u32 = 0x0005_0000 | libc::EPERM as u32;

#[cfg(target_arch = "x86_64")]
const NATIVE: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const NATIVE: u32 = 0xC000_00B7;
/// An architecture value of the other ABI the kernel offers this one (i386, arm).
#[cfg(target_arch = "x86_64")]
const FOREIGN: u32 = 0x4000_0003;
#[cfg(target_arch = "aarch64")]
const FOREIGN: u32 = 0x4000_0028;

/// Run `prog` on a `seccomp_data` with `arch` and `nr` (arguments all zero), as the kernel does.
fn judge(prog: &[sock_filter], arch: u32, nr: u32) -> u32 {
    judge_args(prog, arch, nr, [0; 6])
}

/// The same with these arguments (`seccomp_data.args`, little-endian words at 16 + 8 i).
fn judge_args(prog: &[sock_filter], arch: u32, nr: u32, args: [u64; 6]) -> u32 {
    let mut pc = 0usize;
    let mut acc = 0u32;
    for _ in 0..prog.len() + 1 {
        let i = &prog[pc];
        let k = i.k;
        pc += 1;
        match i.code {
            0x20 => {
                acc = match k {
                    0 => nr,
                    4 => arch,
                    16..=63 => {
                        let arg = args[(k as usize - 16) / 8];
                        if (k - 16) % 8 == 0 {
                            arg as u32
                        } else {
                            (arg >> 32) as u32
                        }
                    }
                    other => panic!("load at offset {other}"),
                }
            }
            0x54 => acc &= k,
            0x05 => pc += k as usize,
            0x15 | 0x25 | 0x35 => {
                let hit = match i.code {
                    0x15 => acc == k,
                    0x25 => acc > k,
                    _ => acc >= k,
                };
                pc += usize::from(if hit { i.jt } else { i.jf });
            }
            0x06 => return k,
            other => panic!("opcode {other:#x} not understood by the test interpreter"),
        }
    }
    panic!("the program did not return")
}

fn nr(n: libc::c_long) -> u32 {
    n as u32
}

#[test]
fn every_refused_call_gets_eperm_and_ordinary_calls_pass() {
    let prog = program().unwrap();
    let refused = refused_calls();
    assert!(refused.len() >= 40, "{refused:?}");
    for c in &refused {
        assert_eq!(judge(&prog, NATIVE, c.nr as u32), EPERM, "{}", c.name);
    }
    for allowed in [
        libc::SYS_getpid,
        libc::SYS_read,
        libc::SYS_write,
        libc::SYS_openat,
        libc::SYS_execve,
        libc::SYS_clone,
        libc::SYS_clone3,
        libc::SYS_ptrace,
        libc::SYS_prctl,
        libc::SYS_seccomp,
        libc::SYS_mknodat,
        libc::SYS_socket,
        libc::SYS_memfd_create,
        libc::SYS_exit_group,
    ] {
        assert_eq!(judge(&prog, NATIVE, nr(allowed)), ALLOW, "{allowed}");
    }
    // A tracer's "skip this call" number stays the kernel's to answer (ENOSYS).
    assert_eq!(judge(&prog, NATIVE, u32::MAX), ALLOW);
}

#[test]
fn another_abi_is_killed_whatever_the_call() {
    let prog = program().unwrap();
    for n in [
        0,
        20,
        39,
        nr(libc::SYS_keyctl),
        0x4000_0000 | nr(libc::SYS_keyctl),
    ] {
        assert_eq!(
            judge(&prog, FOREIGN, n),
            KILL_PROCESS,
            "foreign arch, call {n}"
        );
    }
}

#[cfg(target_arch = "x86_64")]
#[test]
fn x32_numbers_are_killed_on_x86_64() {
    let prog = program().unwrap();
    for c in [
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_getpid,
        libc::SYS_read,
    ] {
        assert_eq!(
            judge(&prog, NATIVE, 0x4000_0000 | nr(c)),
            KILL_PROCESS,
            "x32 variant of {c}"
        );
    }
}

#[test]
fn the_table_is_deliberate() {
    let refused = refused_calls();
    let mut names: Vec<&str> = refused.iter().map(|c| c.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), refused.len(), "a call is listed twice");
    let mut nrs: Vec<i64> = refused.iter().map(|c| c.nr).collect();
    nrs.sort_unstable();
    nrs.dedup();
    assert_eq!(nrs.len(), refused.len(), "two names share a number");
    for c in &refused {
        assert!(c.why.len() > 10, "{} needs a reason", c.name);
    }
    for must in [
        "keyctl",
        "add_key",
        "request_key",
        "bpf",
        "userfaultfd",
        "mount",
    ] {
        assert!(names.contains(&must), "{must} missing");
    }
}

#[test]
fn bytes_are_the_program_in_native_order() {
    let prog = program().unwrap();
    let bytes = program_bytes().unwrap();
    assert_eq!(bytes.len(), prog.len() * 8);
    assert_eq!(&bytes[..2], &prog[0].code.to_ne_bytes());
    assert_eq!(&bytes[4..8], &prog[0].k.to_ne_bytes());
}

#[test]
fn an_undescribed_architecture_is_refused_with_a_reason() {
    for arch in ["riscv64", "powerpc64", "s390x", "x86"] {
        let err = target_arch(arch).unwrap_err().to_string();
        assert!(
            err.contains(arch) && err.contains("does not run commands without one"),
            "{err}"
        );
    }
    assert!(target_arch("x86_64").is_ok() && target_arch("aarch64").is_ok());
}

const ENOSYS: u32 = 0x0005_0000 | libc::ENOSYS as u32;

/// Issue 20: no call sets a set-id bit; the same calls with an ordinary mode pass; an open that
/// does not create is not judged on its (unused) mode; openat2 answers ENOSYS.
#[test]
fn set_id_modes_are_refused_and_ordinary_modes_pass() {
    let prog = program().unwrap();
    let calls = set_id::mode_calls();
    assert!(calls.len() >= 5, "{calls:?}");
    let creat = libc::O_CREAT as u64 | libc::O_WRONLY as u64;
    let tmpfile = libc::O_TMPFILE as u64 | libc::O_RDWR as u64;
    for call in &calls {
        let mut args = [0u64; 6];
        // Where this call has its mode and, for the opening calls, its flags.
        let (mode_at, flags_at) = match call.name {
            "fchmod" | "chmod" | "creat" | "mknod" => (1, None),
            "fchmodat" | "fchmodat2" | "mknodat" => (2, None),
            "openat" => (3, Some(2)),
            "open" => (2, Some(1)),
            other => panic!("no argument layout for {other}"),
        };
        for (mode, want) in [
            (0o4755u64, EPERM),
            (0o2755, EPERM),
            (0o6777, EPERM),
            (0o104755, EPERM),
            (0o755, ALLOW),
            (0o644, ALLOW),
            (0o1777, ALLOW),
            // The upper word is not the mode (mode_t is 32 bits).
            (0o4000u64 << 32 | 0o644, ALLOW),
        ] {
            args[mode_at] = mode;
            if let Some(f) = flags_at {
                // Without O_CREAT or the whole of O_TMPFILE the mode is not used.
                for (flags, want) in [
                    (creat, want),
                    (tmpfile, want),
                    (libc::O_RDONLY as u64, ALLOW),
                    (libc::O_DIRECTORY as u64, ALLOW),
                ] {
                    args[f] = flags;
                    assert_eq!(
                        judge_args(&prog, NATIVE, call.nr as u32, args),
                        want,
                        "{} mode {mode:o} flags {flags:o}",
                        call.name
                    );
                }
            } else {
                assert_eq!(
                    judge_args(&prog, NATIVE, call.nr as u32, args),
                    want,
                    "{} mode {mode:o}",
                    call.name
                );
            }
        }
    }
    assert_eq!(judge(&prog, NATIVE, libc::SYS_openat2 as u32), ENOSYS);
}
