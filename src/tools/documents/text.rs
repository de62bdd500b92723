//! Bytes to text in the encoding the document declares: a byte-order mark first, then the
//! content type's `charset`, then (for HTML) a `<meta charset>` in the first kilobyte, else
//! UTF-8. Undecodable bytes become U+FFFD; nothing fails.

use encoding_rs::{Encoding, UTF_8};

use super::DocumentKind;

/// `bytes` as text, decoded as declared.
pub fn decode_text(bytes: &[u8], content_type: Option<&str>, kind: DocumentKind) -> String {
    let declared = content_type
        .and_then(charset_param)
        .or_else(|| {
            (kind == DocumentKind::Html)
                .then(|| meta_charset(bytes))
                .flatten()
        })
        .and_then(|label| Encoding::for_label(label.as_bytes()))
        .unwrap_or(UTF_8);
    // `decode` lets a byte-order mark override the declaration, as browsers do.
    let (text, _, _) = declared.decode(bytes);
    text.into_owned()
}

/// `charset=...` of a content type.
fn charset_param(content_type: &str) -> Option<String> {
    content_type.split(';').skip(1).find_map(|p| {
        let (k, v) = p.split_once('=')?;
        (k.trim().eq_ignore_ascii_case("charset"))
            .then(|| v.trim().trim_matches(['"', '\'']).to_string())
    })
}

/// The charset a `<meta charset=X>` or `<meta http-equiv ... content="...; charset=X">` names in
/// the first 1024 bytes.
fn meta_charset(bytes: &[u8]) -> Option<String> {
    let head = String::from_utf8_lossy(&bytes[..bytes.len().min(1024)]).to_ascii_lowercase();
    let at = head.find("charset=")?;
    let rest = head[at + "charset=".len()..].trim_start_matches(['"', '\'']);
    let label: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))
        .collect();
    (!label.is_empty()).then_some(label)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_declared_encoding_is_used() {
        let latin1 = b"caf\xe9";
        assert_eq!(
            decode_text(
                latin1,
                Some("text/plain; charset=ISO-8859-1"),
                DocumentKind::PlainText
            ),
            "café"
        );
        let html =
            b"<html><head><meta charset=\"windows-1252\"></head><body>na\xefve</body></html>";
        assert!(decode_text(html, Some("text/html"), DocumentKind::Html).contains("naïve"));
        let equiv =
            b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=iso-8859-15\">\xa4";
        assert!(decode_text(equiv, None, DocumentKind::Html).ends_with('€'));
    }

    #[test]
    fn utf8_by_default_a_bom_wins_and_bad_bytes_are_replaced() {
        assert_eq!(
            decode_text("é".as_bytes(), None, DocumentKind::PlainText),
            "é"
        );
        let utf16 = [0xff, 0xfe, b'h', 0, b'i', 0];
        assert_eq!(
            decode_text(
                &utf16,
                Some("text/plain; charset=utf-8"),
                DocumentKind::PlainText
            ),
            "hi"
        );
        assert_eq!(
            decode_text(b"a\xffb", None, DocumentKind::Markdown),
            "a\u{fffd}b"
        );
        // A meta charset in a Markdown file is text, not a declaration.
        assert_eq!(
            decode_text(b"charset=latin1 \xc3\xa9", None, DocumentKind::Markdown),
            "charset=latin1 é"
        );
    }
}
