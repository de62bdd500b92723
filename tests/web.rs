//! The web pair and document extraction, one binary: PDFs generated here read page by page
//! (confined pdftotext and the in-process fallback, scans refused), HTML to Markdown, and
//! `fetch_url` / `search_internet` against loopback servers these tests start.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed unwrap in a test is a failed test

#[path = "support/pdf.rs"]
mod pdf;

#[path = "web/documents.rs"]
mod documents;
