//! The confined child's side of an extraction (`spear __extract pdf|html`): the document on
//! stdin, the parser run here (this process is the child `confined` started, with its limits
//! already set), the result on stdout. Invariant: a parser's error or panic is a message on
//! stderr and exit code 2, never a partial result on stdout.

use std::io::{Read, Write};

use super::confined::PARSER_ERROR;

/// The child's side: read the document from stdin, run the parser here (this process is the
/// confined child), print the result on stdout. Returns the exit code: 0 with the result, 2
/// with the parser's error on stderr.
pub fn serve(kind: &str, base: Option<&str>) -> i32 {
    let mut input = Vec::new();
    if let Err(e) = std::io::stdin().lock().read_to_end(&mut input) {
        eprintln!("cannot read the document: {e}");
        return PARSER_ERROR;
    }
    let result: Result<Vec<u8>, String> = match kind {
        "pdf" => match super::contained(|| pdf_extract::extract_text_from_mem_by_pages(&input)) {
            Ok(Ok(pages)) => serde_json::to_vec(&pages).map_err(|e| e.to_string()),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err("the PDF parser panicked on this file".into()),
        },
        "html" => {
            let text = String::from_utf8_lossy(&input);
            super::html::html_to_markdown_here(&text, base)
                .map(String::into_bytes)
                .map_err(|e| match e {
                    super::DocumentError::Html(why) => why,
                    other => other.to_string(),
                })
        }
        other => Err(format!("`{other}` is not a document kind (pdf, html)")),
    };
    match result {
        Ok(bytes) => {
            let mut out = std::io::stdout().lock();
            match out.write_all(&bytes).and_then(|()| out.flush()) {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("cannot write the text: {e}");
                    PARSER_ERROR
                }
            }
        }
        Err(why) => {
            eprintln!("{why}");
            PARSER_ERROR
        }
    }
}
