//! HTML to Markdown: the page's main content through `dom_smoothie` (a port of Mozilla's
//! Readability) with its links kept and made absolute against the page's URL; when readability
//! finds no article (a index page, a form, a fragment), the whole page through `html2text`, whose
//! footnote links are made absolute the same way. Both parsers run in a confined child
//! (`confined`): a page nested deep enough to take them minutes ends at the time limit.

use dom_smoothie::{Config, Readability, ReadabilityError, TextMode};
use reqwest::Url;

use super::confined::{self, Bounds, Failure, Job};
use super::{DocumentError, contained};
use crate::harness::process::CancelToken;

/// Width `html2text` wraps at: wide, since the reader is a model, not a terminal.
const FALLBACK_WIDTH: usize = 200;

/// The limits HTML conversion runs under.
const HTML_BOUNDS: Bounds = Bounds {
    memory_bytes: 1 << 30,
    timeout: std::time::Duration::from_secs(30),
    max_output: 64 << 20,
};

/// Readable Markdown of `html`, links absolute when `base_url` is given, converted in a confined
/// child (1 GiB, 30 s) that `cancel` kills at once.
pub fn html_to_markdown(
    html: &str,
    base_url: Option<&str>,
    cancel: Option<&CancelToken>,
) -> Result<String, DocumentError> {
    if let Some(b) = base_url {
        Url::parse(b).map_err(|_| DocumentError::BadBaseUrl(b.to_string()))?;
    }
    let out = confined::run(
        Job::Html { base: base_url },
        html.as_bytes(),
        &HTML_BOUNDS,
        cancel,
    )
    .map_err(|f| match f {
        Failure::Cancelled => DocumentError::Cancelled,
        Failure::Failed(why) => DocumentError::Html(why),
    })?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// `html_to_markdown` in this process: only the confined child calls it.
pub(super) fn html_to_markdown_here(
    html: &str,
    base_url: Option<&str>,
) -> Result<String, DocumentError> {
    let base = match base_url {
        Some(b) => Some(Url::parse(b).map_err(|_| DocumentError::BadBaseUrl(b.to_string()))?),
        None => None,
    };
    // Both libraries are third-party parsers fed whatever a server sent: a panic in either is a
    // failed conversion, not a crash.
    let readable = contained(|| readable_markdown(html, base.as_ref()))
        .map_err(|_| DocumentError::Html("the readability parser panicked".into()))??;
    if let Some(md) = readable {
        return Ok(md);
    }
    contained(|| fallback_markdown(html, base.as_ref()))
        .map_err(|_| DocumentError::Html("the HTML-to-text converter panicked".into()))?
}

/// The article, or `None` when readability finds none worth the name.
fn readable_markdown(html: &str, base: Option<&Url>) -> Result<Option<String>, DocumentError> {
    let cfg = Config {
        text_mode: TextMode::Markdown,
        ..Config::default()
    };
    let mut r = match Readability::new(html, base.map(Url::as_str), Some(cfg)) {
        Ok(r) => r,
        Err(ReadabilityError::BadDocumentURL) => {
            let b = base.map(Url::to_string).unwrap_or_default();
            return Err(DocumentError::BadBaseUrl(b));
        }
        Err(e) => return Err(DocumentError::Html(e.to_string())),
    };
    let article = match r.parse() {
        Ok(a) => a,
        Err(ReadabilityError::GrabFailed) => return Ok(None),
        Err(e) => return Err(DocumentError::Html(e.to_string())),
    };
    let body = article.text_content.trim();
    if body.is_empty() {
        return Ok(None);
    }
    let title = article.title.trim();
    let mut out = String::new();
    // Readability keeps the title out of the body; a reader wants to know what page this is.
    if !title.is_empty() && !body.starts_with('#') {
        out.push_str("# ");
        out.push_str(title);
        out.push_str("\n\n");
    }
    out.push_str(body);
    out.push('\n');
    Ok(Some(out))
}

/// The whole page as text, with relative footnote links made absolute.
fn fallback_markdown(html: &str, base: Option<&Url>) -> Result<String, DocumentError> {
    let text = html2text::from_read(html.as_bytes(), FALLBACK_WIDTH)
        .map_err(|e| DocumentError::Html(e.to_string()))?;
    let Some(base) = base else {
        return Ok(text);
    };
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        out.push_str(&absolute_footnote(line, base));
        out.push('\n');
    }
    Ok(out)
}

/// `[3]: /path` (html2text's link footnote) with the target joined to `base`.
fn absolute_footnote(line: &str, base: &Url) -> String {
    let Some(rest) = line.strip_prefix('[') else {
        return line.to_string();
    };
    let Some((num, target)) = rest.split_once("]: ") else {
        return line.to_string();
    };
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
        return line.to_string();
    }
    match base.join(target.trim()) {
        Ok(u) => format!("[{num}]: {u}"),
        Err(_) => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ARTICLE: &str = r#"<!doctype html><html><head><title>Clause 4 explained</title></head>
<body><nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<article><h1>Clause 4 explained</h1>
<p>The anchorage length of a bar is governed by clause 4.2, which sets out how the basic
length is adjusted for bar shape, cover and confinement. Read the <a href="/codes/g.pdf">full
code</a> for the tables; this page only summarises what an engineer needs day to day.</p>
<p>Clause 4.3 covers laps. A lap splice must be at least as long as the anchorage length of the
smaller bar, and laps in adjacent bars should be staggered so that no more than half of them
fall in one section of the member.</p>
<p>Clause 4.4 deals with mechanical couplers, which need a test certificate and must develop the
full strength of the bar; they are inspected before the concrete is placed.</p></article>
<footer>Copyright and cookie notices that readability should drop.</footer></body></html>"#;

    #[test]
    fn main_content_as_markdown_with_absolute_links() {
        let md =
            html_to_markdown_here(ARTICLE, Some("https://codes.example/guide/c4.html")).unwrap();
        assert!(md.contains("Clause 4 explained"), "{md}");
        assert!(md.contains("anchorage length"), "{md}");
        assert!(md.contains("(https://codes.example/codes/g.pdf)"), "{md}");
        assert!(!md.contains("cookie notices"), "{md}");
        assert!(
            !md.contains("About"),
            "the navigation is not main content: {md}"
        );
    }

    #[test]
    fn a_page_with_no_article_falls_back_to_the_whole_text() {
        let html = r#"<html><body><ul><li><a href="a.html">A</a></li>
            <li><a href="/b">B</a></li></ul></body></html>"#;
        let md = html_to_markdown_here(html, Some("https://site.example/dir/")).unwrap();
        assert!(md.contains('A') && md.contains('B'), "{md}");
        assert!(md.contains("https://site.example/dir/a.html"), "{md}");
        assert!(md.contains("https://site.example/b"), "{md}");
    }

    #[test]
    fn a_relative_base_url_is_refused_with_the_fix() {
        let e = html_to_markdown_here(ARTICLE, Some("/guide/c4.html")).unwrap_err();
        assert!(matches!(e, DocumentError::BadBaseUrl(_)));
        assert!(e.to_string().contains("absolute URL"), "{e}");
    }

    #[test]
    fn without_a_base_links_stay_as_written() {
        let md = html_to_markdown_here(ARTICLE, None).unwrap();
        assert!(md.contains("/codes/g.pdf"), "{md}");
    }
}
