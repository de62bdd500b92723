//! The classification budget: what reading one command may cost, counted, never timed. One
//! `Budget` is shared by everything a classification does (the grammar's parses and re-readings,
//! nested shells, backtick bodies, the walk over every syntax tree, brace expansion), so no
//! nesting or repetition multiplies it. The grammar's own work is counted through tree-sitter's
//! progress callback, which it calls every 100 parser operations, and a parse is cancelled there.
//!
//! Invariant: once a charge is refused the budget stays spent; every later charge is refused at
//! once, and `spent` says which limit was reached, so the caller can report it (a spent budget is
//! an answer, SHELL_COMPLEX, never a silent partial READ_ONLY).

use std::cell::Cell;

/// What a budget counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// Bytes of the command itself.
    SourceBytes,
    /// Bytes handed to the grammar, over every parse.
    ParsedBytes,
    /// The grammar's operations, in the hundreds its progress callback reports.
    ParserSteps,
    /// Syntax nodes walked.
    Nodes,
    /// Characters brace expansion scans and words it produces.
    BraceWork,
    /// `|` characters in one parse. The grammar's pipelines are quadratic when anything after
    /// them fails to parse (`echo a|a|…|` with 3,000 stages: 0.7 s and 130 MB; 6,000: 2.6 s and
    /// 400 MB), all in tree-sitter's `ts_parser__accept`, where no progress callback runs.
    PipeOperators,
}

const RESOURCES: usize = 6;

impl Resource {
    fn index(self) -> usize {
        self as usize
    }

    fn what(self) -> &'static str {
        match self {
            Resource::SourceBytes => "bytes of command",
            Resource::ParsedBytes => "bytes parsed",
            Resource::ParserSteps => "hundred parser steps",
            Resource::Nodes => "syntax nodes",
            Resource::BraceWork => "steps of brace expansion",
            Resource::PipeOperators => "`|` characters in one parse",
        }
    }
}

/// The limits of one classification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetLimits {
    limits: [u64; RESOURCES],
}

impl BudgetLimits {
    /// The defaults: every input up to 1 MiB is answered within a second and 64 MiB (the
    /// measured figures are in the closing note of issue 10). The grammar's steps are the
    /// tightest limit: a well-formed pipeline costs the grammar about 1.7 KB of memory a byte,
    /// so 250,000 operations (some 30 KB of `a|a|…`, 100 KB of plain words) stay near 50 MB.
    /// A real command is a few hundred bytes and spends a thousandth of this.
    pub const DEFAULT: BudgetLimits = BudgetLimits {
        limits: [
            1 << 20,   // SourceBytes: 1 MiB
            4 << 20,   // ParsedBytes: every re-reading of a large command fits
            2_500,     // ParserSteps: 250,000 grammar operations
            100_000,   // Nodes
            2_000_000, // BraceWork
            1_000,     // PipeOperators (a parse each; no real command has a hundred)
        ],
    };

    /// The same limits with one changed (tests use small budgets to count, not to time).
    pub const fn with(mut self, resource: Resource, limit: u64) -> Self {
        self.limits[resource as usize] = limit;
        self
    }

    pub fn limit(&self, resource: Resource) -> u64 {
        self.limits[resource.index()]
    }
}

impl Default for BudgetLimits {
    fn default() -> Self {
        BudgetLimits::DEFAULT
    }
}

/// What one classification has spent, against its limits.
#[derive(Debug)]
pub struct Budget {
    limits: BudgetLimits,
    used: [Cell<u64>; RESOURCES],
    spent: Cell<Option<Resource>>,
}

impl Default for Budget {
    fn default() -> Self {
        Budget::new(BudgetLimits::DEFAULT)
    }
}

impl Budget {
    pub fn new(limits: BudgetLimits) -> Self {
        Budget {
            limits,
            used: Default::default(),
            spent: Cell::new(None),
        }
    }

    /// Spend `amount` of `resource`; false (and the budget spent for good) past its limit.
    pub fn charge(&self, resource: Resource, amount: u64) -> bool {
        if self.spent.get().is_some() {
            return false;
        }
        let cell = &self.used[resource.index()];
        let total = cell.get().saturating_add(amount);
        cell.set(total);
        if total > self.limits.limit(resource) {
            self.spent.set(Some(resource));
            return false;
        }
        true
    }

    /// Admit one use of `amount` of `resource` without accumulating it (a limit on each parse,
    /// not on all of them); false, and the budget spent, past the limit.
    pub fn admit(&self, resource: Resource, amount: u64) -> bool {
        if self.spent.get().is_some() {
            return false;
        }
        let cell = &self.used[resource.index()];
        cell.set(cell.get().max(amount));
        if amount > self.limits.limit(resource) {
            self.spent.set(Some(resource));
            return false;
        }
        true
    }

    /// What is left of `resource` (zero once the budget is spent).
    pub fn remaining(&self, resource: Resource) -> u64 {
        if self.spent.get().is_some() {
            return 0;
        }
        self.limits
            .limit(resource)
            .saturating_sub(self.used[resource.index()].get())
    }

    /// How much of `resource` has been charged.
    pub fn used(&self, resource: Resource) -> u64 {
        self.used[resource.index()].get()
    }

    /// The limit that was reached, if one was.
    pub fn spent(&self) -> Option<Resource> {
        self.spent.get()
    }

    /// The sentence that says so.
    pub fn reason(&self) -> Option<String> {
        let r = self.spent.get()?;
        Some(format!(
            "the command is too large to check: it exceeds the classification budget of {} {}",
            self.limits.limit(r),
            r.what()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_charge_spends_the_budget_for_good() {
        let b = Budget::new(BudgetLimits::DEFAULT.with(Resource::Nodes, 3));
        assert!(b.charge(Resource::Nodes, 2) && b.charge(Resource::Nodes, 1));
        assert_eq!(b.remaining(Resource::Nodes), 0);
        assert!(b.spent().is_none());
        assert!(!b.charge(Resource::Nodes, 1));
        assert_eq!(b.spent(), Some(Resource::Nodes));
        assert!(
            !b.charge(Resource::ParsedBytes, 1),
            "every later charge is refused"
        );
        assert_eq!(b.remaining(Resource::ParsedBytes), 0);
        let reason = b.reason().unwrap_or_default();
        assert!(
            reason.contains("classification budget of 3 syntax nodes"),
            "{reason}"
        );
    }
}
