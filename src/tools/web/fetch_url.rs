//! `fetch_url {url, pages?, save_as?}`: the plan (a write target when saving, nothing else) and
//! the action: fetch under the address policy, save the body when asked (atomically, through the
//! gated path), and render it for the model: HTML as Markdown, text as is, a PDF as one slice of
//! pages naming the range that continues it.

use std::sync::Arc;

use serde_json::Value;

use crate::harness::command_policy::{CommandAssessment, CommandClass};
use crate::harness::primitives::{ToolResult, ToolStatus};
use crate::harness::process::CancelToken;
use crate::harness::target_policy::Writer;
use crate::tools::documents::{
    DocumentError, DocumentKind, PdfOptions, decode_text, html_to_markdown, pdf_pages_with,
};
use crate::tools::handler::{Action, ActionOutcome, Plan, RunContext, ToolHandler};
use crate::tools::host::SpearHost;
use crate::tools::host::files::{current, reported};
use crate::tools::host::gates::{Target, TargetAccess};
use crate::tools::refusal::{Refusal, invalid_arguments};
use crate::tools::working_state::content_hash;

use super::pages::{self, PageRange};
use crate::tools::host::web::WebPair;
use crate::tools::host::web::http::{self, FetchError, Fetched};

/// One fetch as asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchRequest {
    pub url: String,
    pub pages: Option<PageRange>,
    pub save_as: Option<String>,
}

impl FetchRequest {
    /// From the tool's schema-valid arguments.
    pub fn from_args(args: &Value) -> Result<Self, Refusal> {
        let url = args["url"].as_str().unwrap_or_default().trim().to_string();
        let pages = match args.get("pages").and_then(Value::as_str) {
            Some(p) => Some(PageRange::parse(p).map_err(invalid_arguments)?),
            None => None,
        };
        let save_as = args
            .get("save_as")
            .and_then(Value::as_str)
            .map(str::to_string);
        Ok(FetchRequest {
            url,
            pages,
            save_as,
        })
    }

    /// The call as one line, for the person asked to approve a save and for the audit log.
    pub fn describe(&self) -> String {
        let mut d = format!("fetch_url {}", self.url);
        if let Some(p) = &self.pages {
            d.push_str(&format!(" --pages {p}"));
        }
        if let Some(p) = &self.save_as {
            d.push_str(&format!(" --save-as {p}"));
        }
        d
    }

    /// The plan: the save target gated as write_file's is, nothing else touched. A save is
    /// authorized as the write it is, with the URL in what the person is asked.
    pub fn plan(self) -> Plan {
        let targets = self
            .save_as
            .iter()
            .map(|p| Target {
                path: p.clone(),
                access: TargetAccess::Write(Writer::WriteFile),
            })
            .collect();
        let command = self
            .save_as
            .as_deref()
            .map(|p| save_assessment(&self.describe(), &self.url, p));
        Plan {
            targets,
            command,
            audit_target: Some(self.describe()),
            action: Box::new(FetchAction { req: self }),
        }
    }
}

/// A save, as the command policy sees it: it writes `path`, so it is WORKSPACE_MUTATING and
/// authorized as any write is (SAFE refuses, ASK asks, AUTO allows).
fn save_assessment(described: &str, url: &str, path: &str) -> CommandAssessment {
    CommandAssessment {
        command: described.to_string(),
        class: CommandClass::WorkspaceMutating,
        executables: Vec::new(),
        writes: vec![path.to_string()],
        network: false,
        reasons: vec![format!(
            "saves what {url} returns as `{path}` (fetched by Spear itself, not by a command)"
        )],
        literal_argv: None,
    }
}

pub struct FetchUrl;

impl ToolHandler for FetchUrl {
    fn plan(&self, args: &Value, host: &SpearHost) -> Result<Plan, Refusal> {
        let req = FetchRequest::from_args(args)?;
        // The URL goes out (its query, its path): no known secret goes with it.
        if let Some(refusal) = host.secret_out(&req.url) {
            return Err(refusal);
        }
        Ok(req.plan())
    }
}

/// The work of one fetch, once the gates (and, when saving, authorization) have passed.
pub struct FetchAction {
    pub req: FetchRequest,
}

impl Action for FetchAction {
    fn prepare(
        &mut self,
        _host: &SpearHost,
        _paths: &[crate::tools::host::gates::GatedPath],
    ) -> Result<Option<crate::tools::preview::Preview>, ToolResult> {
        let text = match &self.req.save_as {
            Some(p) => format!("fetch {} and save it as `{p}`", self.req.url),
            None => format!("fetch {}", self.req.url),
        };
        Ok(Some(crate::tools::preview::Preview::Note { text }))
    }

    fn run(self: Box<Self>, host: &SpearHost, ctx: &RunContext<'_>) -> ActionOutcome {
        run_fetch(&self.req, host, ctx)
    }
}

fn run_fetch(req: &FetchRequest, host: &SpearHost, ctx: &RunContext<'_>) -> ActionOutcome {
    let web = host.web();
    // The next slice of a PDF just read needs no second download.
    if req.save_as.is_none()
        && let Some(pages) = web.cached(&req.url)
    {
        return render_pdf(&req.url, &pages, req.pages, "cached from an earlier fetch").into();
    }
    let fetched = match http::get(&req.url, &web.settings().addresses, &web.settings().limits) {
        Ok(f) => f,
        Err(e) => return fetch_failure(e).into(),
    };
    let mut saved = None;
    if req.save_as.is_some() {
        let Some(p) = ctx.paths.first() else {
            return ToolResult::failed("fetch_url was planned to save without a path").into();
        };
        let before = match current(host, p) {
            Ok(b) => b,
            Err(r) => return r.into(),
        };
        match host.write_atomic(p, &fetched.body) {
            Ok(outcome) => {
                let path = reported(p);
                host.record_mutation(
                    &path,
                    before.as_deref().map(content_hash),
                    Some(content_hash(&fetched.body)),
                );
                saved = Some((path, outcome.bytes, outcome.created));
            }
            Err(e) => return crate::tools::host::files::fs_failure(e).into(),
        }
    }
    let mut result = render(&fetched, req, web, ctx.cancel);
    if let Some((path, bytes, created)) = saved {
        let verb = if created { "created" } else { "wrote" };
        result.stdout = format!("saved: {verb} `{path}` ({bytes} bytes)\n{}", result.stdout);
        result.changed_paths = vec![path];
        return ActionOutcome {
            bytes_written: Some(bytes),
            ..result.into()
        };
    }
    result.into()
}

/// A failed fetch as a result: a refused address is a refusal, a 404 is not_found, the time
/// limit is a timeout; the rest failed.
fn fetch_failure(e: FetchError) -> ToolResult {
    let status = match &e {
        FetchError::Refused { .. } | FetchError::Scheme(_) => ToolStatus::Denied,
        FetchError::Status {
            status: 404 | 410, ..
        } => ToolStatus::NotFound,
        FetchError::Timeout { .. } => ToolStatus::Timeout,
        _ => ToolStatus::Failed,
    };
    ToolResult::refused(status, e.to_string())
}

/// The fetched body as the model reads it; `cancel` stops a document's extraction at once.
fn render(f: &Fetched, req: &FetchRequest, web: &WebPair, cancel: &CancelToken) -> ToolResult {
    let head = &f.body[..f.body.len().min(4096)];
    let kind = DocumentKind::detect(f.content_type.as_deref(), Some(f.url.path()), head);
    let what = format!(
        "{}{} bytes{}",
        f.content_type
            .as_deref()
            .map(|c| format!("{c}, "))
            .unwrap_or_default(),
        f.body.len(),
        match f.redirects.len() {
            0 => String::new(),
            n => format!(", after {n} redirect(s)"),
        }
    );
    if req.pages.is_some() && kind != Some(DocumentKind::Pdf) {
        return ToolResult::failed(format!(
            "`pages` selects pages of a PDF, and {} is {}; fetch it without `pages`",
            f.url,
            kind.map_or("not a document", DocumentKind::as_str)
        ));
    }
    match kind {
        Some(DocumentKind::Pdf) => match pdf_pages_with(&f.body, &pdf_options(cancel)) {
            Ok(text) => {
                let pages = text.pages;
                let pages = Arc::new(pages);
                web.remember(&[req.url.as_str(), f.url.as_str()], pages.clone());
                render_pdf(f.url.as_str(), &pages, req.pages, &what)
            }
            Err(e @ DocumentError::NoText { .. }) => ToolResult::failed(format!("{}: {e}", f.url)),
            Err(e @ DocumentError::Cancelled) => cancelled(f.url.as_str(), e),
            Err(e) => ToolResult::failed(format!("{}: the PDF could not be read: {e}", f.url)),
        },
        Some(DocumentKind::Html) => {
            let text = decode_text(&f.body, f.content_type.as_deref(), DocumentKind::Html);
            match html_to_markdown(&text, Some(f.url.as_str()), Some(cancel)) {
                Ok(md) => ToolResult::ok(format!("{} ({what}; HTML as Markdown)\n\n{md}", f.url)),
                Err(e @ DocumentError::Cancelled) => cancelled(f.url.as_str(), e),
                Err(e) => ToolResult::failed(format!("{}: {e}", f.url)),
            }
        }
        Some(k) => ToolResult::ok(format!(
            "{} ({what}; {})\n\n{}",
            f.url,
            k.as_str(),
            decode_text(&f.body, f.content_type.as_deref(), k)
        )),
        None => ToolResult::ok(format!(
            "{} ({what}): binary content that is not a document Spear reads as text; nothing \
             shown{}",
            f.url,
            if req.save_as.is_some() {
                ""
            } else {
                " (save it with save_as to keep it)"
            }
        )),
    }
}

fn pdf_options(cancel: &CancelToken) -> PdfOptions {
    PdfOptions {
        cancel: Some(cancel.clone()),
        ..PdfOptions::default()
    }
}

fn cancelled(url: &str, e: DocumentError) -> ToolResult {
    ToolResult::refused(ToolStatus::Cancelled, format!("{url}: {e}"))
}

/// One slice of a PDF, with the range that continues it named first and last.
fn render_pdf(url: &str, pages: &[String], want: Option<PageRange>, what: &str) -> ToolResult {
    let s = match pages::slice(pages, want) {
        Ok(s) => s,
        Err(why) => return ToolResult::failed(format!("{url}: {why}")),
    };
    let continuation = match s.next {
        Some(next) => format!(
            "next pages: \"{next}\" (call fetch_url with the same url and pages \"{next}\" to \
             continue; do not fetch the url again without it)"
        ),
        None => format!(
            "this slice ends the document (page {} of {})",
            s.shown.last, s.total
        ),
    };
    ToolResult::ok(format!(
        "{url} ({what}; PDF of {} pages)\npages {} of {}\n{continuation}\n\n{}\n{continuation}\n",
        s.total, s.shown, s.total, s.text
    ))
}
