//! The web pair on the coding surface: no tool, but `spear-capability` host commands SpearHost
//! answers itself (never a shell), listed and usable exactly when the web is enabled, with a
//! save authorized as a write.

use serde_json::json;
use spear::harness::primitives::{ExecutionMode, ToolStatus};
use spear::tools::refusal::Gate;

use crate::pdf;
use crate::server::{Route, WebServer};
use crate::support::{Project, call, coding_turn, loopback_only, next_pages, no_approver};

fn terminal(
    p: &Project,
    web: bool,
    mode: ExecutionMode,
    command: &str,
) -> spear::tools::envelope::ToolResultEnvelope {
    let router = p.router(web, loopback_only());
    let mut turn = coding_turn(&router, mode, no_approver());
    assert!(!turn.view.offers("fetch_url") && !turn.view.offers("search_internet"));
    call(
        &router,
        &mut turn,
        "terminal",
        json!({ "command": command }),
    )
}

fn pdf_site() -> WebServer {
    let s = WebServer::start("127.0.0.1");
    s.route(
        "/doc.pdf",
        Route::Fixed(200, "application/pdf", pdf::numbered(30)),
    );
    s
}

#[test]
fn listed_exactly_when_the_web_is_enabled() {
    let p = Project::new();
    let on = terminal(&p, true, ExecutionMode::Safe, "spear-capability list");
    assert!(on.stdout.contains("fetch_url") && on.stdout.contains("search_internet"));
    assert!(
        on.stdout.contains("spear-capability run NAME"),
        "{}",
        on.stdout
    );
    let off = terminal(&p, false, ExecutionMode::Safe, "spear-capability list");
    assert!(!off.stdout.contains("fetch_url"), "{}", off.stdout);
    let d = terminal(
        &p,
        true,
        ExecutionMode::Safe,
        "spear-capability describe fetch_url",
    );
    assert!(
        d.stdout
            .contains("spear-capability run fetch_url URL [--pages A-B]"),
        "{}",
        d.stdout
    );
}

#[test]
fn fetch_url_runs_from_the_terminal_in_safe_without_a_shell() {
    let (p, s) = (Project::new(), pdf_site());
    let cmd = format!(
        "spear-capability run fetch_url {} --pages 13-24",
        s.url("/doc.pdf")
    );
    let env = terminal(&p, true, ExecutionMode::Safe, &cmd);
    assert_eq!(
        env.status,
        ToolStatus::Ok,
        "{:?} {}",
        env.reason,
        env.stdout
    );
    assert!(env.stdout.contains("pages 13-24 of 30") && env.stdout.contains("marker-13\n"));
    assert_eq!(next_pages(&env.stdout).as_deref(), Some("25-30"));
    assert_eq!(s.hits("/doc.pdf"), 1);
}

#[test]
fn without_the_web_the_capability_is_refused_and_nothing_is_fetched() {
    let (p, s) = (Project::new(), pdf_site());
    let cmd = format!("spear-capability run fetch_url {}", s.url("/doc.pdf"));
    let env = terminal(&p, false, ExecutionMode::Auto, &cmd);
    assert_eq!(env.status, ToolStatus::Denied);
    assert!(env.reason.unwrap().contains("enabled = true"));
    assert_eq!(s.hits("/doc.pdf"), 0);
}

#[test]
fn save_as_from_the_terminal_is_a_write() {
    let (p, s) = (Project::new(), pdf_site());
    let cmd = format!(
        "spear-capability run fetch_url {} --save-as docs/g.pdf",
        s.url("/doc.pdf")
    );
    let env = terminal(&p, true, ExecutionMode::Safe, &cmd);
    assert_eq!(env.status, ToolStatus::Denied, "{}", env.stdout);
    assert_eq!(env.gate, Some(Gate::Authorization));
    assert!(!p.project.join("docs/g.pdf").exists());
    assert_eq!(s.hits("/doc.pdf"), 0);

    let env = terminal(&p, true, ExecutionMode::Auto, &cmd);
    assert_eq!(env.status, ToolStatus::Ok, "{:?}", env.reason);
    assert_eq!(
        std::fs::read(p.project.join("docs/g.pdf")).unwrap(),
        pdf::numbered(30)
    );

    let cmd = format!(
        "spear-capability run fetch_url {} --save-as .git/config",
        s.url("/doc.pdf")
    );
    let env = terminal(&p, true, ExecutionMode::Auto, &cmd);
    assert_ne!(env.status, ToolStatus::Ok);
    assert_eq!(
        std::fs::read_to_string(p.project.join(".git/config")).unwrap(),
        "[core]\n"
    );
}

#[test]
fn shell_syntax_around_the_host_command_and_bad_arguments_are_refused() {
    let (p, s) = (Project::new(), pdf_site());
    for cmd in [
        format!("spear-capability run fetch_url {} | cat", s.url("/doc.pdf")),
        format!(
            "spear-capability run fetch_url {} > out.txt",
            s.url("/doc.pdf")
        ),
        "spear-capability run fetch_url".to_string(),
        format!(
            "spear-capability run fetch_url {} --pages",
            s.url("/doc.pdf")
        ),
        format!(
            "spear-capability run fetch_url {} --bogus 1",
            s.url("/doc.pdf")
        ),
        "spear-capability run search_internet --max-results 99 x".to_string(),
    ] {
        let env = terminal(&p, true, ExecutionMode::Auto, &cmd);
        assert_eq!(env.status, ToolStatus::Denied, "{cmd}: {}", env.stdout);
    }
    assert_eq!(s.hits("/doc.pdf"), 0);
}
