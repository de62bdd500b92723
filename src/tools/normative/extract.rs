//! From a source's bytes to units and pages: Markdown and plain text here, HTML and PDF through
//! `tools::documents` (the extraction `fetch_url` uses too, so both read a document alike). Invariant: a PDF whose text cannot
//! be extracted is refused with that reason, never stored as an empty standard.

use serde::{Deserialize, Serialize};

use crate::tools::documents::{DocumentError, DocumentKind, html_to_markdown, pdf_pages};
use crate::tools::normative::error::StandardError;
use crate::tools::normative::units::{self, Unit};

/// What a standard was added from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    Markdown,
    PlainText,
    Html,
    Pdf,
}

impl SourceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::Markdown => "markdown",
            SourceKind::PlainText => "text",
            SourceKind::Html => "html",
            SourceKind::Pdf => "pdf",
        }
    }
}

/// A source's units, and its pages when it has them.
pub struct Extracted {
    pub units: Vec<Unit>,
    pub pages: Vec<String>,
}

/// The kind of `bytes` from `source` (a path or URL), as `DocumentKind::detect` reads it: the
/// bytes over the content type over the name, so a `%PDF-` header is a PDF whatever the name.
pub fn detect(
    source: &str,
    content_type: Option<&str>,
    bytes: &[u8],
) -> Result<SourceKind, StandardError> {
    let name = source.split(['?', '#']).next().unwrap_or(source);
    match DocumentKind::detect(content_type, Some(name), bytes) {
        Some(DocumentKind::Pdf) => Ok(SourceKind::Pdf),
        Some(DocumentKind::Html) => Ok(SourceKind::Html),
        Some(DocumentKind::Markdown) => Ok(SourceKind::Markdown),
        Some(DocumentKind::PlainText) => Ok(SourceKind::PlainText),
        None => Err(StandardError::Unsupported {
            origin: source.to_string(),
            why: "it is neither text nor a PDF (accepted: PDF, Markdown, HTML, plain text)".into(),
        }),
    }
}

fn utf8<'a>(source: &str, bytes: &'a [u8]) -> Result<&'a str, StandardError> {
    std::str::from_utf8(bytes).map_err(|e| StandardError::Unsupported {
        origin: source.to_string(),
        why: format!("it is not UTF-8 text ({e})"),
    })
}

/// Split `bytes` of `kind` into units (and pages).
pub fn extract(source: &str, kind: SourceKind, bytes: &[u8]) -> Result<Extracted, StandardError> {
    match kind {
        SourceKind::Markdown => Ok(markdown(utf8(source, bytes)?)),
        SourceKind::PlainText => Ok(plain(utf8(source, bytes)?)),
        SourceKind::Html => html(source, bytes),
        SourceKind::Pdf => pdf(source, bytes),
    }
}

fn markdown(text: &str) -> Extracted {
    Extracted {
        units: units::split(&units::lines_of(text), true),
        pages: Vec::new(),
    }
}

/// Plain text; form feeds (as `pdftotext` writes them) separate pages.
fn plain(text: &str) -> Extracted {
    if text.contains('\x0c') {
        let mut pages: Vec<String> = text.split('\x0c').map(str::to_string).collect();
        if pages.last().is_some_and(|p| p.trim().is_empty()) {
            pages.pop();
        }
        return Extracted {
            units: units::split(&units::lines_of_pages(&pages), false),
            pages,
        };
    }
    Extracted {
        units: units::split(&units::lines_of(text), false),
        pages: Vec::new(),
    }
}

/// HTML's main content as Markdown (links made absolute when the source is a URL), then split
/// as Markdown.
fn html(source: &str, bytes: &[u8]) -> Result<Extracted, StandardError> {
    let text = String::from_utf8_lossy(bytes);
    let base = (source.starts_with("http://") || source.starts_with("https://")).then_some(source);
    let md = html_to_markdown(&text, base, None).map_err(|e| StandardError::Unsupported {
        origin: source.to_string(),
        why: e.to_string(),
    })?;
    Ok(markdown(&md))
}

/// A PDF's pages; clauses found in them keep the pages they span. A PDF without extractable
/// text (a scan) is refused with that reason.
fn pdf(source: &str, bytes: &[u8]) -> Result<Extracted, StandardError> {
    let pages = pdf_pages(bytes).map_err(|e| match e {
        DocumentError::NoText { .. } => StandardError::NoText {
            origin: source.to_string(),
            reason: e.to_string(),
        },
        other => StandardError::Unsupported {
            origin: source.to_string(),
            why: other.to_string(),
        },
    })?;
    Ok(Extracted {
        units: units::split(&units::lines_of_pages(&pages), false),
        pages,
    })
}
