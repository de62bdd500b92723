//! Regressions for issue 20 ("unbounded parsers in Spear's own process"): a PDF decompression
//! bomb and a deeply nested HTML page, judged from outside (peak resident memory through
//! `getrusage`, wall time, exit status), plus a cancelled fetch that stops at once. The bounds
//! asserted are generous; the unbounded code exceeded each by far (a 2 MB bomb took Spear past
//! 4 GB; the nested page kept a fetch busy for about 30 minutes).

use std::io::Write;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;
use spear::harness::primitives::{ExecutionMode, ToolStatus};
use spear::tools::documents::{DocumentError, PdfOptions, pdf_pages_with};

use crate::server::{Route, WebServer};
use crate::support::{Project, loopback_only, no_approver, normative_turn};

const GIB: u64 = 1 << 30;

/// A one-page PDF whose content stream is `inflated` bytes of spaces, FlateDecode-compressed
/// (about 1,000 to 1): small on the wire, gigabytes once a parser inflates it whole.
fn pdf_bomb(inflated: u64) -> Vec<u8> {
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    let chunk = vec![b' '; 1 << 20];
    for _ in 0..inflated >> 20 {
        z.write_all(&chunk).unwrap();
    }
    let stream = z.finish().unwrap();
    let mut objects: Vec<Vec<u8>> = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << >> >>"
            .to_vec(),
    ];
    let mut content = format!(
        "<< /Length {} /Filter /FlateDecode >>\nstream\n",
        stream.len()
    )
    .into_bytes();
    content.extend_from_slice(&stream);
    content.extend_from_slice(b"\nendstream");
    objects.push(content);
    let mut pdf = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, o) in objects.iter().enumerate() {
        offsets.push(pdf.len());
        pdf.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        pdf.extend_from_slice(o);
        pdf.extend_from_slice(b"\nendobj\n");
    }
    let xref = pdf.len();
    let n = objects.len() + 1;
    pdf.extend_from_slice(format!("xref\n0 {n}\n0000000000 65535 f \n").as_bytes());
    for o in offsets {
        pdf.extend_from_slice(format!("{o:010} 00000 n \n").as_bytes());
    }
    pdf.extend_from_slice(
        format!("trailer\n<< /Size {n} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n").as_bytes(),
    );
    pdf
}

/// About 1.1 MB of `<div>`s nested inside each other, never closed.
fn nested_html() -> Vec<u8> {
    format!(
        "<html><body>{}deep text</body></html>",
        "<div>".repeat(220_000)
    )
    .into_bytes()
}

/// The largest resident set, in bytes, of this process (`RUSAGE_SELF`) or of any child it has
/// waited for (`RUSAGE_CHILDREN`).
fn peak_rss(who: libc::c_int) -> u64 {
    // SAFETY: getrusage writes one rusage struct into memory we own.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::getrusage(who, &mut u) }, 0);
    u.ru_maxrss as u64 * 1024
}

/// `spear standard add` of `bytes` saved as `name`, in a library of its own: exit code,
/// stderr, and how long it took.
fn standard_add(name: &str, bytes: &[u8]) -> (Option<i32>, String, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(name);
    std::fs::write(&file, bytes).unwrap();
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_spear"))
        .env("XDG_STATE_HOME", dir.path())
        .env("XDG_CONFIG_HOME", dir.path())
        .args(["standard", "add"])
        .arg(&file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code(), stderr, started.elapsed())
}

#[test]
fn regression_issue_20_a_pdf_bomb_ends_in_the_child_not_in_spear() {
    crate::extractor::use_spear_binary();
    let bomb = pdf_bomb(2 * GIB);
    assert!(bomb.len() < 3 << 20, "the bomb is small: {}", bomb.len());
    let opts = PdfOptions {
        use_pdftotext: false,
        ..PdfOptions::default()
    };
    let started = Instant::now();
    let e = pdf_pages_with(&bomb, &opts).unwrap_err();
    let took = started.elapsed();
    assert!(matches!(e, DocumentError::Unreadable(_)), "{e}");
    assert!(
        e.to_string().contains("1024 MiB of memory"),
        "the limit that ended it is named: {e}"
    );
    // Parsed in this process, the bomb would have taken it past 2 GiB.
    let own = peak_rss(libc::RUSAGE_SELF);
    assert!(own < GIB, "this process peaked at {own} bytes");
    let children = peak_rss(libc::RUSAGE_CHILDREN);
    assert!(
        children < GIB + (256 << 20),
        "a child peaked at {children} bytes"
    );
    assert!(took < Duration::from_secs(60), "took {took:?}");
}

#[test]
fn regression_issue_20_standard_add_of_a_pdf_bomb_refuses_within_bounds() {
    let (code, stderr, took) = standard_add("bomb.pdf", &pdf_bomb(2 * GIB));
    assert_eq!(code, Some(1), "a refusal, not a crash: {stderr}");
    assert!(stderr.contains("bomb.pdf is refused"), "{stderr}");
    let children = peak_rss(libc::RUSAGE_CHILDREN);
    assert!(
        children < GIB + (256 << 20),
        "spear or one of its children peaked at {children} bytes"
    );
    assert!(took < Duration::from_secs(240), "took {took:?}");
}

#[test]
fn regression_issue_20_standard_add_of_a_nested_page_stops_at_the_time_limit() {
    let (code, stderr, took) = standard_add("nested.html", &nested_html());
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("could not be extracted within") && stderr.contains("30 s"),
        "the limit is named: {stderr}"
    );
    // The limit is 30 s; the unbounded conversion ran for about 30 minutes.
    assert!(took < Duration::from_secs(120), "took {took:?}");
}

#[test]
fn regression_issue_20_a_cancelled_fetch_stops_converting_at_once() {
    let (p, s) = (Project::new(), WebServer::start("127.0.0.1"));
    s.route(
        "/nested.html",
        Route::Fixed(200, "text/html; charset=utf-8", nested_html()),
    );
    let router = p.router(true, loopback_only());
    let mut turn = normative_turn(&router, ExecutionMode::Safe, no_approver());
    let cancel = turn.cancel.clone();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(2));
        cancel.cancel();
    });
    let started = Instant::now();
    let c = spear::tools::router::ToolCall {
        id: "w1".into(),
        name: "fetch_url".into(),
        arguments: json!({ "url": s.url("/nested.html") }),
    };
    let env = router.call(&mut turn, &c).unwrap();
    let took = started.elapsed();
    canceller.join().unwrap();
    assert_eq!(env.status, ToolStatus::Cancelled, "{}", env.model_text());
    // Cancelled after 2 s; the conversion's own limit is 30 s.
    assert!(took < Duration::from_secs(15), "took {took:?}");
}

/// Issue 20: a root Spear's parser is not root. It runs as the sandbox's unprivileged uid, so
/// whatever a hostile document makes the parser do, it cannot touch root's files; an ordinary
/// user's parser keeps that user's uid. Seen from outside while the child works on a bomb.
#[test]
fn regression_issue_20_the_parser_child_never_runs_as_root() {
    crate::extractor::use_spear_binary();
    let me = std::process::id().to_string();
    let worker = std::thread::spawn(|| {
        let opts = PdfOptions {
            use_pdftotext: false,
            ..PdfOptions::default()
        };
        let _ = pdf_pages_with(&pdf_bomb(2 * GIB), &opts);
    });
    // The real, effective, saved and filesystem uids of our child serving `__extract`.
    let child_uids = || -> Option<Vec<u32>> {
        std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
            let dir = e.path();
            let cmdline = std::fs::read(dir.join("cmdline")).ok()?;
            if !cmdline.windows(9).any(|w| w == b"__extract") {
                return None;
            }
            let status = std::fs::read_to_string(dir.join("status")).ok()?;
            let field = |name: &str| {
                status
                    .lines()
                    .find_map(|l| l.strip_prefix(name))
                    .map(|v| v.split_whitespace().map(String::from).collect::<Vec<_>>())
            };
            (field("PPid:")?.first()? == &me)
                .then(|| field("Uid:"))
                .flatten()
                .map(|v| v.iter().filter_map(|u| u.parse().ok()).collect())
        })
    };
    let mut seen = None;
    while seen.is_none() && !worker.is_finished() {
        seen = child_uids();
        std::thread::sleep(Duration::from_millis(2));
    }
    worker.join().unwrap();
    let uids = seen.expect("the parser child was seen while it worked");
    let want = if rustix::process::geteuid().is_root() {
        spear::harness::sandbox::root_uid::choose_for_host()
            .unwrap()
            .uid
    } else {
        rustix::process::getuid().as_raw()
    };
    assert_eq!(uids, vec![want; 4], "the parser's uids");
}
