//! A PDF's text, one string per page: `pdftotext` (poppler) confined in the sandbox when it is
//! installed, pages split on its form feeds; `pdf-extract` in this process when pdftotext is
//! absent or fails, confined in a child of its own (`confined`: bounded memory, CPU and wall
//! time, no network, killed when the task is cancelled). A PDF whose pages hold no text is
//! `DocumentError::NoText`, never a list of empty pages.

use std::path::PathBuf;
use std::time::Duration;

use super::confined::{self, Bounds, Failure, Job};
use super::{DocumentError, pdftotext};
use crate::harness::process::CancelToken;

/// Bounds on one extraction.
#[derive(Debug, Clone)]
pub struct PdfOptions {
    /// Larger inputs are refused before anything parses them.
    pub max_bytes: usize,
    /// Each extractor's time limit.
    pub timeout: Duration,
    /// Text beyond this many bytes is refused rather than cut (a cut page range would lie).
    pub max_text_bytes: usize,
    /// The pdftotext to run; `None`: `pdftotext` on `PATH`. `Some` with a path that does not
    /// exist behaves as not installed.
    pub pdftotext: Option<PathBuf>,
    /// Whether to try pdftotext at all (off: pdf-extract only).
    pub use_pdftotext: bool,
    /// The address space pdf-extract's child may use: a decompression bomb ends here.
    pub memory_bytes: u64,
    /// The task's cancellation: pdf-extract's child is killed at once when it fires.
    pub cancel: Option<CancelToken>,
}

impl Default for PdfOptions {
    fn default() -> Self {
        PdfOptions {
            max_bytes: 128 << 20,
            timeout: Duration::from_secs(60),
            max_text_bytes: 64 << 20,
            pdftotext: None,
            use_pdftotext: true,
            memory_bytes: 1 << 30,
            cancel: None,
        }
    }
}

/// Which extractor produced the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PdfExtractor {
    /// poppler's pdftotext, confined.
    Pdftotext,
    /// pdf-extract, in process.
    PdfExtract,
}

/// The pages' text and where it came from.
#[derive(Debug, Clone)]
pub struct PdfText {
    pub pages: Vec<String>,
    pub extractor: PdfExtractor,
    /// Why pdftotext was not used, when it was not.
    pub pdftotext_skipped: Option<String>,
}

/// The text of each page of `bytes`, with the default bounds.
pub fn pdf_pages(bytes: &[u8]) -> Result<Vec<String>, DocumentError> {
    pdf_pages_with(bytes, &PdfOptions::default()).map(|t| t.pages)
}

/// The text of each page of `bytes`, and which extractor found it.
pub fn pdf_pages_with(bytes: &[u8], opts: &PdfOptions) -> Result<PdfText, DocumentError> {
    if bytes.len() > opts.max_bytes {
        return Err(DocumentError::TooLarge {
            size: bytes.len(),
            limit: opts.max_bytes,
        });
    }
    let first = match try_pdftotext(bytes, opts) {
        Ok(pages) if has_text(&pages) => {
            return Ok(PdfText {
                pages,
                extractor: PdfExtractor::Pdftotext,
                pdftotext_skipped: None,
            });
        }
        // No text by poppler's reading: pdf-extract reads some files poppler does not, so it
        // gets its turn before the document is called textless.
        Ok(pages) => Poppler::Textless(pages.len()),
        Err(why) => Poppler::Failed(why),
    };
    let second = pdf_extract_pages(bytes, opts);
    if second == Err(Failure::Cancelled) {
        return Err(DocumentError::Cancelled);
    }
    let second = second.map_err(|f| match f {
        Failure::Failed(why) => why,
        Failure::Cancelled => "cancelled".to_string(),
    });
    match (second, first) {
        (Ok(pages), first) if has_text(&pages) => Ok(PdfText {
            pages,
            extractor: PdfExtractor::PdfExtract,
            pdftotext_skipped: match first {
                Poppler::Failed(why) => Some(why),
                Poppler::Textless(_) => Some("pdftotext found no text".into()),
            },
        }),
        (Ok(pages), Poppler::Textless(n)) => Err(DocumentError::NoText {
            pages: n.max(pages.len()),
        }),
        (Ok(pages), Poppler::Failed(_)) => Err(DocumentError::NoText { pages: pages.len() }),
        (Err(_), Poppler::Textless(n)) => Err(DocumentError::NoText { pages: n }),
        (Err(e), Poppler::Failed(why)) => Err(DocumentError::Unreadable(format!(
            "pdftotext: {why}; pdf-extract: {e}"
        ))),
    }
}

/// What pdftotext made of a file it did not give text for.
enum Poppler {
    /// It read this many pages and found no text on any.
    Textless(usize),
    /// It was not run, or failed: why.
    Failed(String),
}

fn has_text(pages: &[String]) -> bool {
    pages.iter().any(|p| !p.trim().is_empty())
}

/// pdftotext's pages, or why it could not give them.
fn try_pdftotext(bytes: &[u8], opts: &PdfOptions) -> Result<Vec<String>, String> {
    if !opts.use_pdftotext {
        return Err("pdftotext is switched off".into());
    }
    let program = match &opts.pdftotext {
        Some(p) if p.is_file() => p.clone(),
        Some(p) => return Err(format!("{} does not exist", p.display())),
        None => pdftotext::find_on_path("pdftotext").ok_or(
            "pdftotext is not installed (install poppler-utils: `make` does it)".to_string(),
        )?,
    };
    let text = pdftotext::run(&program, bytes, opts.timeout, opts.max_text_bytes)?;
    Ok(split_pages(&text))
}

/// pdftotext ends every page with a form feed; the piece after the last one is not a page.
pub(super) fn split_pages(text: &str) -> Vec<String> {
    let mut pages: Vec<String> = text.split('\x0c').map(str::to_string).collect();
    if pages.len() > 1 && pages.last().is_some_and(|p| p.trim().is_empty()) {
        pages.pop();
    }
    pages
}

/// pdf-extract's pages, from a confined child: it panics on some CMaps, inflates object streams
/// without bound and may loop, so every one of those ends in the child, as an error.
fn pdf_extract_pages(bytes: &[u8], opts: &PdfOptions) -> Result<Vec<String>, Failure> {
    let bounds = Bounds {
        memory_bytes: opts.memory_bytes,
        timeout: opts.timeout,
        max_output: opts.max_text_bytes.saturating_mul(2),
    };
    let out = confined::run(Job::Pdf, bytes, &bounds, opts.cancel.as_ref())?;
    let pages: Vec<String> = serde_json::from_slice(&out)
        .map_err(|e| Failure::Failed(format!("the extractor's answer is not a page list: {e}")))?;
    let total: usize = pages.iter().map(String::len).sum();
    match total > opts.max_text_bytes {
        true => Err(Failure::Failed(format!(
            "more than {} bytes of text; the document is too large to extract whole",
            opts.max_text_bytes
        ))),
        false => Ok(pages),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_split_on_form_feeds_without_a_phantom_last_page() {
        assert_eq!(split_pages("one\n\x0ctwo\n\x0c"), vec!["one\n", "two\n"]);
        assert_eq!(
            split_pages("one\x0c\x0cthree\x0c"),
            vec!["one", "", "three"]
        );
        assert_eq!(split_pages("no feed"), vec!["no feed"]);
    }

    #[test]
    fn too_large_is_refused_before_parsing() {
        let opts = PdfOptions {
            max_bytes: 10,
            ..PdfOptions::default()
        };
        let e = pdf_pages_with(&[b'x'; 11], &opts).unwrap_err();
        assert!(
            matches!(
                e,
                DocumentError::TooLarge {
                    size: 11,
                    limit: 10
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn garbage_is_unreadable_by_both_and_says_so() {
        let opts = PdfOptions {
            use_pdftotext: false,
            ..PdfOptions::default()
        };
        let e = pdf_pages_with(b"%PDF-1.4 this is not a pdf", &opts).unwrap_err();
        assert!(matches!(e, DocumentError::Unreadable(_)), "{e}");
        assert!(e.to_string().contains("pdf-extract"), "{e}");
    }
}
