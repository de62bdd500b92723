//! `search_files {pattern, path?, glob?, regex?, max_results?}`: in-process, `.gitignore`-aware
//! search with ripgrep's libraries (`ignore` walks, `grep-searcher` searches). The directory must
//! lie inside the workspace (the router's Search gate), every file is opened through the
//! Workspace, links are not followed, binary files are skipped, FIFOs, sockets and devices are
//! skipped and counted (never opened), and results are bounded with a count of what was left
//! out.

use std::path::Path;

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use ignore::overrides::OverrideBuilder;
use serde_json::{Value, json};

use crate::harness::primitives::ToolResult;
use crate::harness::workspace::{Access, WorkspacePath};
use crate::tools::handler::{Action, ActionOutcome, Plan, RunContext, ToolHandler};
use crate::tools::host::SpearHost;
use crate::tools::host::gates::{Target, TargetAccess};
use crate::tools::refusal::{Refusal, invalid_arguments};
use crate::tools::walk::{safe_walk, special_kind};

pub const DEFAULT_MAX_RESULTS: u64 = 100;
pub const MAX_RESULTS: u64 = 1_000;
const MAX_LINE_CHARS: usize = 300;

pub fn schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["pattern"],
        "properties": {
            "pattern": {"type": "string", "minLength": 1},
            "path": {"type": "string", "minLength": 1, "description": "Directory or file (default: the project)"},
            "glob": {"type": "string", "minLength": 1, "description": "Only files matching, e.g. *.rs"},
            "regex": {"type": "boolean", "description": "Treat pattern as a regular expression (default: literal text)"},
            "max_results": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS}
        }
    })
}

pub struct SearchFiles;

impl ToolHandler for SearchFiles {
    fn plan(&self, args: &Value, _host: &SpearHost) -> Result<Plan, Refusal> {
        let pattern = args["pattern"].as_str().unwrap_or_default();
        let regex = args.get("regex").and_then(Value::as_bool).unwrap_or(false);
        let matcher = RegexMatcherBuilder::new()
            .fixed_strings(!regex)
            .build(pattern)
            .map_err(|e| invalid_arguments(format!("`pattern`: {e}")))?;
        let path = args
            .get("path")
            .and_then(Value::as_str)
            .unwrap_or(".")
            .to_string();
        let glob = args.get("glob").and_then(Value::as_str).map(str::to_string);
        if let Some(g) = &glob {
            OverrideBuilder::new("/")
                .add(g)
                .map_err(|e| invalid_arguments(format!("`glob`: {e}")))?;
        }
        let max = args
            .get("max_results")
            .and_then(Value::as_u64)
            .unwrap_or(DEFAULT_MAX_RESULTS);
        Ok(Plan {
            targets: vec![Target {
                path: path.clone(),
                access: TargetAccess::Search,
            }],
            command: None,
            audit_target: Some(path),
            action: Box::new(Search {
                matcher,
                glob,
                max,
                pattern: pattern.to_string(),
            }),
        })
    }
}

struct Search {
    matcher: RegexMatcher,
    glob: Option<String>,
    max: u64,
    pattern: String,
}

impl Action for Search {
    fn run(self: Box<Self>, host: &SpearHost, ctx: &RunContext<'_>) -> ActionOutcome {
        let Some(dir) = ctx.paths.first() else {
            return ToolResult::failed("search_files was planned without a path").into();
        };
        match self.search(host, dir) {
            Ok(r) => r.into(),
            Err(e) => ToolResult::failed(format!("search: {e}")).into(),
        }
    }
}

impl Search {
    fn search(&self, host: &SpearHost, dir: &WorkspacePath) -> Result<ToolResult, ignore::Error> {
        let root = host.project_root();
        let (mut walk, notes) = safe_walk(dir.resolved());
        if let Some(g) = &self.glob {
            walk.overrides(OverrideBuilder::new(dir.resolved()).add(g)?.build()?);
        }
        let mut searcher = SearcherBuilder::new()
            .line_number(true)
            .binary_detection(BinaryDetection::quit(b'\x00'))
            .build();
        let (mut shown, mut total, mut files) = (Vec::new(), 0u64, 0u64);
        let mut special: Vec<String> = Vec::new();
        for entry in walk.build() {
            let entry = entry?;
            let Some(kind) = entry.file_type() else {
                continue;
            };
            if let Some(what) = special_kind(kind) {
                let rel = entry.path().strip_prefix(root).unwrap_or(entry.path());
                special.push(format!("`{}` ({what})", rel.display()));
                continue;
            }
            if !kind.is_file() {
                continue;
            }
            let rel = entry.path().strip_prefix(root).unwrap_or(entry.path());
            let Some(file) = open(host, rel) else {
                continue;
            };
            files += 1;
            let name = rel.display().to_string();
            let sink = Lossy(|line_no: u64, line: &str| {
                total += 1;
                if (shown.len() as u64) < self.max {
                    let text: String = line.trim_end().chars().take(MAX_LINE_CHARS).collect();
                    shown.push(format!("{name}:{line_no}: {text}"));
                }
                Ok(true)
            });
            // An unreadable file is skipped, as ripgrep does; the count says what was searched.
            let _ = searcher.search_file(&self.matcher, &file, sink);
        }
        let mut out = shown.join("\n");
        if !out.is_empty() {
            out.push('\n');
        }
        let omitted = total - shown.len() as u64;
        if total == 0 {
            out.push_str(&format!(
                "[no match for `{}` in {files} files]\n",
                self.pattern
            ));
        } else if omitted > 0 {
            out.push_str(&format!(
                "[{total} matches in {files} files; {omitted} more matches omitted — narrow the \
                 path or glob, or raise max_results (at most {MAX_RESULTS})]\n"
            ));
        } else {
            out.push_str(&format!("[{total} matches in {files} files]\n"));
        }
        if !special.is_empty() {
            const NAMED: usize = 10;
            let more = special.len().saturating_sub(NAMED);
            let mut names = special[..special.len().min(NAMED)].join(", ");
            if more > 0 {
                names.push_str(&format!(" and {more} more"));
            }
            out.push_str(&format!(
                "[skipped {} special files (FIFOs, sockets, devices are never opened): {names}]\n",
                special.len()
            ));
        }
        for line in notes.lines(root) {
            out.push_str(&line);
            out.push('\n');
        }
        Ok(ToolResult::ok(out))
    }
}

/// Open a file the walk found through the Workspace, so it is read beneath the root.
fn open(host: &SpearHost, rel: &Path) -> Option<std::fs::File> {
    let p = host.resolve(&rel.to_string_lossy(), Access::Read).ok()?;
    host.open_read(&p).ok()
}
