//! Checkpoints: what the working tree was just before and just after every call that may
//! change it, so any change a session made, by any route (a file tool, `sed -i`, a code
//! generator, `git checkout`, `rm`), can be taken back.
//!
//! The store is Spear's own, content-addressed (`store`): a blob per distinct file content,
//! named by its SHA-256, and a manifest per checkpoint (`manifest`) with each path's kind, exact
//! mode, owner, size, times and link target, kept as a delta from the one before. A checkpoint
//! is one descriptor walk of the tree that reads only files whose metadata changed since the
//! last (`scan`); a restore (`restore`) compares the session's own before/after records with the
//! tree as it is now, so a file someone else changed is never overwritten unasked.
//!
//! Not covered: what the ignore rules exclude (`target/`, `node_modules/` are never read), `.git`
//! (HEAD and the index are not moved back), and anything outside the workspace (which the
//! sandbox keeps commands from writing).

pub mod log;
pub mod manifest;
pub mod restore;
pub mod scan;
pub mod store;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};

use thiserror::Error;

pub use log::{CallRecord, Record, SessionLog};
pub use manifest::{Entry, Kind, Manifest};
pub use restore::{Conflict, Plan, Report, Step as RestoreStep};
pub use scan::Limits;
pub use store::Store;

#[derive(Debug, Error)]
pub enum CheckpointError {
    #[error("checkpoint store: cannot {op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("checkpoint store: {0} is damaged")]
    Corrupt(String),
    #[error("checkpoint store: a record could not be written: {0}")]
    Encode(#[source] serde_json::Error),
    #[error("checkpoint store: the workspace could not be read: {0}")]
    Walk(#[source] std::io::Error),
    #[error("{0}")]
    Refused(String),
}

impl CheckpointError {
    pub(crate) fn io(op: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.to_path_buf();
        move |source| CheckpointError::Io { op, path, source }
    }
}

/// The latest checkpoint this process took, the base of the next.
#[derive(Debug)]
struct Latest {
    id: String,
    manifest: Manifest,
    depth: u32,
}

#[derive(Debug, Default)]
struct State {
    /// `None` until the first checkpoint (taken in the background from the start) is done.
    /// Shared, not copied: a manifest of 10,000 paths is the base of every next checkpoint.
    latest: Option<Arc<Latest>>,
    /// The first checkpoint is being taken.
    first_running: bool,
    store_bytes: u64,
    /// The turn of this process's last call and the number the session log gave it.
    turn: Option<(String, u64, u32)>,
}

/// A checkpoint taken before a call, to be closed by `after_call`.
#[derive(Debug, Clone)]
pub struct Taken {
    pub session: String,
    pub record: CallRecord,
    /// Paths this checkpoint could not take, with why.
    pub uncovered: Vec<(String, String)>,
    /// Files read for it (the rest were unchanged since the last one).
    pub read: usize,
}

/// The checkpoints of one workspace: taking them around calls, and reading them back.
#[derive(Debug, Clone)]
pub struct Checkpoints {
    root: PathBuf,
    store: Store,
    limits: Limits,
    state: Arc<(Mutex<State>, Condvar)>,
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Checkpoints {
    /// The checkpoints of the workspace at `root`, kept in `store_dir` (which must lie outside
    /// it: the caller gets it from `workspace_state_dir`, which refuses one inside).
    pub fn open(root: &Path, store_dir: &Path, limits: Limits) -> Result<Self, CheckpointError> {
        let store = Store::open(store_dir)?;
        let store_bytes = store.blob_bytes();
        Ok(Checkpoints {
            root: root.to_path_buf(),
            store,
            limits,
            state: Arc::new((
                Mutex::new(State {
                    store_bytes,
                    ..State::default()
                }),
                Condvar::new(),
            )),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Take the session's first checkpoint in the background (the whole tree is read once);
    /// the first call that needs it waits for it.
    pub fn start_in_background(&self) {
        {
            let mut st = self.lock();
            if st.latest.is_some() || st.first_running {
                return;
            }
            st.first_running = true;
        }
        let me = self.clone();
        std::thread::spawn(move || {
            BACKGROUND.with(|b| b.set(true));
            let taken = me.take_now();
            let mut st = me.lock();
            st.first_running = false;
            if let Ok(l) = taken
                && st.latest.is_none()
            {
                st.latest = Some(l.0);
            }
            me.state.1.notify_all();
        });
    }

    /// Walk the tree now, store it, and return it as the latest (with what it could not take
    /// and how many files it read).
    fn take_now(&self) -> Result<(Arc<Latest>, usize), CheckpointError> {
        let _shared = self.store.lock(false)?;
        let (previous, store_bytes) = {
            let mut st = self.lock();
            // The first call waits for the background walk rather than walking twice.
            while st.first_running && st.latest.is_none() && !on_background(&st) {
                st = self.state.1.wait(st).unwrap_or_else(|p| p.into_inner());
            }
            (st.latest.clone(), st.store_bytes)
        };
        let scanned = scan::scan(
            &self.root,
            previous.as_ref().map(|l| &l.manifest),
            Some(&self.store),
            store_bytes,
            &self.limits,
        )
        .map_err(CheckpointError::Walk)?;
        // A parent a prune removed cannot carry a delta: then the manifest is stored whole.
        let parent = previous
            .as_ref()
            .filter(|l| self.store.has_manifest(&l.id))
            .map(|l| (l.id.as_str(), &l.manifest, l.depth));
        let (id, depth) = self.store.save_manifest(&scanned.manifest, parent)?;
        let latest = Arc::new(Latest {
            id,
            manifest: scanned.manifest,
            depth,
        });
        let mut st = self.lock();
        st.store_bytes = scanned.store_bytes;
        st.latest = Some(latest.clone());
        Ok((latest, scanned.read))
    }

    /// What the latest checkpoint could not take (waiting for the first one if it is being
    /// taken), with why.
    pub fn uncovered(&self) -> Vec<(String, String)> {
        let mut st = self.lock();
        while st.first_running && st.latest.is_none() {
            st = self.state.1.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        st.latest
            .as_ref()
            .map(|l| {
                l.manifest
                    .uncovered
                    .iter()
                    .map(|(p, w)| (p.clone(), w.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Take the checkpoint before call `call` of turn `turn_key` (a key unique to the turn in
    /// this process) in `session`.
    pub fn before_call(
        &self,
        session: &str,
        turn_key: u64,
        call: &str,
        tool: &str,
        target: Option<&str>,
    ) -> Result<Taken, CheckpointError> {
        let (latest, read) = self.take_now()?;
        let turn = self.turn_number(session, turn_key)?;
        let uncovered: Vec<(String, String)> = latest
            .manifest
            .uncovered
            .iter()
            .map(|(p, w)| (p.clone(), w.clone()))
            .collect();
        Ok(Taken {
            session: session.to_string(),
            record: CallRecord {
                turn,
                call: call.to_string(),
                tool: tool.to_string(),
                target: target.map(str::to_string),
                at_ms: now_ms(),
                before: latest.id.clone(),
                after: None,
                uncovered: uncovered.iter().map(|(p, _)| p.clone()).collect(),
            },
            uncovered,
            read,
        })
    }

    /// Take the checkpoint after the call `taken` was for, and log both.
    pub fn after_call(&self, mut taken: Taken) -> Result<CallRecord, CheckpointError> {
        let after = self.take_now();
        taken.record.after = after.as_ref().ok().map(|(l, _)| l.id.clone());
        SessionLog::append(
            &self.store.session_log(&taken.session)?,
            &Record::Call(taken.record.clone()),
        )?;
        after?;
        Ok(taken.record)
    }

    /// The session's turn number for `turn_key`: the same as the last call's when it is the
    /// same turn, else one past the highest the log holds.
    fn turn_number(&self, session: &str, turn_key: u64) -> Result<u32, CheckpointError> {
        let mut st = self.lock();
        if let Some((s, k, n)) = &st.turn
            && s == session
            && *k == turn_key
        {
            return Ok(*n);
        }
        let log = SessionLog::read(&self.store.session_log(session)?)?;
        let n = log.last_turn() + 1;
        st.turn = Some((session.to_string(), turn_key, n));
        Ok(n)
    }

    /// Note that a request of the person (`text`) begins now in `session`.
    pub fn note_request(&self, session: &str, text: &str) -> Result<(), CheckpointError> {
        SessionLog::append(
            &self.store.session_log(session)?,
            &Record::Request {
                at_ms: now_ms(),
                text: store::sha256_hex(text.as_bytes()),
            },
        )
    }

    /// The turn to take back to return to just before request `text` of `session` began,
    /// where the same words were sent `later` more times after it.
    pub fn turn_since_request(
        &self,
        session: &str,
        text: &str,
        later: usize,
    ) -> Result<Option<u32>, CheckpointError> {
        Ok(self
            .session_log(session)?
            .turn_since_request(&store::sha256_hex(text.as_bytes()), later))
    }

    /// The log of `session`.
    pub fn session_log(&self, session: &str) -> Result<SessionLog, CheckpointError> {
        SessionLog::read(&self.store.session_log(session)?)
    }

    /// The sessions that have a log, newest first (by the log's last change).
    pub fn sessions(&self) -> Vec<(String, std::time::SystemTime)> {
        let mut out: Vec<(String, std::time::SystemTime)> =
            std::fs::read_dir(self.store.dir().join("sessions"))
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_str()?.strip_suffix(".jsonl")?.to_string();
                    let t = e.metadata().ok()?.modified().ok()?;
                    Some((name, t))
                })
                .collect();
        out.sort_by_key(|s| std::cmp::Reverse(s.1));
        out
    }

    /// How many paths the live calls of `session` changed (what an undo could take back).
    pub fn changes_in(&self, session: &str) -> Result<usize, CheckpointError> {
        let log = self.session_log(session)?;
        let calls = log.live_calls();
        let mut changed = std::collections::BTreeSet::new();
        for c in calls {
            let Some(after) = &c.after else { continue };
            let (b, a) = (self.store.manifest(&c.before)?, self.store.manifest(after)?);
            for p in b.entries.keys().chain(a.entries.keys()) {
                if !manifest::same(b.entries.get(p), a.entries.get(p)) {
                    changed.insert(p.clone());
                }
            }
        }
        Ok(changed.len())
    }

    /// What taking back `session`'s turns from `back_to_turn` on would do (`None`: its last
    /// live turn).
    pub fn plan_undo(
        &self,
        session: &str,
        back_to_turn: Option<u32>,
    ) -> Result<Plan, CheckpointError> {
        let log = self.session_log(session)?;
        restore::plan(self, session, &log, back_to_turn)
    }

    /// Carry out `plan` (conflicts too when `force`), journalled, and log the undo.
    pub fn undo(&self, plan: &Plan, force: bool) -> Result<Report, CheckpointError> {
        let report = restore::apply(self, plan, force)?;
        SessionLog::append(
            &self.store.session_log(&plan.session)?,
            &Record::Undo {
                back_to_turn: plan.back_to_turn,
                at_ms: now_ms(),
                restored: report.restored.len(),
                forced: force,
            },
        )?;
        Ok(report)
    }

    /// Remove whole sessions, oldest first, until the blobs fit `budget` (never `keep`), then
    /// every manifest and blob no remaining session needs. Returns the sessions removed and
    /// the bytes freed.
    pub fn prune(
        &self,
        budget: u64,
        keep: Option<&str>,
    ) -> Result<(Vec<String>, u64), CheckpointError> {
        restore::prune(self, budget, keep)
    }
}

/// Whether the calling thread is the background walk itself (it must not wait for itself).
fn on_background(_st: &State) -> bool {
    BACKGROUND.with(std::cell::Cell::get)
}

thread_local! {
    static BACKGROUND: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}
