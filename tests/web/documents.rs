//! Document extraction through the public API, on PDFs this file generates.

use std::io::Read;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

use spear::tools::documents::{
    DocumentError, DocumentKind, PdfExtractor, PdfOptions, pdf_pages, pdf_pages_with,
};

use crate::pdf;

/// pdftotext must be here for the confined path to be tested at all.
fn require_pdftotext() {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join("pdftotext").is_file()))
        .unwrap_or(false);
    assert!(
        found,
        "pdftotext is not installed: install poppler-utils (`make` does: apt-get install \
         poppler-utils)"
    );
}

fn extract_only() -> PdfOptions {
    PdfOptions {
        use_pdftotext: false,
        ..PdfOptions::default()
    }
}

#[test]
fn a_generated_pdf_reads_page_by_page_through_confined_pdftotext() {
    crate::extractor::use_spear_binary();
    require_pdftotext();
    let bytes = pdf::text_pages(&["first page alpha", "second (page) beta", "third gamma"]);
    assert_eq!(
        DocumentKind::detect(None, None, &bytes),
        Some(DocumentKind::Pdf)
    );
    let t = pdf_pages_with(&bytes, &PdfOptions::default()).unwrap();
    assert_eq!(
        t.extractor,
        PdfExtractor::Pdftotext,
        "{:?}",
        t.pdftotext_skipped
    );
    assert_eq!(t.pages.len(), 3, "{:?}", t.pages);
    assert!(t.pages[0].contains("first page alpha"), "{:?}", t.pages);
    assert!(t.pages[1].contains("second (page) beta"), "{:?}", t.pages);
    assert!(t.pages[2].contains("third gamma"), "{:?}", t.pages);
    assert_eq!(pdf_pages(&bytes).unwrap(), t.pages);
}

#[test]
fn the_in_process_fallback_reads_the_same_pages() {
    crate::extractor::use_spear_binary();
    let bytes = pdf::numbered(5);
    let t = pdf_pages_with(&bytes, &extract_only()).unwrap();
    assert_eq!(t.extractor, PdfExtractor::PdfExtract);
    assert_eq!(t.pages.len(), 5);
    for (i, page) in t.pages.iter().enumerate() {
        assert!(page.contains(&format!("marker-{}", i + 1)), "{page:?}");
    }
}

#[test]
fn without_pdftotext_the_fallback_answers_and_says_why() {
    crate::extractor::use_spear_binary();
    let opts = PdfOptions {
        pdftotext: Some(PathBuf::from("/nonexistent/pdftotext")),
        ..PdfOptions::default()
    };
    let t = pdf_pages_with(&pdf::numbered(2), &opts).unwrap();
    assert_eq!(t.extractor, PdfExtractor::PdfExtract);
    assert!(t.pdftotext_skipped.unwrap().contains("does not exist"));
    assert!(t.pages[1].contains("marker-2"));
}

#[test]
fn a_scanned_pdf_is_refused_as_having_no_text_by_either_extractor() {
    crate::extractor::use_spear_binary();
    require_pdftotext();
    let bytes = pdf::scanned(3);
    for opts in [PdfOptions::default(), extract_only()] {
        let e = pdf_pages_with(&bytes, &opts).unwrap_err();
        assert!(matches!(e, DocumentError::NoText { pages: 3 }), "{e:?}");
        assert!(e.to_string().contains("no extractable text"), "{e}");
        assert!(e.to_string().contains("scanned images"), "{e}");
    }
    // Text on one page of three is a document with text.
    let mixed = pdf::build(&[
        pdf::Page::Image,
        pdf::Page::Text(vec!["only words".into()]),
        pdf::Page::Image,
    ]);
    let pages = pdf_pages(&mixed).unwrap();
    assert_eq!(pages.len(), 3);
    assert!(pages[0].trim().is_empty() && pages[1].contains("only words"));
}

/// A stand-in pdftotext that reports what the sandbox let it do, as two "pages".
fn fake_pdftotext(body: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pdftotext");
    std::fs::write(&path, format!("#!/bin/bash\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    (dir, path)
}

#[test]
fn pdftotext_runs_with_no_network_and_a_read_only_input() {
    crate::extractor::use_spear_binary();
    require_pdftotext();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!(
        "test -r input.pdf && echo READ || echo NOREAD\n\
         (echo x >> input.pdf) 2>/dev/null && echo INPUT_WRITTEN || echo INPUT_READ_ONLY\n\
         (echo x > sibling.txt) 2>/dev/null && echo DIR_WRITTEN || echo DIR_READ_ONLY\n\
         printf '\\f'\n\
         (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo NET || echo NONET\n\
         printf '\\f'"
    );
    let (_dir, program) = fake_pdftotext(&script);
    let opts = PdfOptions {
        pdftotext: Some(program),
        ..PdfOptions::default()
    };
    let t = pdf_pages_with(&pdf::numbered(1), &opts).unwrap();
    assert_eq!(
        t.extractor,
        PdfExtractor::Pdftotext,
        "{:?}",
        t.pdftotext_skipped
    );
    assert_eq!(t.pages.len(), 2, "{:?}", t.pages);
    // Positive control: the script ran and read its input.
    assert!(t.pages[0].contains("READ\n"), "{:?}", t.pages);
    assert!(t.pages[0].contains("INPUT_READ_ONLY"), "{:?}", t.pages);
    assert!(t.pages[0].contains("DIR_READ_ONLY"), "{:?}", t.pages);
    assert!(t.pages[1].contains("NONET"), "{:?}", t.pages);
    let mut buf = [0u8; 1];
    match listener.accept() {
        Ok((mut s, _)) => panic!("the sandbox reached the host: {:?}", s.read(&mut buf)),
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock),
    }
}

#[test]
fn a_pdftotext_that_hangs_is_killed_at_the_limit_and_the_fallback_answers() {
    crate::extractor::use_spear_binary();
    require_pdftotext();
    let (_dir, program) = fake_pdftotext("exec sleep 600");
    let opts = PdfOptions {
        pdftotext: Some(program),
        timeout: Duration::from_secs(2),
        ..PdfOptions::default()
    };
    let started = std::time::Instant::now();
    let t = pdf_pages_with(&pdf::numbered(2), &opts).unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(t.extractor, PdfExtractor::PdfExtract);
    let why = t.pdftotext_skipped.unwrap();
    assert!(why.contains("timeout"), "{why}");
}

#[test]
fn a_pdftotext_that_floods_is_cut_off_not_believed() {
    crate::extractor::use_spear_binary();
    require_pdftotext();
    let (_dir, program) = fake_pdftotext("exec yes 'flood line'");
    let opts = PdfOptions {
        pdftotext: Some(program),
        max_text_bytes: 64 << 10,
        timeout: Duration::from_secs(5),
        ..PdfOptions::default()
    };
    let t = pdf_pages_with(&pdf::numbered(2), &opts).unwrap();
    assert_eq!(t.extractor, PdfExtractor::PdfExtract);
    assert!(!t.pages.iter().any(|p| p.contains("flood")));
}
