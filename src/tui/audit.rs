//! The audit pane's state: the records loaded so far (the log's end, oldest first), filters by
//! decision, tool and class, a search text, the selection, an opened record, and what the chain
//! check found. Reading is the feed's job (`audit_feed`); this only holds and filters. Invariant:
//! the view is always a filter of what was read, in the log's order, newest at the bottom;
//! nothing a record says is shown unescaped (the widget goes through `AuditRecord::summary`).

use crossterm::event::{KeyCode, KeyEvent};

use crate::harness::audit::{AuditRecord, Decision};

/// Records read per page.
pub const PAGE: usize = 500;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChainState {
    Checking,
    Verified(u64),
    Broken(String),
    NoLog,
}

/// What a key asks of the app.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuditAction {
    None,
    LoadOlder,
    Close,
}

#[derive(Debug, Clone)]
pub struct AuditView {
    pub records: Vec<AuditRecord>,
    /// Lines that did not parse as records (kept in place as escaped text).
    pub unreadable: usize,
    /// Every record of the log is loaded (the start was reached).
    pub complete: bool,
    pub decision: Option<Decision>,
    pub tool: Option<String>,
    pub class: Option<String>,
    pub search: String,
    pub searching: bool,
    /// Selected row counted from the bottom of the filtered view (0 = newest).
    pub selected: usize,
    pub opened: Option<AuditRecord>,
    pub chain: ChainState,
}

const DECISIONS: [Decision; 5] = [
    Decision::Allowed,
    Decision::Approved,
    Decision::Denied,
    Decision::Refused,
    Decision::Cancelled,
];

impl Default for AuditView {
    fn default() -> Self {
        AuditView {
            records: Vec::new(),
            unreadable: 0,
            complete: false,
            decision: None,
            tool: None,
            class: None,
            search: String::new(),
            searching: false,
            selected: 0,
            opened: None,
            chain: ChainState::Checking,
        }
    }
}

impl AuditView {
    fn keep(&self, r: &AuditRecord) -> bool {
        self.decision.is_none_or(|d| r.decision == d)
            && self.tool.as_ref().is_none_or(|t| &r.tool == t)
            && self
                .class
                .as_ref()
                .is_none_or(|c| r.class.is_some_and(|rc| rc.as_str() == c))
            && (self.search.is_empty()
                || r.summary("")
                    .to_lowercase()
                    .contains(&self.search.to_lowercase()))
    }

    /// The filtered records, oldest first.
    pub fn visible(&self) -> Vec<&AuditRecord> {
        self.records.iter().filter(|r| self.keep(r)).collect()
    }

    /// Records older than those loaded, prepended.
    pub fn prepend(&mut self, older: Vec<AuditRecord>, complete: bool) {
        let mut v = older;
        v.append(&mut self.records);
        self.records = v;
        self.complete = complete;
    }

    pub fn append(&mut self, newer: Vec<AuditRecord>) {
        self.records.extend(newer);
    }

    /// The filters in words, for the title.
    pub fn filter_text(&self) -> String {
        let mut f = Vec::new();
        if let Some(d) = self.decision {
            f.push(format!("decision={}", d.label()));
        }
        if let Some(t) = &self.tool {
            f.push(format!("tool={t}"));
        }
        if let Some(c) = &self.class {
            f.push(format!("class={c}"));
        }
        if !self.search.is_empty() {
            f.push(format!("/{}", self.search));
        }
        f.join(" ")
    }

    fn cycle<T: Clone + PartialEq>(cur: &Option<T>, all: &[T]) -> Option<T> {
        match cur.as_ref().and_then(|c| all.iter().position(|a| a == c)) {
            None => all.first().cloned(),
            Some(i) => all.get(i + 1).cloned(),
        }
    }

    fn seen(&self, f: impl Fn(&AuditRecord) -> Option<String>) -> Vec<String> {
        let mut v: Vec<String> = self.records.iter().filter_map(f).collect();
        v.sort();
        v.dedup();
        v
    }

    pub fn hints(&self) -> Vec<(&'static str, &'static str)> {
        if self.searching {
            return vec![("Enter", "apply search"), ("Esc", "clear")];
        }
        if self.opened.is_some() {
            return vec![("Esc", "back")];
        }
        vec![
            ("↑↓", "select"),
            ("Enter", "open"),
            ("d", "decision"),
            ("t", "tool"),
            ("c", "class"),
            ("/", "search"),
            ("F2/Esc", "close"),
        ]
    }

    pub fn key(&mut self, key: KeyEvent) -> AuditAction {
        if self.searching {
            match key.code {
                KeyCode::Enter => self.searching = false,
                KeyCode::Esc => {
                    self.search.clear();
                    self.searching = false;
                }
                KeyCode::Backspace => {
                    self.search.pop();
                }
                KeyCode::Char(c) => self.search.push(c),
                _ => {}
            }
            self.selected = 0;
            return AuditAction::None;
        }
        if self.opened.is_some() {
            if matches!(key.code, KeyCode::Esc | KeyCode::Enter | KeyCode::Char('q')) {
                self.opened = None;
            }
            return AuditAction::None;
        }
        let n = self.visible().len();
        match key.code {
            KeyCode::Esc | KeyCode::F(2) => return AuditAction::Close,
            KeyCode::Up | KeyCode::Char('k') | KeyCode::PageUp => {
                let step = if key.code == KeyCode::PageUp { 20 } else { 1 };
                self.selected = (self.selected + step).min(n.saturating_sub(1));
                if self.selected + 1 >= n && !self.complete {
                    return AuditAction::LoadOlder;
                }
            }
            KeyCode::Down | KeyCode::Char('j') => self.selected = self.selected.saturating_sub(1),
            KeyCode::PageDown => self.selected = self.selected.saturating_sub(20),
            KeyCode::End => self.selected = 0,
            KeyCode::Enter => {
                let v = self.visible();
                self.opened = v
                    .len()
                    .checked_sub(self.selected + 1)
                    .and_then(|i| v.get(i))
                    .map(|r| (*r).clone());
            }
            KeyCode::Char('d') => {
                self.decision = Self::cycle(&self.decision, &DECISIONS);
                self.selected = 0;
            }
            KeyCode::Char('t') => {
                self.tool = Self::cycle(&self.tool, &self.seen(|r| Some(r.tool.clone())));
                self.selected = 0;
            }
            KeyCode::Char('c') => {
                let classes = self.seen(|r| r.class.map(|c| c.as_str().to_string()));
                self.class = Self::cycle(&self.class, &classes);
                self.selected = 0;
            }
            KeyCode::Char('/') => {
                self.searching = true;
                self.search.clear();
            }
            _ => {}
        }
        AuditAction::None
    }
}
