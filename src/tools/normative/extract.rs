//! From a source's bytes to units and pages: Markdown and plain text here, HTML and PDF through
//! `tools::documents` (the same extraction `fetch_url` uses). Invariant: a PDF whose text cannot
//! be extracted is refused with that reason, never stored as an empty standard.

use serde::{Deserialize, Serialize};

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

/// The kind of `bytes` from `source` (a path or URL), trusting the content over the name: a
/// `%PDF-` header is a PDF whatever the name says.
pub fn detect(
    source: &str,
    content_type: Option<&str>,
    bytes: &[u8],
) -> Result<SourceKind, StandardError> {
    if bytes.starts_with(b"%PDF-") {
        return Ok(SourceKind::Pdf);
    }
    let lower = source
        .split(['?', '#'])
        .next()
        .unwrap_or(source)
        .to_ascii_lowercase();
    let ct = content_type.unwrap_or("").to_ascii_lowercase();
    if ct.contains("pdf") || lower.ends_with(".pdf") {
        return Err(StandardError::Unsupported {
            origin: source.to_string(),
            why: "it is named or served as a PDF but does not start with a PDF header".into(),
        });
    }
    let head: String = String::from_utf8_lossy(&bytes[..bytes.len().min(512)])
        .trim_start()
        .to_ascii_lowercase();
    let html = ct.contains("html")
        || lower.ends_with(".html")
        || lower.ends_with(".htm")
        || head.starts_with("<!doctype html")
        || head.starts_with("<html");
    if std::str::from_utf8(bytes).is_err() && !html {
        return Err(StandardError::Unsupported {
            origin: source.to_string(),
            why: "it is neither UTF-8 text nor a PDF (accepted: PDF, Markdown, HTML, plain text)"
                .into(),
        });
    }
    Ok(if html {
        SourceKind::Html
    } else if ct.contains("markdown") || lower.ends_with(".md") || lower.ends_with(".markdown") {
        SourceKind::Markdown
    } else {
        SourceKind::PlainText
    })
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

fn html(source: &str, _bytes: &[u8]) -> Result<Extracted, StandardError> {
    Err(StandardError::Unsupported {
        origin: source.to_string(),
        why: "HTML extraction is not built into this Spear".into(),
    })
}

fn pdf(source: &str, _bytes: &[u8]) -> Result<Extracted, StandardError> {
    Err(StandardError::Unsupported {
        origin: source.to_string(),
        why: "PDF extraction is not built into this Spear".into(),
    })
}
