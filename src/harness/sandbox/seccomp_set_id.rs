//! No set-id bit from inside the sandbox. As root the sandbox's files are the host's, so a
//! set-uid-root program a command leaves (`tar xf` of an archive, `chmod u+s`, `install -m
//! 4755`) is a way to root for whoever runs it later; as an ordinary user, one to that user.
//! Every call that sets a file mode is refused (EPERM) when the mode carries S_ISUID or
//! S_ISGID: `chmod`, `fchmod`, `fchmodat`, `fchmodat2`, and the calls that create a file with a
//! mode (`creat`; `open` and `openat` with O_CREAT or O_TMPFILE; `mknod`, `mknodat`). The
//! refusal holds everywhere the command writes, the private `/tmp` included.
//!
//! `openat2` passes its mode inside a struct in memory, which a filter cannot read, so it is
//! answered ENOSYS (see [`ENOSYS_CALLS`]): callers take that as "this kernel lacks openat2"
//! and fall back to `openat`, which the rules above judge.

use seccompiler::{SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompRule};
use serde::Serialize;

use super::SandboxError;

/// `fchmodat2` (Linux 6.6) has the same number on every architecture (the unified table);
/// libc names it only for some.
const SYS_FCHMODAT2: i64 = 452;
/// `openat2` (Linux 5.6), unified as well.
pub(super) const SYS_OPENAT2: i64 = 437;

/// A call that sets a mode: which argument holds the mode, and, for the opening calls, which
/// holds the flags that decide whether the mode is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ModeCall {
    pub name: &'static str,
    #[serde(skip)]
    pub nr: i64,
    #[serde(skip)]
    mode_arg: u8,
    #[serde(skip)]
    flags_arg: Option<u8>,
}

const fn mode_call(nr: i64, name: &'static str, mode_arg: u8, flags_arg: Option<u8>) -> ModeCall {
    ModeCall {
        name,
        nr,
        mode_arg,
        flags_arg,
    }
}

/// The calls judged on their mode, on this architecture.
pub fn mode_calls() -> Vec<ModeCall> {
    let mut calls = vec![
        mode_call(libc::SYS_fchmod, "fchmod", 1, None),
        mode_call(libc::SYS_fchmodat, "fchmodat", 2, None),
        mode_call(SYS_FCHMODAT2, "fchmodat2", 2, None),
        mode_call(libc::SYS_openat, "openat", 3, Some(2)),
        mode_call(libc::SYS_mknodat, "mknodat", 2, None),
    ];
    // The older calls exist on x86_64 only; aarch64 has just the `*at` forms.
    #[cfg(target_arch = "x86_64")]
    calls.extend([
        mode_call(libc::SYS_chmod, "chmod", 1, None),
        mode_call(libc::SYS_creat, "creat", 1, None),
        mode_call(libc::SYS_open, "open", 2, Some(1)),
        mode_call(libc::SYS_mknod, "mknod", 1, None),
    ]);
    calls
}

/// Calls answered ENOSYS rather than judged: their arguments are out of a filter's reach.
pub const ENOSYS_CALLS: &[(i64, &str)] = &[(SYS_OPENAT2, "openat2")];

/// The mode bits refused.
const SET_ID_BITS: [u64; 2] = [libc::S_ISUID as u64, libc::S_ISGID as u64];
/// The flags under which `open`/`openat` use their mode (O_TMPFILE includes O_DIRECTORY, so
/// all of its bits must be present).
const CREATING_FLAGS: [u64; 2] = [libc::O_CREAT as u64, libc::O_TMPFILE as u64];

/// The rules for one call: refused when any set-id bit is in its mode and, for an opening
/// call, it creates. (Conditions in a rule all hold; any rule matching refuses.)
pub(super) fn rules(call: &ModeCall) -> Result<Vec<SeccompRule>, SandboxError> {
    let broken = SandboxError::SeccompBuild;
    let has = |arg: u8, bits: u64| {
        SeccompCondition::new(
            arg,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::MaskedEq(bits),
            bits,
        )
        .map_err(broken)
    };
    let mut rules = Vec::new();
    for bit in SET_ID_BITS {
        match call.flags_arg {
            None => rules.push(SeccompRule::new(vec![has(call.mode_arg, bit)?]).map_err(broken)?),
            Some(flags) => {
                for creating in CREATING_FLAGS {
                    rules.push(
                        SeccompRule::new(vec![has(call.mode_arg, bit)?, has(flags, creating)?])
                            .map_err(broken)?,
                    );
                }
            }
        }
    }
    Ok(rules)
}
