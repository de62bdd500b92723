//! `fetch_url` through the router against the loopback server: HTML, Markdown, PDFs in slices,
//! redirects (followed, refused at a private hop, looping), an endless body, a slow body, a 404,
//! and `save_as` under every mode and the target policy.

use std::time::{Duration, Instant};

use serde_json::json;
use spear::harness::command_policy::ApprovalDecision;
use spear::harness::primitives::{ExecutionMode, ToolStatus};
use spear::tools::host::web::{AddressPolicy, WebSettings};
use spear::tools::refusal::Gate;

use crate::pdf;
use crate::server::{Route, WebServer};
use crate::support::{
    Project, ScriptedApprover, call, loopback_only, next_pages, no_approver, normative_turn,
};

const ARTICLE: &str = r#"<!doctype html><html><head><title>Anchorage guide</title></head><body>
<nav><a href="/">Home</a></nav><article><h1>Anchorage guide</h1>
<p>The anchorage length of a reinforcing bar is set by clause 4.2 of the code, adjusted for the
bar's shape, the concrete cover and any transverse confinement. See the <a href="/doc.pdf">full
code</a> for the tables, which this page does not reproduce in full.</p>
<p>Laps are covered by clause 4.3: a lap must be at least as long as the anchorage length of the
smaller bar, and no more than half of the bars may be lapped in one section of a member.</p>
</article></body></html>"#;

fn site() -> WebServer {
    let s = WebServer::start("127.0.0.1");
    s.route(
        "/page.html",
        Route::Fixed(200, "text/html; charset=utf-8", ARTICLE.into()),
    )
    .route(
        "/notes.md",
        Route::Fixed(200, "text/markdown", b"# Notes\n\n- one *two*\n".to_vec()),
    )
    .route(
        "/doc.pdf",
        Route::Fixed(200, "application/pdf", pdf::numbered(60)),
    )
    .route(
        "/scan.pdf",
        Route::Fixed(200, "application/pdf", pdf::scanned(2)),
    )
    .route("/go", Route::Redirect(302, "/page.html".into()))
    .route("/loop", Route::Redirect(301, "/loop".into()))
    .route("/endless", Route::Endless)
    .route("/slow", Route::Slow(Duration::from_millis(500)));
    s
}

fn read(
    project: &Project,
    router_settings: WebSettings,
    url: &str,
) -> spear::tools::envelope::ToolResultEnvelope {
    let router = project.router(true, router_settings);
    let mut turn = normative_turn(&router, ExecutionMode::Safe, no_approver());
    call(&router, &mut turn, "fetch_url", json!({ "url": url }))
}

#[test]
fn html_comes_back_as_markdown_with_absolute_links_in_safe_mode() {
    let (p, s) = (Project::new(), site());
    let env = read(&p, loopback_only(), &s.url("/page.html"));
    assert_eq!(env.status, ToolStatus::Ok, "{:?}", env.reason);
    assert!(env.stdout.contains("HTML as Markdown"), "{}", env.stdout);
    assert!(env.stdout.contains("clause 4.2"), "{}", env.stdout);
    assert!(
        env.stdout.contains(&format!("({})", s.url("/doc.pdf"))),
        "{}",
        env.stdout
    );
    assert!(!env.stdout.contains("<p>"), "{}", env.stdout);
}

#[test]
fn markdown_is_returned_as_is() {
    let (p, s) = (Project::new(), site());
    let env = read(&p, loopback_only(), &s.url("/notes.md"));
    assert_eq!(env.status, ToolStatus::Ok, "{:?}", env.reason);
    assert!(
        env.stdout.contains("# Notes\n\n- one *two*\n"),
        "{}",
        env.stdout
    );
}

#[test]
fn a_redirect_inside_what_is_allowed_is_followed() {
    let (p, s) = (Project::new(), site());
    let env = read(&p, loopback_only(), &s.url("/go"));
    assert_eq!(env.status, ToolStatus::Ok, "{:?}", env.reason);
    assert!(env.stdout.contains("after 1 redirect"), "{}", env.stdout);
    assert!(env.stdout.contains("Anchorage guide"));
    assert_eq!((s.hits("/go"), s.hits("/page.html")), (1, 1));
}

#[test]
fn a_redirect_to_another_private_address_is_refused_at_that_hop() {
    let (p, s) = (Project::new(), site());
    // A real server on another loopback address, holding something the fetch must not read.
    let inner = WebServer::start("127.0.0.2");
    inner.route(
        "/secret",
        Route::Fixed(200, "text/plain", b"internal-secret".to_vec()),
    );
    s.route("/to-private", Route::Redirect(302, inner.url("/secret")));
    // Positive control: with that address allowed the secret is reachable, so a refusal below
    // is the policy's and not a dead address.
    let wide = WebSettings {
        addresses: AddressPolicy {
            allow_private: false,
            allow: vec!["127.0.0.0/8".parse().unwrap()],
        },
        ..loopback_only()
    };
    let env = read(&p, wide, &s.url("/to-private"));
    assert!(
        env.stdout.contains("internal-secret"),
        "{:?} {}",
        env.reason,
        env.stdout
    );
    assert_eq!(inner.hits("/secret"), 1);

    let env = read(&p, loopback_only(), &s.url("/to-private"));
    assert_eq!(env.status, ToolStatus::Denied, "{}", env.stdout);
    let why = env.reason.unwrap();
    assert!(
        why.contains("127.0.0.2") && why.contains("redirected from"),
        "{why}"
    );
    assert!(
        why.contains("loopback") && why.contains("allow_private_addresses"),
        "{why}"
    );
    // The first hop was asked (it is allowed); the redirect's target never was.
    assert_eq!(s.hits("/to-private"), 2);
    assert_eq!(
        inner.hits("/secret"),
        1,
        "the refused hop must not be requested"
    );
    assert!(!env.stdout.contains("internal-secret"));
}

#[test]
fn a_redirect_to_the_metadata_address_is_refused_without_connecting() {
    let (p, s) = (Project::new(), site());
    s.route(
        "/to-metadata",
        Route::Redirect(307, "http://169.254.169.254/latest/meta-data/".into()),
    );
    let started = Instant::now();
    let env = read(&p, loopback_only(), &s.url("/to-metadata"));
    assert_eq!(env.status, ToolStatus::Denied);
    let why = env.reason.unwrap();
    assert!(
        why.contains("169.254.169.254") && why.contains("metadata"),
        "{why}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "refused before any connect attempt"
    );
}

#[test]
fn by_default_even_the_first_hop_to_loopback_is_refused() {
    let (p, s) = (Project::new(), site());
    let mut settings = loopback_only();
    settings.addresses = AddressPolicy::default();
    let env = read(&p, settings, &s.url("/page.html"));
    assert_eq!(env.status, ToolStatus::Denied);
    assert!(env.reason.unwrap().contains("127.0.0.1"));
    assert_eq!(s.hits("/page.html"), 0);
    // And with private addresses allowed by the switch, it is read.
    let mut settings = loopback_only();
    settings.addresses = AddressPolicy {
        allow_private: true,
        allow: Vec::new(),
    };
    assert_eq!(
        read(&p, settings, &s.url("/page.html")).status,
        ToolStatus::Ok
    );
}

#[test]
fn redirects_are_bounded() {
    let (p, s) = (Project::new(), site());
    let env = read(&p, loopback_only(), &s.url("/loop"));
    assert_eq!(env.status, ToolStatus::Failed);
    assert!(env.reason.unwrap().contains("redirected more than 5 times"));
    assert_eq!(s.hits("/loop"), 6);
}

#[test]
fn an_endless_body_is_cut_off_at_the_size_limit() {
    let (p, s) = (Project::new(), site());
    let started = Instant::now();
    let env = read(&p, loopback_only(), &s.url("/endless"));
    assert_eq!(env.status, ToolStatus::Failed);
    assert!(env.reason.unwrap().contains("more than 4194304 bytes"));
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[test]
fn a_slow_body_ends_at_the_time_limit() {
    let (p, s) = (Project::new(), site());
    let started = Instant::now();
    let env = read(&p, loopback_only(), &s.url("/slow"));
    let took = started.elapsed();
    assert_eq!(env.status, ToolStatus::Timeout, "{:?}", env.reason);
    assert!(env.reason.unwrap().contains("did not finish within 3 s"));
    assert!(
        took >= Duration::from_secs(3) && took < Duration::from_secs(6),
        "{took:?}"
    );
}

#[test]
fn a_404_is_not_found() {
    let (p, s) = (Project::new(), site());
    let env = read(&p, loopback_only(), &s.url("/missing"));
    assert_eq!(env.status, ToolStatus::NotFound);
    assert!(env.reason.unwrap().contains("HTTP 404"));
}

#[test]
fn a_60_page_pdf_is_read_in_slices_each_naming_the_next_and_the_last_none() {
    let (p, s) = (Project::new(), site());
    let router = p.router(true, loopback_only());
    let mut turn = normative_turn(&router, ExecutionMode::Safe, no_approver());
    let url = s.url("/doc.pdf");
    let mut pages: Option<String> = None;
    let mut seen = Vec::new();
    for _ in 0..10 {
        let mut args = json!({ "url": url });
        if let Some(range) = &pages {
            args["pages"] = json!(range);
        }
        let env = call(&router, &mut turn, "fetch_url", args);
        assert_eq!(env.status, ToolStatus::Ok, "{:?}", env.reason);
        assert!(!env.truncated, "a slice is seen whole");
        assert!(env.stdout.contains("PDF of 60 pages"), "{}", env.stdout);
        let first = pages
            .as_ref()
            .map_or(1, |r| r.split('-').next().unwrap().parse().unwrap());
        seen.push(first);
        assert!(
            env.stdout.contains(&format!("marker-{first}\n")),
            "{}",
            env.stdout
        );
        pages = next_pages(&env.stdout);
        match &pages {
            Some(next) => {
                let n: usize = next.split('-').next().unwrap().parse().unwrap();
                assert!(
                    !env.stdout.contains(&format!("marker-{n}\n")),
                    "slices do not overlap"
                );
            }
            None => {
                assert!(env.stdout.contains("marker-60\n"));
                assert!(
                    env.stdout
                        .contains("this slice ends the document (page 60 of 60)")
                );
                break;
            }
        }
    }
    assert_eq!(seen, vec![1, 13, 25, 37, 49]);
    assert_eq!(
        s.hits("/doc.pdf"),
        1,
        "later slices come from the extracted copy"
    );
}

#[test]
fn pages_selects_a_range_and_is_refused_on_what_is_not_a_pdf() {
    let (p, s) = (Project::new(), site());
    let router = p.router(true, loopback_only());
    let mut turn = normative_turn(&router, ExecutionMode::Safe, no_approver());
    let env = call(
        &router,
        &mut turn,
        "fetch_url",
        json!({"url": s.url("/doc.pdf"), "pages": "58-"}),
    );
    assert!(env.stdout.contains("pages 58-60 of 60"), "{}", env.stdout);
    assert_eq!(next_pages(&env.stdout), None);
    let env = call(
        &router,
        &mut turn,
        "fetch_url",
        json!({"url": s.url("/doc.pdf"), "pages": "5"}),
    );
    assert!(env.stdout.contains("marker-5\n") && !env.stdout.contains("marker-6\n"));
    assert_eq!(next_pages(&env.stdout).as_deref(), Some("6-17"));
    let env = call(
        &router,
        &mut turn,
        "fetch_url",
        json!({"url": s.url("/doc.pdf"), "pages": "x"}),
    );
    assert_eq!(env.gate, Some(Gate::Schema));
    assert!(env.reason.unwrap().contains("13-24"));
    let env = call(
        &router,
        &mut turn,
        "fetch_url",
        json!({"url": s.url("/page.html"), "pages": "1-2"}),
    );
    assert_eq!(env.status, ToolStatus::Failed);
    assert!(env.reason.unwrap().contains("selects pages of a PDF"));
}

#[test]
fn a_scanned_pdf_says_it_has_no_text() {
    let (p, s) = (Project::new(), site());
    let env = read(&p, loopback_only(), &s.url("/scan.pdf"));
    assert_eq!(env.status, ToolStatus::Failed);
    assert!(env.reason.unwrap().contains("no extractable text"));
}

#[test]
fn save_as_is_refused_in_safe_before_anything_is_fetched() {
    let (p, s) = (Project::new(), site());
    let router = p.router(true, loopback_only());
    let mut turn = normative_turn(&router, ExecutionMode::Safe, no_approver());
    let env = call(
        &router,
        &mut turn,
        "fetch_url",
        json!({"url": s.url("/doc.pdf"), "save_as": "docs/code.pdf"}),
    );
    assert_eq!(env.status, ToolStatus::Denied);
    assert_eq!(env.gate, Some(Gate::Authorization));
    assert!(!p.project.join("docs/code.pdf").exists());
    assert_eq!(s.hits("/doc.pdf"), 0);
    assert!(
        p.audit().iter().any(|r| r.tool == "fetch_url"),
        "the refusal is audited"
    );
}

#[test]
fn save_as_asks_in_ask_mode_and_a_no_writes_nothing() {
    let (p, s) = (Project::new(), site());
    let router = p.router(true, loopback_only());
    let no = ScriptedApprover::new(ApprovalDecision::Deny(None));
    let mut turn = normative_turn(&router, ExecutionMode::Ask, no.clone());
    let env = call(
        &router,
        &mut turn,
        "fetch_url",
        json!({"url": s.url("/doc.pdf"), "save_as": "code.pdf"}),
    );
    assert_eq!(env.status, ToolStatus::Denied);
    assert_eq!(env.gate, Some(Gate::Approval));
    let asked = no.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].writes, vec!["code.pdf".to_string()]);
    assert!(
        asked[0].command.contains(&s.url("/doc.pdf")),
        "the URL is shown: {:?}",
        asked[0]
    );
    assert!(asked[0].reasons[0].contains("saves what"), "{:?}", asked[0]);
    assert!(!p.project.join("code.pdf").exists());
    assert_eq!(s.hits("/doc.pdf"), 0);

    let yes = ScriptedApprover::new(ApprovalDecision::Approve);
    let mut turn = normative_turn(&router, ExecutionMode::Ask, yes.clone());
    let env = call(
        &router,
        &mut turn,
        "fetch_url",
        json!({"url": s.url("/doc.pdf"), "save_as": "code.pdf"}),
    );
    assert_eq!(env.status, ToolStatus::Ok, "{:?}", env.reason);
    assert_eq!(yes.asked.lock().unwrap().len(), 1);
    assert_eq!(
        std::fs::read(p.project.join("code.pdf")).unwrap(),
        pdf::numbered(60)
    );
}

#[test]
fn save_as_in_auto_writes_the_body_atomically_and_the_target_policy_applies() {
    let (p, s) = (Project::new(), site());
    let router = p.router(true, loopback_only());
    let mut turn = normative_turn(&router, ExecutionMode::Auto, no_approver());
    std::fs::write(p.project.join("old.pdf"), b"previous").unwrap();
    let env = call(
        &router,
        &mut turn,
        "fetch_url",
        json!({"url": s.url("/doc.pdf"), "save_as": "old.pdf"}),
    );
    assert_eq!(env.status, ToolStatus::Ok, "{:?}", env.reason);
    assert!(
        env.stdout.starts_with("saved: wrote `old.pdf`"),
        "{}",
        env.stdout
    );
    assert!(
        env.stdout.contains("pages 1-12 of 60"),
        "the save also reads it"
    );
    assert_eq!(env.changed_paths, vec!["old.pdf".to_string()]);
    assert_eq!(
        std::fs::read(p.project.join("old.pdf")).unwrap(),
        pdf::numbered(60)
    );
    // Atomic: no temporary file is left beside it.
    let names: Vec<String> = std::fs::read_dir(&p.project)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names.iter().filter(|n| n.contains("old.pdf")).count(),
        1,
        "{names:?}"
    );
    let record = p
        .audit()
        .into_iter()
        .find(|r| r.tool == "fetch_url")
        .expect("the save is audited");
    assert_eq!(record.changed, vec!["old.pdf".to_string()]);

    for target in [".git/config", "../outside.pdf", "generated/code.pdf"] {
        let before = s.hits("/doc.pdf");
        let env = call(
            &router,
            &mut turn,
            "fetch_url",
            json!({"url": s.url("/doc.pdf"), "save_as": target}),
        );
        assert_ne!(env.status, ToolStatus::Ok, "{target}");
        assert!(
            matches!(env.gate, Some(Gate::Workspace | Gate::TargetPolicy)),
            "{target}: {:?} {:?}",
            env.gate,
            env.reason
        );
        assert_eq!(
            s.hits("/doc.pdf"),
            before,
            "{target}: refused before fetching"
        );
    }
    assert_eq!(
        std::fs::read_to_string(p.project.join(".git/config")).unwrap(),
        "[core]\n"
    );
}

#[test]
fn a_name_is_resolved_once_and_only_its_allowed_addresses_are_used() {
    let (p, s) = (Project::new(), site());
    // `localhost` resolves to 127.0.0.1 (allowed) and usually ::1 (not): the fetch goes to the
    // allowed address, by name, through the pinned resolution.
    let port = s.origin.rsplit(':').next().unwrap();
    let env = read(
        &p,
        loopback_only(),
        &format!("http://localhost:{port}/notes.md"),
    );
    assert_eq!(env.status, ToolStatus::Ok, "{:?}", env.reason);
    assert!(
        env.stdout
            .starts_with(&format!("http://localhost:{port}/notes.md"))
    );
    assert_eq!(s.hits("/notes.md"), 1);
}

#[test]
fn a_redirect_off_http_is_refused() {
    let (p, s) = (Project::new(), site());
    s.route(
        "/to-file",
        Route::Redirect(302, "file:///etc/passwd".into()),
    );
    let env = read(&p, loopback_only(), &s.url("/to-file"));
    assert_eq!(env.status, ToolStatus::Denied);
    assert!(env.reason.unwrap().contains("only http and https"));
    let env = read(&p, loopback_only(), "ftp://127.0.0.1/x");
    assert_eq!(env.status, ToolStatus::Denied);
    let env = read(&p, loopback_only(), "not a url");
    assert_eq!(env.status, ToolStatus::Failed);
    assert!(env.reason.unwrap().contains("is not a URL"));
}

#[test]
fn text_in_its_declared_encoding_is_decoded() {
    let (p, s) = (Project::new(), site());
    let mut latin1 = b"<html><body><article><h1>Men\xfa</h1><p>".to_vec();
    latin1.extend_from_slice(&b"Caf\xe9 cr\xe8me, served all day in the r\xe9sidence. ".repeat(8));
    latin1.extend_from_slice(b"</p></article></body></html>");
    s.route(
        "/latin1.html",
        Route::Fixed(200, "text/html; charset=iso-8859-1", latin1),
    );
    s.route(
        "/latin1.txt",
        Route::Fixed(200, "text/plain; charset=iso-8859-1", b"na\xefve".to_vec()),
    );
    let env = read(&p, loopback_only(), &s.url("/latin1.html"));
    assert_eq!(env.status, ToolStatus::Ok, "{:?}", env.reason);
    assert!(
        env.stdout.contains("Café crème") && env.stdout.contains("Menú"),
        "{}",
        env.stdout
    );
    let env = read(&p, loopback_only(), &s.url("/latin1.txt"));
    assert!(env.stdout.ends_with("naïve"), "{}", env.stdout);
}

#[test]
fn a_purely_normative_turn_reads_but_may_not_save() {
    let (p, s) = (Project::new(), site());
    let router = p.router(true, loopback_only());
    let settings = spear::tools::exposure::ExposureSettings {
        standard_engaged: true,
        web_enabled: true,
        purely_normative: true,
    };
    let view = spear::tools::exposure::ToolExposurePolicy::view(router.registry(), &settings);
    assert!(view.offers("fetch_url") && !view.working_tree);
    let mut turn = spear::tools::router::turn::Turn::new(ExecutionMode::Auto, view, no_approver());
    let env = call(
        &router,
        &mut turn,
        "fetch_url",
        json!({"url": s.url("/notes.md")}),
    );
    assert_eq!(env.status, ToolStatus::Ok, "{:?}", env.reason);
    let env = call(
        &router,
        &mut turn,
        "fetch_url",
        json!({"url": s.url("/notes.md"), "save_as": "n.md"}),
    );
    assert_eq!(env.status, ToolStatus::Denied);
    assert_eq!(env.gate, Some(Gate::RequestScope));
    let reason = env.reason.unwrap();
    assert!(
        reason.contains("asks only what the standard requires") && reason.contains("n.md"),
        "{reason}"
    );
    assert!(!p.project.join("n.md").exists());
    assert_eq!(s.hits("/notes.md"), 1, "the refused save fetched nothing");
}
