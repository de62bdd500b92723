//! The web pair and document extraction, one binary: PDFs generated here read page by page
//! (confined pdftotext and the in-process fallback, scans refused), HTML to Markdown, and
//! `fetch_url` / `search_internet` against loopback servers these tests start.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed unwrap in a test is a failed test

#[path = "support/audit_log.rs"]
mod audit_log;

#[path = "support/approver.rs"]
mod approver;
#[path = "support/extractor.rs"]
mod extractor;
#[path = "support/pdf.rs"]
mod pdf;

#[path = "web/bounds.rs"]
mod bounds;
#[path = "web/capability.rs"]
mod capability;
#[path = "web/documents.rs"]
mod documents;
#[path = "web/exposure.rs"]
mod exposure;
#[path = "web/fetch.rs"]
mod fetch;
#[allow(dead_code)] // the scripted model is what this binary needs of the loop's fixtures
#[path = "agent_loop/support.rs"]
mod loop_support;
#[path = "web/search.rs"]
mod search;
#[path = "web/server.rs"]
mod server;
#[path = "web/support.rs"]
mod support;
