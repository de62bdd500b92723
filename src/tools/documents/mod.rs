//! Documents as text for the model: what kind a body is (content type, leading bytes, file
//! extension), text in its declared encoding, HTML's main content as Markdown with its links kept, and a PDF's text page by
//! page. Invariant: extraction never panics into its caller, never runs an external program
//! unconfined, and never runs a third-party parser inside Spear's own process (`confined`: a
//! child of Spear's own binary with hard limits); a PDF that yields no text is an error that says
//! so, never an empty success.

mod confined;
mod html;
mod kind;
mod pdf;
mod pdftotext;
mod serve;
mod text;

pub use confined::{SUBCOMMAND as EXTRACT_SUBCOMMAND, set_extractor};
pub use html::html_to_markdown;
pub use kind::DocumentKind;
pub use pdf::{PdfExtractor, PdfOptions, PdfText, pdf_pages, pdf_pages_with};
pub use serve::serve as serve_extraction;
pub use text::decode_text;

use thiserror::Error;

/// Why a document could not be turned into text.
#[derive(Debug, Error)]
pub enum DocumentError {
    /// The PDF parsed, but none of its pages holds extractable text: typically a scan (pages
    /// that are images).
    #[error(
        "the PDF has {pages} page(s) but no extractable text: its pages are probably scanned \
         images, and Spear does no OCR. Run an OCR tool (such as ocrmypdf) on it first, or use a \
         text version of the document"
    )]
    NoText { pages: usize },
    /// Neither extractor could read the bytes as a PDF.
    #[error("the PDF could not be read: {0}")]
    Unreadable(String),
    /// The document is larger than extraction accepts.
    #[error("the document is {size} bytes, more than the {limit} bytes extraction accepts")]
    TooLarge { size: usize, limit: usize },
    /// `base_url` was given but is not an absolute URL.
    #[error("`{0}` is not an absolute URL (write it with its scheme, such as https://host/page)")]
    BadBaseUrl(String),
    /// The HTML could not be turned into text at all.
    #[error("the HTML could not be converted to text: {0}")]
    Html(String),
    /// The task was cancelled while the document was being read.
    #[error("cancelled while the document was being read")]
    Cancelled,
}

thread_local! {
    /// Set while this thread runs an in-process extractor whose panics are caught and turned
    /// into errors: a panic hook (the TUI's restores the terminal) should leave those alone.
    static CONTAINED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the current thread is inside a contained extraction, whose panic is caught and
/// reported as a `DocumentError`. Panic hooks consult this so a caught panic neither tears down
/// the terminal nor prints over the screen.
pub fn panic_is_contained() -> bool {
    CONTAINED.with(std::cell::Cell::get)
}

/// Run `f` with panics caught and marked as contained.
fn contained<T>(f: impl FnOnce() -> T) -> std::thread::Result<T> {
    CONTAINED.with(|c| c.set(true));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    CONTAINED.with(|c| c.set(false));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_contained_panic_is_caught_and_marked_only_while_it_runs() {
        assert!(!panic_is_contained());
        let seen = contained(panic_is_contained);
        assert!(matches!(seen, Ok(true)));
        let r = contained(|| -> u8 { panic!("a CMap the parser does not know") });
        assert!(r.is_err());
        assert!(
            !panic_is_contained(),
            "the mark is cleared after a panic too"
        );
    }
}
