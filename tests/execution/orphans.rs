//! No process of a sandbox survives its Spear (issue 8, item 5). SIGKILL at random moments of
//! a launch used to leave bwrap's namespace init blocked forever in bwrap's own eventfd wait,
//! its parent gone. Every launch is now recorded in the sandbox ledger before bwrap is spawned
//! and marked in bwrap's `argv[0]`; the next Spear ends what a dead one left.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use rustix::process::{Pid, PidfdFlags, Signal, pidfd_open, pidfd_send_signal};

use crate::support::*;

const MARKER_PREFIX: &str = "bwrap/spear-sandbox/";

/// The tokens of the ledger entries in `dir`.
fn ledger_tokens(dir: &Path) -> BTreeSet<String> {
    match std::fs::read_dir(dir) {
        Ok(rd) => rd
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| n.len() == 32)
            .collect(),
        Err(_) => BTreeSet::new(),
    }
}

/// Live processes (not zombies) whose `argv[0]` is the marker of one of `tokens`.
fn marked_processes(tokens: &BTreeSet<String>) -> Vec<i32> {
    let mut found = Vec::new();
    for (pid, argv0) in host_argv0s() {
        let Some(token) = argv0.strip_prefix(MARKER_PREFIX) else {
            continue;
        };
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| {
                s.rsplit(')')
                    .next()
                    .map(|r| r.trim_start().starts_with('Z'))
            })
            .unwrap_or(true);
        if tokens.contains(token) && !zombie {
            found.push(pid);
        }
    }
    found
}

fn sigkill(child: &std::process::Child) {
    let fd = pidfd_open(
        Pid::from_raw(child.id() as i32).unwrap(),
        PidfdFlags::empty(),
    )
    .unwrap();
    pidfd_send_signal(&fd, Signal::KILL).unwrap();
}

#[test]
fn spears_killed_at_random_moments_leave_no_sandbox_behind() {
    require_bwrap();
    let (_d, ws) = workspace();
    let state = state_dir(&ws);
    let ledger = state.join("spear").join("sandboxes");
    // Thirty launches, each SIGKILLed at a different moment of its first 90 ms (before the
    // spawn, while bwrap sets up, while the command runs).
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut seen = BTreeSet::new();
    let mut orphans = 0;
    for i in 0..30u64 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let delay = Duration::from_micros(i * 3000 + (seed >> 40) % 3000);
        let child = std::process::Command::new(spear_bin())
            .current_dir(&ws)
            .env("XDG_STATE_HOME", &state)
            .args(["exec", "--mode", "auto", "--", "sleep 30"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Not a wait for anything: the kill is meant to land at this arbitrary moment.
        std::thread::sleep(delay);
        sigkill(&child);
        let mut child = child;
        child.wait().unwrap();
        // This launch's entry, if it got as far as recording one (the next Spear sweeps it).
        let fresh: BTreeSet<String> = ledger_tokens(&ledger).difference(&seen).cloned().collect();
        // The parent-death signals end most sandboxes within moments; an init caught in
        // bwrap's own wait never ends by itself.
        let until = Instant::now() + Duration::from_millis(500);
        let mut left = marked_processes(&fresh);
        while !left.is_empty() && Instant::now() < until {
            std::thread::yield_now();
            left = marked_processes(&fresh);
        }
        orphans += left.len();
        seen.extend(fresh);
    }
    // Positive control: kills landed while launches were under way (a killed Spear never
    // confirms its sandbox dead, so its entry stays until the next Spear's sweep).
    assert!(
        seen.len() >= 5,
        "only {} launches were under way when their Spear was killed",
        seen.len()
    );
    eprintln!(
        "{} of 30 launches were under way when killed; {orphans} sandbox processes outlived \
         their Spear until the next one started",
        seen.len()
    );
    let tokens = seen;
    // The next Spear start ends them.
    let out = spear_in(&ws)
        .args(["exec", "--mode", "auto", "--", "echo next"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("next"),
        "the next Spear did not run: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let survivors: Vec<String> = marked_processes(&tokens)
        .into_iter()
        .map(|p| {
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
            let status = std::fs::read_to_string(format!("/proc/{p}/status")).unwrap_or_default();
            let uid = status.lines().find(|l| l.starts_with("Uid:")).unwrap_or("");
            let cmd = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
            let argv0 = String::from_utf8_lossy(cmd.split(|b| *b == 0).next().unwrap_or_default())
                .into_owned();
            let wchan = std::fs::read_to_string(format!("/proc/{p}/wchan")).unwrap_or_default();
            let ns = std::fs::read_link(format!("/proc/{p}/ns/pid")).unwrap_or_default();
            format!("{argv0} {stat} {uid} wchan={wchan} {}", ns.display())
        })
        .collect();
    assert!(
        survivors.is_empty(),
        "sandbox processes survived the next Spear's sweep: {survivors:#?} (next Spear said {}; \
         ledger now {:?})",
        String::from_utf8_lossy(&out.stderr),
        ledger_tokens(&ledger)
    );
    assert!(
        ledger_tokens(&ledger).is_empty(),
        "the ledger still holds entries: {:?}",
        ledger_tokens(&ledger)
    );
}
