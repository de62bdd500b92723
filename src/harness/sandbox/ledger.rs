//! `SandboxLedger`: the sandboxes a Spear started and has not yet seen die, so that none
//! outlives its Spear. bwrap's namespace init waits on an eventfd of bwrap's own before it
//! sets its parent-death signal; when Spear is killed in that window, bwrap's outer process
//! dies with Spear and the init blocks forever. Nothing can reach it at the instant of death,
//! so the next Spear ends it.
//!
//! Invariant: an entry exists for every launch from before its bwrap is spawned until all its
//! processes are confirmed dead, and every process of the launch carries the entry's marker
//! as its `argv[0]` (the namespace init is a clone of bwrap, so it shares the command line).
//! A process is ended only when its `argv[0]` is exactly a marker built from an entry's name
//! (never read from a file's contents), it runs as Spear's own user or the sandbox's (a root
//! Spear's sandbox runs as a uid of its own, see `root_uid`), it is held by a pidfd
//! whose identity was checked after opening, and the entry's owner is dead.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::harness::process::{ProcessError, kill_checked};

/// The prefix of every marker; the rest is the entry's 32 hex digits.
const MARKER_PREFIX: &str = "bwrap/spear-sandbox/";
/// How long an ended process gets to die before the end counts as unconfirmed.
const DEATH_LIMIT: Duration = Duration::from_secs(2);

/// The ledger directory for a user whose environment is `env`: `$XDG_STATE_HOME/spear/
/// sandboxes`, else `$HOME/.local/state/spear/sandboxes`.
pub fn default_dir(env: &[(String, String)]) -> Option<PathBuf> {
    let var = |k: &str| {
        env.iter()
            .find(|(n, v)| n == k && v.starts_with('/'))
            .map(|(_, v)| PathBuf::from(v))
    };
    let state = var("XDG_STATE_HOME").or_else(|| var("HOME").map(|h| h.join(".local/state")))?;
    Some(state.join("spear").join("sandboxes"))
}

/// Who wrote an entry: a process named by its PID, its start time (so a reused PID is not
/// taken for it) and its PID namespace (so the PID means the same thing to the reader).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Owner {
    pid: i32,
    start_time: u64,
    pid_ns: u64,
}

impl Owner {
    fn me() -> Option<Owner> {
        let pid = std::process::id() as i32;
        Some(Owner {
            pid,
            start_time: start_time(pid)?,
            pid_ns: own_pid_namespace()?,
        })
    }

    fn parse(text: &str) -> Option<Owner> {
        let mut it = text.split_whitespace().map(str::parse::<u64>);
        let pid = i32::try_from(it.next()?.ok()?).ok()?;
        Some(Owner {
            pid,
            start_time: it.next()?.ok()?,
            pid_ns: it.next()?.ok()?,
        })
    }

    fn is_alive(&self) -> bool {
        start_time(self.pid) == Some(self.start_time)
    }
}

/// What a sweep found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SweepReport {
    /// Entries whose owner was dead.
    pub stale: usize,
    /// Processes of those entries that were still alive and were ended.
    pub ended: usize,
    /// Entries kept because a process of theirs could not be confirmed dead.
    pub unconfirmed: usize,
}

#[derive(Debug, Clone)]
pub struct SandboxLedger {
    dir: PathBuf,
    /// This process, read once: every launch records it.
    me: Owner,
    /// The host uid the sandbox's processes run as, besides Spear's own.
    sandbox_uid: u32,
}

impl SandboxLedger {
    /// The ledger in `dir`, created private to this user.
    pub fn open(dir: &Path) -> std::io::Result<SandboxLedger> {
        let me = Owner::me().ok_or_else(|| {
            std::io::Error::other("cannot read this process's start time or PID namespace")
        })?;
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
        Ok(SandboxLedger {
            dir: dir.to_path_buf(),
            me,
            sandbox_uid: rustix::process::getuid().as_raw(),
        })
    }

    /// The sandbox's processes run as `uid` on the host: sweeps and ends recognise them by it.
    pub fn with_sandbox_uid(mut self, uid: u32) -> Self {
        self.sandbox_uid = uid;
        self
    }

    /// Record a launch about to be spawned. The entry is complete (written, then renamed into
    /// place) before this returns, so a launch is never spawned without one.
    pub fn record(&self) -> std::io::Result<LedgerEntry> {
        let owner = self.me;
        let token = random_token()?;
        let path = self.dir.join(&token);
        let tmp = self.dir.join(format!("{token}.tmp"));
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(format!("{} {} {}\n", owner.pid, owner.start_time, owner.pid_ns).as_bytes())?;
        drop(f);
        fs::rename(&tmp, &path)?;
        Ok(LedgerEntry {
            path: Some(path),
            marker: OsString::from(format!("{MARKER_PREFIX}{token}")),
            confirmed: false,
            sandbox_uid: self.sandbox_uid,
        })
    }

    /// End what sandboxes of dead Spears left behind, and forget their entries.
    pub fn sweep(&self) -> SweepReport {
        let mut report = SweepReport::default();
        let me = self.me;
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return report;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            let Some(name) = name.to_str() else { continue };
            let (token, partial) = match name.strip_suffix(".tmp") {
                Some(t) => (t, true),
                None => (name, false),
            };
            if !is_token(token) {
                continue;
            }
            let owner = fs::read_to_string(e.path())
                .ok()
                .and_then(|t| Owner::parse(&t));
            match owner {
                // Another PID namespace's PIDs mean other processes here: not ours to judge.
                Some(o) if o.pid_ns != me.pid_ns || o.is_alive() => continue,
                Some(_) => {}
                // Written by halves: its launch was never spawned (the rename comes first),
                // unless the writer is still at it, which a minute rules out.
                None if partial && !older_than(&e.path(), Duration::from_secs(60)) => continue,
                None if !partial => continue,
                None => {}
            }
            report.stale += 1;
            if partial {
                let _ = fs::remove_file(e.path());
                continue;
            }
            match end_marked(
                OsStr::new(&format!("{MARKER_PREFIX}{token}")),
                self.sandbox_uid,
            ) {
                Ok(n) => {
                    report.ended += n;
                    let _ = fs::remove_file(e.path());
                }
                Err(_) => report.unconfirmed += 1,
            }
        }
        report
    }
}

/// One launch's entry. Dropped without `confirm_dead`, it ends every process still carrying
/// its marker (a launch dropped before its namespace init was known may have left one
/// blocked) and is forgotten only once they are confirmed dead.
#[derive(Debug)]
pub struct LedgerEntry {
    path: Option<PathBuf>,
    marker: OsString,
    confirmed: bool,
    sandbox_uid: u32,
}

impl LedgerEntry {
    /// An entry for a launch without a ledger, whose processes run as `sandbox_uid`: it still
    /// marks them, so the drop-time end works; nothing is written.
    pub fn unrecorded(sandbox_uid: u32) -> std::io::Result<LedgerEntry> {
        Ok(LedgerEntry {
            path: None,
            marker: OsString::from(format!("{MARKER_PREFIX}{}", random_token()?)),
            confirmed: false,
            sandbox_uid,
        })
    }

    /// The `argv[0]` every process of the launch carries.
    pub fn marker(&self) -> &OsStr {
        &self.marker
    }

    /// Every process of the launch was confirmed dead: the entry is forgotten.
    pub fn confirm_dead(&mut self) {
        self.confirmed = true;
    }
}

impl Drop for LedgerEntry {
    fn drop(&mut self) {
        if !self.confirmed && end_marked(&self.marker, self.sandbox_uid).is_err() {
            // Kept for the next Spear's sweep.
            return;
        }
        if let Some(p) = &self.path {
            let _ = fs::remove_file(p);
        }
    }
}

#[cfg(test)]
thread_local! {
    /// Scans of `/proc` made by `end_marked` on this thread (tests count with it).
    pub(crate) static SCANS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// SIGKILL every process of this user or of `sandbox_uid` whose `argv[0]` is `marker`, through
/// pidfds, and confirm each died. Returns how many were ended.
pub fn end_marked(marker: &OsStr, sandbox_uid: u32) -> Result<usize, ProcessError> {
    #[cfg(test)]
    SCANS.with(|n| n.set(n.get() + 1));
    let uid = rustix::process::getuid().as_raw();
    let mut ended = 0;
    let mut unconfirmed = None;
    let entries = fs::read_dir("/proc").map_err(ProcessError::Pidfd)?;
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let ours = || {
            argv0(pid).as_deref() == Some(marker.as_bytes())
                && real_uid(pid).is_some_and(|u| u == uid || u == sandbox_uid)
        };
        if !ours() {
            continue;
        }
        match kill_checked(pid, ours, DEATH_LIMIT) {
            Ok(true) => ended += 1,
            Ok(false) => {}
            Err(e) => unconfirmed = Some(e),
        }
    }
    match unconfirmed {
        Some(e) => Err(e),
        None => Ok(ended),
    }
}

fn argv0(pid: i32) -> Option<Vec<u8>> {
    let raw = fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let end = raw.iter().position(|b| *b == 0).unwrap_or(raw.len());
    Some(raw[..end].to_vec())
}

fn real_uid(pid: i32) -> Option<u32> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// A process's start time in clock ticks since boot (field 22 of `/proc/PID/stat`).
fn start_time(pid: i32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

fn own_pid_namespace() -> Option<u64> {
    let link = fs::read_link("/proc/self/ns/pid").ok()?;
    link.to_str()?
        .strip_prefix("pid:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

fn older_than(p: &Path, age: Duration) -> bool {
    fs::metadata(p)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|e| e > age)
}

fn is_token(s: &str) -> bool {
    s.len() == 32
        && s.bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

fn random_token() -> std::io::Result<String> {
    let mut buf = [0u8; 16];
    let mut filled = 0;
    while filled < buf.len() {
        // SAFETY: getrandom writes at most `buf.len() - filled` bytes into the rest of `buf`.
        let n =
            unsafe { libc::getrandom(buf[filled..].as_mut_ptr().cast(), buf.len() - filled, 0) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        filled += n as usize;
    }
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_complete_and_named_by_its_marker() {
        let d = tempfile::tempdir().unwrap();
        let ledger = SandboxLedger::open(&d.path().join("l")).unwrap();
        let mut e = ledger.record().unwrap();
        let token = e
            .marker()
            .to_str()
            .unwrap()
            .strip_prefix(MARKER_PREFIX)
            .unwrap();
        assert!(is_token(token));
        let text = fs::read_to_string(d.path().join("l").join(token)).unwrap();
        assert_eq!(Owner::parse(&text), Owner::me());
        // A live owner's entry is never swept.
        assert_eq!(ledger.sweep(), SweepReport::default());
        e.confirm_dead();
        drop(e);
        assert_eq!(fs::read_dir(d.path().join("l")).unwrap().count(), 0);
    }

    #[test]
    fn a_dead_owners_entry_is_swept_and_foreign_or_malformed_names_are_left() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("l");
        let ledger = SandboxLedger::open(&dir).unwrap();
        let me = Owner::me().unwrap();
        // A dead owner: this PID with another start time.
        let dead = format!("{} {} {}\n", me.pid, me.start_time + 1, me.pid_ns);
        fs::write(dir.join("0123456789abcdef0123456789abcdef"), &dead).unwrap();
        // Another PID namespace's entry, and names that are not tokens.
        let foreign = format!("{} {} {}\n", me.pid, me.start_time + 1, me.pid_ns + 1);
        fs::write(dir.join("fedcba9876543210fedcba9876543210"), foreign).unwrap();
        fs::write(dir.join("bash"), &dead).unwrap();
        fs::write(dir.join("0123456789ABCDEF0123456789ABCDEF"), &dead).unwrap();
        let r = ledger.sweep();
        assert_eq!((r.stale, r.ended, r.unconfirmed), (1, 0, 0));
        let mut left: Vec<String> = fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                "0123456789ABCDEF0123456789ABCDEF",
                "bash",
                "fedcba9876543210fedcba9876543210"
            ]
        );
    }

    #[test]
    fn start_time_reads_past_a_command_name_with_parentheses() {
        assert!(start_time(std::process::id() as i32).is_some());
        assert_eq!(start_time(-1), None);
    }

    #[test]
    fn a_marked_process_is_ended_and_an_unmarked_one_is_not() {
        use std::os::unix::process::CommandExt;
        let marker = format!("{MARKER_PREFIX}{}", random_token().unwrap());
        let mut marked = std::process::Command::new("sleep")
            .arg0(&marker)
            .arg("30")
            .spawn()
            .unwrap();
        let other = format!("{MARKER_PREFIX}{}", random_token().unwrap());
        let mut unmarked = std::process::Command::new("sleep")
            .arg0(&other)
            .arg("30")
            .spawn()
            .unwrap();
        // Positive control: both are found by their markers while they live.
        for (child, m) in [(&marked, &marker), (&unmarked, &other)] {
            let pid = child.id() as i32;
            let until = std::time::Instant::now() + Duration::from_secs(5);
            while argv0(pid).as_deref() != Some(m.as_bytes()) {
                assert!(std::time::Instant::now() < until, "sleep never started");
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        assert_eq!(end_marked(OsStr::new(&marker), own_uid()).unwrap(), 1);
        assert!(
            marked.wait().unwrap().code().is_none(),
            "killed by a signal"
        );
        assert!(
            unmarked.try_wait().unwrap().is_none(),
            "another marker's process was touched"
        );
        assert_eq!(end_marked(OsStr::new(&other), own_uid()).unwrap(), 1);
        unmarked.wait().unwrap();
    }

    fn own_uid() -> u32 {
        rustix::process::getuid().as_raw()
    }

    /// A root Spear's sandbox runs as a uid of its own: a marked process of that uid is ended,
    /// one of any other uid is not. Only root can start a process as another uid; as a user
    /// the own-uid case above is the whole behaviour.
    #[test]
    fn a_marked_process_is_ended_only_as_spears_or_the_sandboxs_uid() {
        use std::os::unix::process::CommandExt;
        if !rustix::process::geteuid().is_root() {
            return;
        }
        let sandbox_uid = crate::harness::sandbox::root_uid::FALLBACK_ID;
        let marker = format!("{MARKER_PREFIX}{}", random_token().unwrap());
        let mut child = std::process::Command::new("sleep")
            .arg0(&marker)
            .arg("30")
            .uid(sandbox_uid)
            .gid(sandbox_uid)
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let until = std::time::Instant::now() + Duration::from_secs(5);
        while argv0(pid).as_deref() != Some(marker.as_bytes()) {
            assert!(std::time::Instant::now() < until, "sleep never started");
            std::thread::sleep(Duration::from_millis(5));
        }
        // Neither Spear's uid nor the named sandbox uid: left alone.
        assert_eq!(end_marked(OsStr::new(&marker), own_uid()).unwrap(), 0);
        assert_eq!(end_marked(OsStr::new(&marker), sandbox_uid + 1).unwrap(), 0);
        assert!(child.try_wait().unwrap().is_none(), "touched");
        assert_eq!(end_marked(OsStr::new(&marker), sandbox_uid).unwrap(), 1);
        assert!(child.wait().unwrap().code().is_none(), "killed by a signal");
    }
}
