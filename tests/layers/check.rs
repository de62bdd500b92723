//! The judge: each reference's source and target placed in a layer of the table (the longest
//! `holds` prefix wins), and the reference allowed only when both are one layer, or the source's
//! `may_use` names the target's layer (or the layer its items belong to), and the target is not
//! another layer's private path. Every breach names the file, the line, the path as written and
//! the rule. External crates are judged by a second, shorter table: a crate listed there may be
//! named only under the module paths its row lists.

use std::fmt;
use std::path::PathBuf;

use super::scan::{Reference, Scan};

/// One row of the table.
pub struct Layer {
    pub name: &'static str,
    /// Module paths (or item paths) this layer holds, each with everything under it.
    pub holds: &'static [&'static str],
    /// When these are items of another layer (`ExecutionProfile` of `command_policy`): that
    /// layer's references to them are its own, and a layer that may use it may use them.
    pub within: Option<&'static str>,
    /// The layers this one may use, each with why the edge is legitimate.
    pub may_use: &'static [(&'static str, &'static str)],
    /// Paths of this layer no other layer may name, with why.
    pub private: &'static [(&'static str, &'static str)],
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Breach {
    pub file: PathBuf,
    pub line: usize,
    pub written: String,
    pub rule: String,
}

impl fmt::Display for Breach {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: `{}`: {}",
            self.file.display(),
            self.line,
            self.written,
            self.rule
        )
    }
}

/// An external crate that only some of the code may use (`ratatui` only in the screen).
pub struct CrateRule {
    /// The crate's name as paths spell it (`ratatui_textarea`, not `ratatui-textarea`).
    pub krate: &'static str,
    /// The module paths that may name it, each with everything under it, and why.
    pub used_by: &'static [(&'static str, &'static str)],
}

/// Every path in `scan` naming a crate of `rules` outside the modules its rule lists.
pub fn crate_breaches(rules: &[CrateRule], scan: &Scan) -> Vec<Breach> {
    let mut out = Vec::new();
    for r in &scan.outside {
        let Some(rule) = rules
            .iter()
            .find(|c| r.target.first().map(String::as_str) == Some(c.krate))
        else {
            continue;
        };
        if rule.used_by.iter().any(|(p, _)| under(&r.from, p)) {
            continue;
        }
        let allowed: Vec<&str> = rule.used_by.iter().map(|(p, _)| *p).collect();
        out.push(Breach {
            file: r.file.clone(),
            line: r.line,
            written: r.written.clone(),
            rule: format!(
                "{} may not use the crate {} (only {} may)",
                r.from.join("::"),
                rule.krate,
                allowed.join(", ")
            ),
        });
    }
    out
}

/// Crate rules named twice, or with an edge that does not say why.
pub fn crate_rule_errors(rules: &[CrateRule]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, c) in rules.iter().enumerate() {
        if rules[..i].iter().any(|o| o.krate == c.krate) {
            out.push(format!("crate {} is in the table twice", c.krate));
        }
        for (p, why) in c.used_by {
            if why.trim().is_empty() {
                out.push(format!("{p} may use crate {} without saying why", c.krate));
            }
        }
    }
    out
}

/// The layer holding `path`: the row with the longest matching `holds` entry.
pub fn place<'t>(table: &'t [Layer], path: &[String]) -> Option<&'t Layer> {
    let joined = path.join("::");
    table
        .iter()
        .flat_map(|l| l.holds.iter().map(move |h| (l, *h)))
        .filter(|(_, h)| joined == *h || joined.starts_with(&format!("{h}::")))
        .max_by_key(|(_, h)| h.len())
        .map(|(l, _)| l)
}

fn under(path: &[String], prefix: &str) -> bool {
    let joined = path.join("::");
    joined == prefix || joined.starts_with(&format!("{prefix}::"))
}

/// Every breach of `table` in `scan`: unreadable or unplaced files first, then references.
pub fn check(table: &[Layer], scan: &Scan) -> Vec<Breach> {
    let mut out: Vec<Breach> = scan
        .problems
        .iter()
        .map(|p| Breach {
            file: PathBuf::from("src"),
            line: 0,
            written: String::new(),
            rule: p.clone(),
        })
        .collect();
    for r in &scan.references {
        if let Some(b) = judge(table, r) {
            out.push(b);
        }
    }
    out
}

fn judge(table: &[Layer], r: &Reference) -> Option<Breach> {
    let breach = |rule: String| {
        Some(Breach {
            file: r.file.clone(),
            line: r.line,
            written: r.written.clone(),
            rule,
        })
    };
    let from = place(table, &r.from);
    let Some(to) = place(table, &r.target) else {
        let who = from.map_or_else(|| r.from.join("::"), |l| l.name.to_string());
        return breach(format!(
            "{who} names {}, which no layer of the table holds",
            r.target.join("::")
        ));
    };
    let owner = to.within.unwrap_or(to.name);
    let outsider = from.is_none_or(|f| f.name != owner && f.name != to.name);
    if let (true, Some((path, why))) = (
        outsider,
        to.private.iter().find(|(p, _)| under(&r.target, p)),
    ) {
        let who = from.map_or_else(|| r.from.join("::"), |l| l.name.to_string());
        return breach(format!(
            "{path} is private to {}, so {who} may not name it: {why}",
            to.name
        ));
    }
    let Some(from) = from else {
        return breach(format!("no layer of the table holds {}", r.from.join("::")));
    };
    let owner = to.within.unwrap_or(to.name);
    if from.name != owner && from.name != to.name {
        let allowed = from
            .may_use
            .iter()
            .any(|(n, _)| *n == to.name || *n == owner);
        if !allowed {
            let may: Vec<&str> = from.may_use.iter().map(|(n, _)| *n).collect();
            return breach(format!(
                "{} may not use {} (it may use: {})",
                from.name,
                to.name,
                if may.is_empty() {
                    "nothing of ours".to_string()
                } else {
                    may.join(", ")
                }
            ));
        }
    }
    None
}

/// Rows that are named in a `may_use` or `within` but do not exist, and rows named twice.
pub fn table_errors(table: &[Layer]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, l) in table.iter().enumerate() {
        if table[..i].iter().any(|o| o.name == l.name) {
            out.push(format!("layer {} is in the table twice", l.name));
        }
        for n in l.may_use.iter().map(|(n, _)| *n).chain(l.within) {
            if !table.iter().any(|o| o.name == n) {
                out.push(format!("layer {} names {n}, which is not a row", l.name));
            }
        }
        for (n, why) in l.may_use {
            if why.trim().is_empty() {
                out.push(format!("layer {} may use {n} without saying why", l.name));
            }
        }
    }
    out
}

/// Import cycles among sibling modules under `root` (`classify -> commands -> classify`), each
/// as `parent: a -> b -> a`. A module stands for everything under it: a file of `web/` naming
/// something of `host/` is the edge `web -> host` among the children of their common parent,
/// however deep either side sits. A child naming its parent's items is not an edge (the parent
/// is where siblings meet); a sibling is named by its module path, not through a re-export.
pub fn sibling_cycles(scan: &Scan, root: &str) -> Vec<String> {
    use std::collections::{BTreeMap, BTreeSet};
    let modules: BTreeSet<&Vec<String>> = scan.modules.values().collect();
    let mut edges: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for r in &scan.references {
        let Some(from) = scan.modules.get(&r.file) else {
            continue;
        };
        // The first segment where the two paths part: below it they are siblings.
        let common = from
            .iter()
            .zip(&r.target)
            .take_while(|(a, b)| a == b)
            .count();
        if common == 0 || common >= from.len() || common >= r.target.len() {
            continue;
        }
        let parent = &from[..common];
        if !under(parent, root) {
            continue;
        }
        let (me, other) = (&from[common], &r.target[common]);
        let sibling: Vec<String> = [parent, std::slice::from_ref(other)].concat();
        if modules.contains(&sibling) {
            edges
                .entry(parent.to_vec())
                .or_default()
                .entry(me.clone())
                .or_default()
                .insert(other.clone());
        }
    }
    let mut out = Vec::new();
    for (parent, graph) in &edges {
        let mut done: BTreeSet<String> = BTreeSet::new();
        // One line a cycle, however many of its modules the search starts from.
        let mut seen: BTreeSet<BTreeSet<String>> = BTreeSet::new();
        for start in graph.keys() {
            let mut path = vec![start.clone()];
            if let Some(cycle) = find_cycle(graph, &mut path, &mut done)
                && seen.insert(cycle.iter().cloned().collect())
            {
                out.push(format!("{}: {}", parent.join("::"), cycle.join(" -> ")));
            }
        }
    }
    out
}

/// Depth-first from the end of `path`; the first cycle met, closed (`a -> b -> a`).
fn find_cycle(
    graph: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
    path: &mut Vec<String>,
    done: &mut std::collections::BTreeSet<String>,
) -> Option<Vec<String>> {
    let last = path.last()?.clone();
    if done.contains(&last) {
        return None;
    }
    for next in graph.get(&last).into_iter().flatten() {
        if let Some(i) = path.iter().position(|p| p == next) {
            let mut cycle = path[i..].to_vec();
            cycle.push(next.clone());
            return Some(cycle);
        }
        path.push(next.clone());
        if let Some(c) = find_cycle(graph, path, done) {
            return Some(c);
        }
        path.pop();
    }
    done.insert(last);
    None
}
