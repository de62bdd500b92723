//! `DocumentKind`: what a body is, from its leading bytes, its content type and its file name,
//! in that order of trust: a server that labels a PDF `text/html` (or an error page
//! `application/pdf`) is believed less than the bytes it sent.

use std::path::Path;

/// The kinds of document Spear reads as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DocumentKind {
    Html,
    Markdown,
    Pdf,
    PlainText,
}

impl DocumentKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DocumentKind::Html => "html",
            DocumentKind::Markdown => "markdown",
            DocumentKind::Pdf => "pdf",
            DocumentKind::PlainText => "text",
        }
    }

    /// The kind of a body: its signature when it has one, else what `content_type` says, else
    /// what the extension of `name` (a path or a URL path) says, else plain text when the bytes
    /// are text. `None`: a binary body that is none of these (an image, an archive).
    pub fn detect(content_type: Option<&str>, name: Option<&str>, head: &[u8]) -> Option<Self> {
        if let Some(k) = Self::from_signature(head) {
            return Some(k);
        }
        let declared = content_type
            .and_then(Self::from_content_type)
            .or_else(|| name.and_then(Self::from_extension));
        match declared {
            // A label promising a PDF on bytes without its signature is not believed, and bytes
            // nothing labels are text only when they are UTF-8.
            Some(DocumentKind::Pdf) | None => looks_like_text(head).then_some(Self::PlainText),
            // A declared text may be in another encoding (`decode_text` reads it as declared).
            Some(k) => not_binary(head).then_some(k),
        }
    }

    /// What the bytes themselves say: `%PDF-` near the start, or an HTML document's opening.
    pub fn from_signature(head: &[u8]) -> Option<Self> {
        // Readers accept a PDF header anywhere in the first 1024 bytes.
        let window = &head[..head.len().min(1024)];
        if window.windows(5).any(|w| w == b"%PDF-") {
            return Some(DocumentKind::Pdf);
        }
        let text = String::from_utf8_lossy(&head[..head.len().min(512)]);
        let start = text
            .trim_start_matches('\u{feff}')
            .trim_start()
            .to_ascii_lowercase();
        let html = ["<!doctype html", "<html", "<head", "<body"]
            .iter()
            .any(|p| start.starts_with(p));
        html.then_some(DocumentKind::Html)
    }

    /// The kind a MIME type names (parameters such as `; charset=utf-8` ignored).
    pub fn from_content_type(content_type: &str) -> Option<Self> {
        let mime = content_type
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        match mime.as_str() {
            "application/pdf" | "application/x-pdf" => Some(DocumentKind::Pdf),
            "text/html" | "application/xhtml+xml" => Some(DocumentKind::Html),
            "text/markdown" | "text/x-markdown" => Some(DocumentKind::Markdown),
            "application/json"
            | "application/xml"
            | "application/x-yaml"
            | "application/toml"
            | "application/javascript" => Some(DocumentKind::PlainText),
            m if m.starts_with("text/") => Some(DocumentKind::PlainText),
            m if m.ends_with("+json") || m.ends_with("+xml") => Some(DocumentKind::PlainText),
            _ => None,
        }
    }

    /// The kind a file name's extension names (a query string or fragment ignored).
    pub fn from_extension(name: &str) -> Option<Self> {
        let path = name.split(['?', '#']).next().unwrap_or(name);
        let ext = Path::new(path).extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "pdf" => Some(DocumentKind::Pdf),
            "html" | "htm" | "xhtml" => Some(DocumentKind::Html),
            "md" | "markdown" | "mdown" | "mkd" => Some(DocumentKind::Markdown),
            "txt" | "text" | "rst" | "adoc" | "csv" | "json" | "toml" | "yaml" | "yml" | "xml" => {
                Some(DocumentKind::PlainText)
            }
            _ => None,
        }
    }
}

/// Text in some encoding: a UTF-16 byte-order mark (whose text holds NULs), or no NUL at all.
fn not_binary(head: &[u8]) -> bool {
    head.starts_with(&[0xff, 0xfe]) || head.starts_with(&[0xfe, 0xff]) || !head.contains(&0)
}

/// UTF-8 text, not binary: no NUL in the head, and valid UTF-8 apart from a character the head may
/// have cut in two at its end.
fn looks_like_text(head: &[u8]) -> bool {
    if head.contains(&0) {
        return false;
    }
    match std::str::from_utf8(head) {
        Ok(_) => true,
        Err(e) => e.error_len().is_none() && head.len() - e.valid_up_to() < 4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bytes_win_over_the_label() {
        let pdf = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj";
        assert_eq!(
            DocumentKind::detect(Some("text/html"), Some("x.html"), pdf),
            Some(DocumentKind::Pdf)
        );
        let page = b"  <!DOCTYPE html><html><body>404</body></html>";
        assert_eq!(
            DocumentKind::detect(Some("application/pdf"), Some("a.pdf"), page),
            Some(DocumentKind::Html)
        );
        // A PDF label on bytes that are neither a PDF nor HTML: text, if they are text.
        assert_eq!(
            DocumentKind::detect(Some("application/pdf"), None, b"Not found"),
            Some(DocumentKind::PlainText)
        );
    }

    #[test]
    fn content_type_then_extension_then_text() {
        let t = b"# Title\n\nbody";
        assert_eq!(
            DocumentKind::detect(Some("text/markdown; charset=utf-8"), None, t),
            Some(DocumentKind::Markdown)
        );
        assert_eq!(
            DocumentKind::detect(
                Some("application/octet-stream"),
                Some("/doc/README.md?x=1"),
                t
            ),
            Some(DocumentKind::Markdown)
        );
        assert_eq!(
            DocumentKind::detect(None, Some("notes.txt"), t),
            Some(DocumentKind::PlainText)
        );
        assert_eq!(
            DocumentKind::detect(Some("text/plain"), Some("x.md"), t),
            Some(DocumentKind::PlainText)
        );
        assert_eq!(
            DocumentKind::detect(None, None, "plain é".as_bytes()),
            Some(DocumentKind::PlainText)
        );
    }

    #[test]
    fn binary_bodies_are_no_document() {
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
        assert_eq!(DocumentKind::detect(Some("image/png"), None, png), None);
        assert_eq!(DocumentKind::detect(Some("text/plain"), None, png), None);
        assert_eq!(DocumentKind::detect(None, None, b"\xff\xfe\xfd text"), None);
    }

    #[test]
    fn declared_text_in_another_encoding_is_still_text() {
        let latin1 = b"<p>caf\xe9</p>";
        assert_eq!(
            DocumentKind::detect(Some("text/html; charset=iso-8859-1"), None, latin1),
            Some(DocumentKind::Html)
        );
        assert_eq!(
            DocumentKind::detect(None, Some("a.txt"), b"caf\xe9"),
            Some(DocumentKind::PlainText)
        );
        let utf16 = [0xff, 0xfe, b'h', 0, b'i', 0];
        assert_eq!(
            DocumentKind::detect(Some("text/plain"), None, &utf16),
            Some(DocumentKind::PlainText)
        );
        // Undeclared, the same bytes are not taken for text.
        assert_eq!(DocumentKind::detect(None, None, b"caf\xe9 \xff"), None);
    }

    #[test]
    fn a_character_cut_at_the_end_of_the_head_is_still_text() {
        let mut head = "abc".as_bytes().to_vec();
        head.extend_from_slice(&"語".as_bytes()[..2]);
        assert_eq!(
            DocumentKind::detect(None, None, &head),
            Some(DocumentKind::PlainText)
        );
    }
}
